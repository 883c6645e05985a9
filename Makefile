# The two commands of the README, and the GPU checks. Every target installs
# what it needs first (scripts/setup is idempotent and quick when done).

.PHONY: setup demo test test-cpp test-python fuzz gpu-test gpu-test-slangpy bench bench-record bench-compile clean

# Without a system CUDA toolkit, the tests use CUDA's compilers from NVIDIA's
# wheels, which scripts/setup installs into the virtualenv (evaluated when a
# recipe runs, after setup).
ifeq ($(wildcard $(or $(CUDA_HOME),/usr/local/cuda)/bin/ptxas),)
export CUDA_HOME = $(shell .venv/bin/python -c "import spreplay._tool as t; print(t.pypi_cuda() or '')" 2>/dev/null)
endif

setup:
	@scripts/setup

demo: setup
	@scripts/demo

test: setup test-cpp test-python fuzz

test-cpp test-python fuzz: setup

test-cpp:
	@ctest --test-dir build --output-on-failure -j 2

test-python:
	@.venv/bin/python -m pytest -q tests/python

fuzz:
	@PYTHON=$(CURDIR)/.venv/bin/python tests/fuzz/run-fuzzers 10

# Needs a CUDA GPU.
gpu-test: setup
	@.venv/bin/python tests/gpu/injection_proof.py
	@.venv/bin/python tests/gpu/e2e_samples.py --out build/gpu-test
	@.venv/bin/python tests/gpu/hardening.py --out build/gpu-test/hardening

# Needs a CUDA GPU and pytest-xdist. slangpy's own CUDA test suite (in its
# wheel): stock while recording, compiled elsewhere, served, served strict with
# the driver's JIT off. Writes build/gpu-test-slangpy/suite.md and suite.json;
# commit them under bench/results/. SUITE_ARGS go to tests/gpu/slangpy_suite.py,
# e.g. SUITE_ARGS="--archive kernels.sprk --steps served,strict".
SUITE_ARGS ?=
gpu-test-slangpy: setup
	@.venv/bin/python -c "import xdist" 2>/dev/null || .venv/bin/python -m pip install -q pytest-xdist
	@.venv/bin/python tests/gpu/slangpy_suite.py --out build/gpu-test-slangpy $(SUITE_ARGS)

# Needs a CUDA GPU. Cold start of every workload, stock (cold and with its
# caches) against spreplay, per phase; slangtorch too where it is installed;
# then where device creation goes. Writes build/bench/cold_start.json,
# cold-start.md, cold-start.png and device_creation.json; commit them under
# bench/results/ and docs/.
# The report is rendered from whatever was measured, also when a run failed;
# the exit status is the benchmark's. Without matplotlib there is no plot.
# BENCH_ARGS go to bench/cold_start.py, e.g. BENCH_ARGS="--workloads synthetic --rounds 5".
BENCH_ARGS ?=
bench: setup
	@.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install -q matplotlib || true
	@status=0; .venv/bin/python bench/cold_start.py --out build/bench --slangtorch $(BENCH_ARGS) || status=$$?; \
	  .venv/bin/python bench/device_creation.py --out build/bench || status=$$?; \
	  .venv/bin/python bench/render_report.py build/bench/cold_start.json \
	    --markdown build/bench/cold-start.md --plot build/bench/cold-start.png && exit $$status

# Needs a CUDA GPU. Re-records the samples (the traces are the H200 fixtures).
bench-record: setup
	@.venv/bin/python bench/record_overhead.py --out build/bench

# No GPU needed: `spreplay compile` on the committed H200 traces.
bench-compile: setup
	@.venv/bin/python bench/compile_bench.py --out build/bench

clean:
	rm -rf build
