# The two commands of the README, and the GPU checks. Every target installs
# what it needs first (scripts/setup is idempotent and quick when done).

.PHONY: setup demo test test-cpp test-python test-slangpy-releases fuzz tsan release release-check gpu-test gpu-test-injection gpu-test-samples gpu-test-hardening gpu-test-multi gpu-test-slangpy bench bench-record bench-compile clean

# Without a system CUDA toolkit, the tests use CUDA's compilers from NVIDIA's
# wheels, which scripts/setup installs into the virtualenv (evaluated when a
# recipe runs, after setup).
ifeq ($(wildcard $(or $(CUDA_HOME),/usr/local/cuda)/bin/ptxas),)
export CUDA_HOME = $(shell $(PYTHON) -c "import spreplay._tool as t; print(t.pypi_cuda() or '')" 2>/dev/null)
endif

# PYTHON: the interpreter the GPU targets run with. By default scripts/setup's
# virtualenv, which they set up first; any other is used as it is, e.g. on a
# GPU machine without a package registry that installed the release wheels
# (tools/stage-device-bundle): make gpu-test PYTHON=python3.
PYTHON ?= .venv/bin/python
GPU_SETUP := $(if $(filter .venv/bin/python,$(PYTHON)),setup)

setup:
	@scripts/setup

demo: setup
	@scripts/demo

test: setup test-cpp test-python test-slangpy-releases fuzz

test-cpp test-python test-slangpy-releases fuzz: setup

test-cpp:
	@ctest --test-dir build --output-on-failure -j 2

test-python:
	@.venv/bin/python -m pytest -q tests/python

# The release-dependent CPU tests once more under every other slangpy release
# supported_builds.json lists, each in build/venvs/slangpy-VERSION.
test-slangpy-releases:
	@scripts/test-slangpy-releases

fuzz:
	@PYTHON=$(CURDIR)/.venv/bin/python tests/fuzz/run-fuzzers 10

# The tests that share state between threads, built with ThreadSanitizer in
# build/tsan (tests/cpp/run-tsan). CI runs it after `make test`.
tsan: setup
	@PYTHON=$(CURDIR)/.venv/bin/python tests/cpp/run-tsan

# dist/: the manylinux_2_34 wheel and the sdist (scripts/build-release).
release: setup
	@scripts/build-release

# The release wheel installed on a bare Debian 12 image and used there: record,
# compile, inspect, the CPU tests (tests/release/). Needs root.
release-check: release
	@tests/release/bare-image-check

# Needs a CUDA GPU. The four parts also run one by one.
gpu-test: gpu-test-injection gpu-test-samples gpu-test-hardening gpu-test-multi

gpu-test-injection: $(GPU_SETUP)
	@$(PYTHON) tests/gpu/injection_proof.py

gpu-test-samples: $(GPU_SETUP)
	@$(PYTHON) tests/gpu/e2e_samples.py --out build/gpu-test

gpu-test-hardening: $(GPU_SETUP)
	@$(PYTHON) tests/gpu/hardening.py --out build/gpu-test/hardening

# Needs 2 or more CUDA GPUs and PyTorch (says so and passes with fewer).
gpu-test-multi: $(GPU_SETUP)
	@$(PYTHON) tests/gpu/multi_gpu.py --out build/gpu-test/multi-gpu

# Needs a CUDA GPU and pytest-xdist. slangpy's own CUDA test suite (in its
# wheel): stock while recording, compiled elsewhere, served, served strict with
# the driver's JIT off. Writes build/gpu-test-slangpy/suite.md and suite.json;
# commit them under bench/results/. SUITE_ARGS go to tests/gpu/slangpy_suite.py,
# e.g. SUITE_ARGS="--archive kernels.sprk --steps served,strict".
SUITE_ARGS ?=
gpu-test-slangpy: $(GPU_SETUP)
	@$(PYTHON) -c "import xdist" 2>/dev/null || $(PYTHON) -m pip install -q pytest-xdist
	@$(PYTHON) tests/gpu/slangpy_suite.py --out build/gpu-test-slangpy $(SUITE_ARGS)

# Needs a CUDA GPU. Cold start of every workload, stock (cold and with its
# caches) against spreplay, per phase; slangtorch too where it is installed;
# then where device creation goes. Writes build/bench/cold_start.json,
# cold-start.md, cold-start.png and device_creation.json; commit them under
# bench/results/ and docs/.
# The report is rendered from whatever was measured, also when a run failed;
# the exit status is the benchmark's. Without matplotlib there is no plot.
# BENCH_ARGS go to bench/cold_start.py, e.g. BENCH_ARGS="--workloads synthetic --rounds 5".
# On a machine that limits one command to ten minutes, run the synthetic
# workload and the samples apart, each with BENCH_ARGS="--workloads ...
# --configs cold,warm_all,spreplay,spreplay_module_cache --arch 90", and render
# both JSON files together with bench/render_report.py.
# Then the compile benchmark below.
BENCH_ARGS ?=
bench: $(GPU_SETUP)
	@$(PYTHON) -c "import matplotlib" 2>/dev/null || $(PYTHON) -m pip install -q matplotlib || true
	@status=0; $(PYTHON) bench/cold_start.py --out build/bench --slangtorch $(BENCH_ARGS) || status=$$?; \
	  $(PYTHON) bench/device_creation.py --out build/bench || status=$$?; \
	  $(PYTHON) bench/compile_bench.py --out build/bench $(BENCH_COMPILE_ARGS) || status=$$?; \
	  $(PYTHON) bench/render_report.py build/bench/cold_start.json \
	    --markdown build/bench/cold-start.md --plot build/bench/cold-start.png && exit $$status

# Needs a CUDA GPU. Re-records the samples (the traces are the H200 fixtures).
bench-record: $(GPU_SETUP)
	@$(PYTHON) bench/record_overhead.py --out build/bench

# No GPU needed: `spreplay compile` of the committed H200 traces (make demo's,
# the synthetic workload's, slangpy's suite's) next to the JIT the app spent on
# the same kernels: wall, CPU, critical path, peak memory, unchanged recompile.
# Writes build/bench/compile_bench.json and compile-bench.md; commit them under
# bench/results/. BENCH_COMPILE_ARGS go to bench/compile_bench.py, e.g.
# BENCH_COMPILE_ARGS="--traces synthetic --arch default".
BENCH_COMPILE_ARGS ?=
bench-compile: $(GPU_SETUP)
	@$(PYTHON) bench/compile_bench.py --out build/bench $(BENCH_COMPILE_ARGS)

clean:
	rm -rf build
