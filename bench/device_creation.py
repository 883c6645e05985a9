# SPDX-License-Identifier: Apache-2.0
"""Where slangpy's CUDA device creation goes, part by part, each in fresh processes.

What `spy.create_device(DeviceType.cuda)` does (slangpy 0.43.1, slang-rhi at its pin): Slang's
global session (decoding the embedded core module), cuInit and the primary context, an OptiX
context, slang-rhi's clear engine (NVRTC compiles its clear-texture.cu, then the driver loads the
PTX, a JIT when the CUDA cache is cold) and sgl's Slang session. Measured here, in fresh processes:

  import_slangpy       `import slangpy`
  create_device_cold   create_device with an empty CUDA cache
  create_device_warm   create_device with the CUDA cache its previous run filled
  global_session       slang_createGlobalSession2 alone (the wheel's libslang-compiler)
  cuda_context         cuInit + cuDevicePrimaryCtxRetain + cuCtxSetCurrent alone
  clear_nvrtc          NVRTC on the clear-texture.cu embedded in libsgl.so
  clear_load_cold/warm cuModuleLoadData of that PTX, empty / warm CUDA cache
What is left of create_device_warm is OptiX, sgl's session and bookkeeping.

    python bench/device_creation.py --out DIR [--rounds 3]
Writes DIR/device_creation.json; prints a markdown table of medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import CUDA_PRIMARY_CONTEXT, clean_environment  # noqa: E402

IMPORT_AND_CREATE = """
import json, time
t0 = time.perf_counter()
import slangpy as spy
t1 = time.perf_counter()
device = spy.create_device(spy.DeviceType.cuda)
t2 = time.perf_counter()
print(json.dumps({"import_slangpy": t1 - t0, "create_device": t2 - t1}))
"""

GLOBAL_SESSION = """
import ctypes, json, pathlib, time, importlib.util
package = pathlib.Path(importlib.util.find_spec("slangpy").origin).parent
library = ctypes.CDLL(str(next(package.glob("libslang-compiler.so*"))))
class Desc(ctypes.Structure):
    _fields_ = [("structureSize", ctypes.c_uint32), ("apiVersion", ctypes.c_uint32),
                ("minLanguageVersion", ctypes.c_uint32), ("enableGLSL", ctypes.c_bool),
                ("reserved", ctypes.c_uint32 * 16)]
desc = Desc(ctypes.sizeof(Desc), 0, 2025, False)
session = ctypes.c_void_p()
t0 = time.perf_counter()
assert library.slang_createGlobalSession2(ctypes.byref(desc), ctypes.byref(session)) == 0
print(json.dumps({"global_session": time.perf_counter() - t0}))
"""

CUDA_CONTEXT = """
import ctypes, json, time
t0 = time.perf_counter()
""" + CUDA_PRIMARY_CONTEXT + """
print(json.dumps({"cuda_context": time.perf_counter() - t0}))
"""

# The clear engine's kernels, compiled and loaded the way slang-rhi does it.
CLEAR_ENGINE = """
import ctypes, json, pathlib, time, importlib.util, os
package = pathlib.Path(importlib.util.find_spec("slangpy").origin).parent
data = (package / "libsgl.so").read_bytes()
at = data.find(b"// This file implements CUDA kernels for clearing textures.")
source = data[at:data.find(b"\\0", at)]
""" + CUDA_PRIMARY_CONTEXT + """
home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
nvrtc = ctypes.CDLL(next(str(p) for p in [*pathlib.Path(home).glob("lib64/libnvrtc.so*"),
                                          *pathlib.Path(home).glob("lib/libnvrtc.so*")]))
t0 = time.perf_counter()
program = ctypes.c_void_p()
assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, b"clear-texture.cu", 0, None, None) == 0
options = (ctypes.c_char_p * 2)(b"-I", f"{home}/include".encode())
result = nvrtc.nvrtcCompileProgram(program, 2, options)
size = ctypes.c_size_t(); nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value); nvrtc.nvrtcGetPTX(program, ptx)
t1 = time.perf_counter()
module = ctypes.c_void_p()
loaded = cuda.cuModuleLoadData(ctypes.byref(module), ptx)
t2 = time.perf_counter()
print(json.dumps({"clear_nvrtc": t1 - t0, "clear_load": t2 - t1, "nvrtc_result": result, "load_result": loaded}))
"""


def measure(snippet: str, cuda_cache: str) -> dict[str, float]:
    env = clean_environment(CUDA_CACHE_PATH=cuda_cache)
    proc = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def one_round() -> dict[str, float]:
    row: dict[str, float] = {}
    device_cache = tempfile.mkdtemp(prefix="cuda-cache-")
    cold = measure(IMPORT_AND_CREATE, device_cache)
    warm = measure(IMPORT_AND_CREATE, device_cache)
    row.update(import_slangpy=warm["import_slangpy"], create_device_cold=cold["create_device"],
               create_device_warm=warm["create_device"])
    row.update(measure(GLOBAL_SESSION, tempfile.mkdtemp(prefix="cuda-cache-")))
    row.update(measure(CUDA_CONTEXT, tempfile.mkdtemp(prefix="cuda-cache-")))
    clear_cache = tempfile.mkdtemp(prefix="cuda-cache-")
    clear_cold = measure(CLEAR_ENGINE, clear_cache)
    clear_warm = measure(CLEAR_ENGINE, clear_cache)
    row.update(clear_nvrtc=clear_warm["clear_nvrtc"], clear_load_cold=clear_cold["clear_load"],
               clear_load_warm=clear_warm["clear_load"])
    known = row["global_session"] + row["cuda_context"] + row["clear_nvrtc"] + row["clear_load_warm"]
    row["rest_warm"] = row["create_device_warm"] - known
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rounds = [one_round() for _ in range(args.rounds)]
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    (args.out / "device_creation.json").write_text(json.dumps({"rounds": rounds, "medians": medians}, indent=2))
    print(f"| part | median of {args.rounds} (s) |\n| --- | --- |")
    for key, value in medians.items():
        print(f"| {key} | {value:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
