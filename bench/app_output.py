# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks and GPU checks share about running a sample app: the
environment they start it in, how they read its output, and how they compare
the outputs it saved."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Every sample app as a recording of it is named (the H200 fixtures, the GPU
# checks): its folder and its flags. local_modules is recorded in both of its
# module load orders, which must give the same kernel keys.
SAMPLE_RUNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "elementwise": ("elementwise", ()),
    "generic_mlp": ("generic_mlp", ()),
    "autodiff": ("autodiff", ()),
    "local_modules": ("local_modules", ()),
    "local_modules-noise-first": ("local_modules", ("--noise-first",)),
}


def fixture_traces(root: Path = ROOT) -> list[Path]:
    """The samples' traces recorded on an H200 with the slangpy installed
    here (tests/fixtures/h200/slangpy-VERSION, bench/record_overhead.py)."""
    version = importlib.metadata.version("slangpy")
    return sorted((root / "tests" / "fixtures" / "h200" / f"slangpy-{version}").glob("*.capnp"))


def sample_app(folder: str, root: Path = ROOT) -> Path:
    """A sample's app.py. Run it with its folder as the working directory, as
    its users do: local_modules finds its modules there."""
    return root / "samples" / folder / "app.py"


# sample_common.run_app's timing lines, and spreplay's exit summary.
TIMING = re.compile(r"setup (?P<setup>[\d.]+)s, first pass (?P<first>[\d.]+)s"
                    r"(?:.*?steady (?P<steady>[\d.]+) ms/pass)?")
FIRST_PASS_END = re.compile(r"first pass ended at unix time (?P<end>[\d.]+)")
SERVED = re.compile(r"spreplay: (?P<served>\d+) kernel\(s\) served from .*?, (?P<compiled>\d+) compiled"
                    r"(?:.*?; (?P<modules_served>\d+) module\(s\) served as IR, "
                    r"(?P<modules_compiled>\d+) loaded from source)?")

# Variables that would change what a run measures: spreplay's own (each run
# sets those it needs), the sample apps' device choice, and CUDA's cache and
# JIT switches.
_CONTROLLED_VARIABLES = ("SLANGPY_RECORD", "SLANGPY_KERNELS", "SPREPLAY_BENCH_", "SPREPLAY_SAMPLE_",
                         "SPREPLAY_VERBOSE", "SLANGPY_DEVICE_TYPE_OVERRIDE", "CUDA_CACHE_", "CUDA_DISABLE_PTX_JIT",
                         "CUDA_FORCE_PTX_JIT")


@contextlib.contextmanager
def empty_cuda_cache() -> Iterator[str]:
    """A CUDA cache for one run alone, empty, removed after it: pass it as
    CUDA_CACHE_PATH.

    On a machine with a driver, NVRTC 13 keeps what it compiles in the
    driver's compute cache (~/.nv/ComputeCache unless CUDA_CACHE_PATH says
    otherwise), so code generation that compiled the same CUDA source before,
    in any process, takes a fraction of its first time: the synthetic
    workload's wave_net<128> took 5.7 s, then 0.8 s in the next compile (H100,
    2026-12-07). A run that shared the cache would measure whatever ran before
    it; one with its own starts as on a machine that never ran the app."""
    with tempfile.TemporaryDirectory(prefix="spreplay-cuda-cache-") as cache:
        yield cache


# Python for a `python -c` snippet: makes the first GPU's primary context
# current, as slang-rhi does, and leaves the driver in `cuda` (ctypes imported).
CUDA_PRIMARY_CONTEXT = """
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
device = ctypes.c_int()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
context = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
assert cuda.cuCtxSetCurrent(context) == 0
"""


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the variables a run controls, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CONTROLLED_VARIABLES)}
    env.update(overrides)
    return env


def rhi_kernels_cuda_cache(cache: Path | None = None, **env: str) -> str:
    """Fills `cache`, a CUDA cache (CUDA_CACHE_PATH; a new temporary folder if
    None), with what creating a CUDA device JIT-compiles and nothing else:
    slang-rhi builds its own kernels with NVRTC at device creation, so a run
    that disables the driver's JIT to prove its kernels were served needs
    those in its cache. Returns its path."""
    cache = cache or Path(tempfile.mkdtemp(prefix="cuda-cache-rhi-"))
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", "import slangpy as spy; spy.create_device(spy.DeviceType.cuda).close()"],
                          env=clean_environment(CUDA_CACHE_PATH=str(cache), **env), capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"creating a CUDA device failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                           f"{proc.stderr[-4000:]}")
    return str(cache)


def outputs_identical(a: Path, b: Path) -> bool:
    """Two --out .npz files bit for bit: -0.0 differs from 0.0, a NaN equals the same NaN."""
    with np.load(a) as left, np.load(b) as right:
        if sorted(left.files) != sorted(right.files):
            return False
        return all(left[k].dtype == right[k].dtype and left[k].shape == right[k].shape
                   and left[k].tobytes() == right[k].tobytes() for k in left.files)
