# SPDX-License-Identifier: Apache-2.0
"""What the CUDA driver's JIT of each kernel's PTX costs, as the app pays it.

An app without spreplay hands slang-rhi the PTX that NVRTC wrote, and the
driver compiles it to SASS when slang-rhi loads it (cuModuleLoadData). The
recorded compile times stop at the PTX, so that JIT is measured apart: each
kernel's image is extracted from an archive that `spreplay compile` wrote,
which holds the PTX the app compiled (the compile proved it identical), and
loaded in a fresh process with CUDA_FORCE_PTX_JIT=1, so that the driver
compiles the PTX rather than take the archive's SASS, and CUDA_CACHE_DISABLE=1,
so that it compiles every one, as on a machine that never ran the app.

    python bench/driver_jit.py ARCHIVE KEY...   prints {key: seconds} as JSON
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import CUDA_PRIMARY_CONTEXT, clean_environment  # noqa: E402

# Times each image's load alone: the context is made first.
LOAD_EACH = """
import ctypes, json, sys, time
""" + CUDA_PRIMARY_CONTEXT + """
seconds = {}
for key, path in json.loads(sys.argv[1]).items():
    image = open(path, "rb").read()
    module = ctypes.c_void_p()
    start = time.perf_counter()
    result = cuda.cuModuleLoadData(ctypes.byref(module), image)
    seconds[key] = time.perf_counter() - start
    if result != 0:
        raise SystemExit(f"cuModuleLoadData of {key} failed: CUresult {result}")
    cuda.cuModuleUnload(module)
print(json.dumps(seconds))
"""


def has_cuda_driver() -> bool:
    init = "import ctypes; ctypes.CDLL('libcuda.so.1').cuInit(0) == 0 or exit(1)"
    probe = subprocess.run([sys.executable, "-c", init], capture_output=True)
    return probe.returncode == 0


def driver_jit_seconds(archive: Path, keys: list[str]) -> dict[str, float] | None:
    """Each of `keys`' driver JIT from its PTX in `archive`, in seconds; None
    on a machine without a CUDA driver and GPU."""
    if not has_cuda_driver():
        return None
    with tempfile.TemporaryDirectory(prefix="spreplay-driver-jit-") as scratch:
        images: dict[str, str] = {}
        for key in keys:
            image = Path(scratch, f"{key}.fatbin")
            subprocess.run([sys.executable, "-m", "spreplay", "extract", str(archive), key, "-o", str(image)],
                           check=True, capture_output=True)
            images[key] = str(image)
        env = clean_environment(CUDA_FORCE_PTX_JIT="1", CUDA_CACHE_DISABLE="1")
        run = subprocess.run([sys.executable, "-c", LOAD_EACH, json.dumps(images)], env=env, capture_output=True,
                             text=True, timeout=1800)
    if run.returncode != 0:
        raise RuntimeError(f"driver_jit: loading the kernels failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(driver_jit_seconds(Path(sys.argv[1]), sys.argv[2:]), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
