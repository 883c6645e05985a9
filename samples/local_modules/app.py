# SPDX-License-Identifier: Apache-2.0
"""Modules loaded by bare file name from the app's own folder, with debug information.

Run from this folder:  python app.py [--noise-first] [--out out.npz] [--repeat N]

shading.slang (which imports slangpy and palette.slang) and noise.slang (which
imports neither) are loaded as "shading.slang" and "noise.slang", found in the
working directory, which is also the device's include path ("."). The device
compiles with debug information, as slangpy's own tests do, which writes the
working directory and source paths into the PTX. Whichever module loads first
decides the name Slang gives slangpy's library ("slangpy" after shading.slang,
"slangpy.slang" after noise.slang); --noise-first swaps the order.
"""

import sys
import time
from pathlib import Path

import numpy as np
import slangpy as spy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_common"))
import sample_common as sc  # noqa: E402

N = 2048


def hash_ref(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & m
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & m
    x ^= x >> np.uint64(16)
    return x.astype(np.uint32)


def main() -> None:
    args = sc.parse_args(__doc__.splitlines()[0], [("--noise-first", "load noise.slang before shading.slang")])
    t_setup = time.perf_counter()
    device = sc.create_device(include_paths=["."], debug_info=True)
    names = ["noise.slang", "shading.slang"] if args.noise_first else ["shading.slang", "noise.slang"]
    modules = {name: spy.Module.load_from_file(device, name) for name in names}
    shading, noise = modules["shading.slang"], modules["noise.slang"]

    rng = np.random.default_rng(7)
    colors = rng.uniform(0.0, 4.0, (N, 3)).astype(np.float32)
    values = rng.standard_normal(N).astype(np.float32)
    cells = np.arange(N, dtype=np.uint32) * np.uint32(2654435761)
    ts = rng.uniform(0.0, 1.0, N).astype(np.float32)
    t_colors = spy.Tensor.empty(device, shape=(N,), dtype="float3")
    t_colors.copy_from_numpy(colors)
    t_values = spy.Tensor.from_numpy(device, values)
    t_cells = spy.Tensor.from_numpy(device, cells)
    t_ts = spy.Tensor.from_numpy(device, ts)
    setup = time.perf_counter() - t_setup

    c64 = colors.astype(np.float64)
    weights = np.array([0.2126, 0.7152, 0.0722])

    def body(ck: sc.Checker) -> None:
        exposed = shading.expose(t_colors, 1.5, _result="numpy").reshape(N, 3)
        ref = c64 * 1.5 / (c64 * 1.5 + 1.0)
        ck.check("shading.expose", {"": (exposed, ref)}, rtol=1e-5, atol=1e-6)
        luma = shading.luminance(t_colors, _result="numpy")
        ck.check("shading.luminance", {"": (luma, c64 @ weights)}, rtol=1e-5, atol=1e-5)
        quantized = shading.quantize_half(t_values, _result="numpy")
        ck.check("shading.quantize_half", {"": (quantized, values.astype(np.float16).astype(np.float32))},
                 rtol=0, atol=0)
        hashed = noise.hash_u32(t_cells, _result="numpy")
        ck.check("noise.hash_u32", {"": (hashed, hash_ref(cells))}, rtol=0, atol=0)
        smooth = noise.value_noise(t_cells, t_ts, _result="numpy")
        a = (hash_ref(cells) & 0xFFFF) / 65535.0
        b = (hash_ref(cells + np.uint32(1)) & 0xFFFF) / 65535.0
        s = ts.astype(np.float64) ** 2 * (3.0 - 2.0 * ts)
        ck.check("noise.value_noise", {"": (smooth, a + (b - a) * s)}, rtol=1e-5, atol=1e-5)

    sc.run_app(args, body, setup_seconds=setup)


if __name__ == "__main__":
    main()
