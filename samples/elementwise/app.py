# SPDX-License-Identifier: Apache-2.0
"""Elementwise tensor math with slangpy, checked against numpy.

elementwise.slang (which imports ew_util.slang) is loaded by ABSOLUTE PATH.
Run:  python app.py [--out out.npz] [--repeat N]
"""

import sys
import time
from pathlib import Path

import numpy as np
import slangpy as spy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_common"))
import sample_common as sc  # noqa: E402

N = 4096  # 1D problem size
ROWS, COLS = 48, 96  # 2D problem size (4608 elements)
NVEC = 3000  # number of float3 vectors


def make_inputs(rng: np.random.Generator) -> dict:
    return {
        "a": rng.standard_normal(N).astype(np.float32),
        "b": rng.standard_normal(N).astype(np.float32),
        "x": rng.uniform(-2.0, 2.0, N).astype(np.float32),
        "coeffs": np.array([0.5, -1.25, 0.75, 0.125], dtype=np.float32),
        "A": rng.standard_normal((ROWS, COLS)).astype(np.float32),
        "B": rng.standard_normal((ROWS, COLS)).astype(np.float32),
        "acc0": rng.standard_normal(N).astype(np.float32),
        "d": rng.standard_normal((NVEC, 3)).astype(np.float32),
        "n": np.array([0.3, -1.0, 0.5], dtype=np.float32),
        "u": (np.arange(N, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32),
        "ia": rng.integers(-400, 400, N, dtype=np.int32),
        "ib": rng.integers(-400, 400, N, dtype=np.int32),
    }


def pcg_hash_ref(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    state = (x * np.uint64(747796405) + np.uint64(2891336453)) & m
    word = (((state >> ((state >> np.uint64(28)) + np.uint64(4))) ^ state) * np.uint64(277803737)) & m
    return ((word >> np.uint64(22)) ^ word).astype(np.uint32)


def main() -> None:
    args = sc.parse_args(__doc__.splitlines()[0])
    t_setup = time.perf_counter()
    device = sc.create_device()
    # Style 1: load the main module by absolute path; `import ew_util;` inside it
    # is resolved relative to the importing file's folder.
    module = spy.Module.load_from_file(device, str(HERE / "elementwise.slang"))

    inp = make_inputs(np.random.default_rng(1234))
    f64 = {k: v.astype(np.float64) for k, v in inp.items() if v.dtype == np.float32}

    t_a = spy.Tensor.from_numpy(device, inp["a"])
    t_x = spy.Tensor.from_numpy(device, inp["x"])
    t_A = spy.Tensor.from_numpy(device, inp["A"])
    t_B = spy.Tensor.from_numpy(device, inp["B"])
    # A 1D tensor whose element type is float3 (rather than a [NVEC, 3] float tensor).
    t_d = spy.Tensor.empty(device, shape=(NVEC,), dtype="float3")
    t_d.copy_from_numpy(inp["d"])
    coeffs = spy.float4(*[float(c) for c in inp["coeffs"]])
    normal = spy.float3(*[float(c) for c in inp["n"]])
    setup_s = time.perf_counter() - t_setup

    def body(ck: sc.Checker) -> None:
        # 1. add: numpy in, numpy out.
        r = module.add(inp["a"], inp["b"], _result="numpy")
        ck.check("add(ndarray,ndarray)", {"": (r, f64["a"] + f64["b"])})

        # 2. add again, different signature: Tensor + python float (broadcast) -> Tensor.
        r = module.add(t_a, 0.5)
        ck.check("add(Tensor,float)", {"": (r.to_numpy(), f64["a"] + 0.5)})

        # 3. cubic polynomial with a uniform float4 of coefficients.
        c = f64["coeffs"]
        ref = c[0] + f64["x"] * (c[1] + f64["x"] * (c[2] + f64["x"] * c[3]))
        r = module.poly3(t_x, coeffs, _result="numpy")
        ck.check("poly3(Tensor,float4)", {"": (r, ref)})

        # 4. fused multiply-add with a scalar on 2D tensors, into a preallocated result.
        out = spy.Tensor.empty(device, shape=(ROWS, COLS), dtype="float")
        module.fma_scalar(t_A, t_B, 1.75, _result=out)
        ck.check("fma_scalar(Tensor2D,Tensor2D,float)", {"": (out.to_numpy(), f64["A"] * 1.75 + f64["B"])})

        # 5. inout parameter: acc += 0.25 * a, updated in place.
        acc = spy.Tensor.from_numpy(device, inp["acc0"])
        module.accumulate(t_a, 0.25, acc)
        ck.check("accumulate(Tensor,float,inout Tensor)", {"": (acc.to_numpy(), f64["acc0"] + 0.25 * f64["a"])})

        # 6. float3 vectors.
        n = f64["n"] / np.linalg.norm(f64["n"])
        d = f64["d"]
        ref = (d - 2.0 * (d @ n)[:, None] * n[None, :]) * 2.0
        r = module.mirror_scale(t_d, normal, 2.0, _result="numpy")
        ck.check("mirror_scale(float3 Tensor,float3,float)", {"": (r.reshape(NVEC, 3), ref)})

        # 7. uint32 hash (exact).
        r = module.hash_u32(inp["u"], _result="numpy")
        ck.check("hash_u32(uint ndarray)", {"": (r, pcg_hash_ref(inp["u"]))}, rtol=0, atol=0)

        # 8. int32 arithmetic with scalar ints (exact).
        r = module.clamp_mix(inp["ia"], inp["ib"], -500, 500, _result="numpy")
        ref = np.clip(3 * inp["ia"] - inp["ib"], -500, 500).astype(np.int32)
        ck.check("clamp_mix(int ndarray x2,int,int)", {"": (r, ref)}, rtol=0, atol=0)

    sc.run_app(args, body, setup_seconds=setup_s)


if __name__ == "__main__":
    main()
