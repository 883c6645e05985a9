# The two commands of the README, and the GPU checks. Every target installs
# what it needs first (scripts/setup is idempotent and quick when done).

.PHONY: setup demo test test-cpp test-python fuzz gpu-test bench clean

# Without a system CUDA toolkit, scripts/setup installs CUDA's compilers from
# PyPI into the virtualenv; the tests and the tool find them through CUDA_HOME.
ifeq ($(wildcard $(or $(CUDA_HOME),/usr/local/cuda)/bin/ptxas),)
export CUDA_HOME := $(CURDIR)/.venv/cuda
endif

setup:
	@scripts/setup

demo: setup
	@scripts/demo

test: setup test-cpp test-python fuzz

test-cpp:
	@ctest --test-dir build --output-on-failure -j 2

test-python:
	@.venv/bin/python -m pytest -q tests/python

fuzz:
	@tests/fuzz/run-fuzzers 10

# Needs a CUDA GPU.
gpu-test: setup
	@.venv/bin/python tests/gpu/injection_proof.py
	@.venv/bin/python tests/gpu/e2e_samples.py --out build/gpu-test

# Needs a CUDA GPU. Results go to build/bench; commit them under bench/results/.
bench: setup
	@.venv/bin/python bench/record_overhead.py --out build/bench
	@.venv/bin/python bench/compile_bench.py --out build/bench

clean:
	rm -rf build
