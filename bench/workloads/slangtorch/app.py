# SPDX-License-Identifier: Apache-2.0
"""The synthetic workload's 30 kernels through slangtorch, checked against numpy.

    python app.py KERNELS.slang [--repeat N]

KERNELS.slang is a copy of kernels.slang: slangtorch keeps its build cache
next to the file, so a fresh copy builds cold and a second process on the
same copy finds the cache warm. Prints one line, `slangtorch-timing: {json}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
SYNTHETIC = HERE.parent / "synthetic"
sys.path.insert(0, str(SYNTHETIC))
from references import f64, mlp_init, mlp_ref, softmax_ref, wave_net_ref  # noqa: E402

# The same sizes as the slangpy app.

N = 4096
NB = 1024
HEAVY_MLPS = [(3, 45, 5, 3), (4, 64, 4, 4), (8, 32, 6, 2), (2, 48, 5, 1), (6, 40, 5, 6)]
BLOCK = 256


class Mismatch(Exception):
    pass


def check(name: str, got, ref: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    got = got.detach().cpu().numpy().astype(np.float64).reshape(np.shape(ref))
    ref = f64(ref)
    if not np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref)):
        raise Mismatch(f"{name}: max abs error {np.abs(got - ref).max():.3g}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    timing: dict[str, float] = {}
    spawned = os.environ.get("SPREPLAY_BENCH_T0")

    start = time.perf_counter()
    import torch

    timing["import_torch_s"] = time.perf_counter() - start
    start = time.perf_counter()
    import slangtorch

    timing["import_slangtorch_s"] = time.perf_counter() - start
    start = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    timing["device_create_s"] = time.perf_counter() - start
    if spawned:
        timing["start_to_device_ready_s"] = time.time() - float(spawned)
    ready = time.perf_counter()

    start = time.perf_counter()
    # Without fast math, like slangpy's NVRTC builds, so results match the references as closely.
    m = slangtorch.loadModule(str(args.kernels), includePaths=[str(SYNTHETIC)], cudaFastMath=False)
    timing["load_module_s"] = time.perf_counter() - start

    rng = np.random.default_rng(30)
    cuda = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()  # noqa: E731
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    v3a, v3b = (rng.standard_normal((N, 3)).astype(np.float32) for _ in range(2))
    t = rng.uniform(0.0, 1.0, N).astype(np.float32)
    ua, ub = (rng.integers(0, 1 << 31, N, dtype=np.uint32) for _ in range(2))
    ia, ib, ic = (rng.integers(-2000, 2000, N, dtype=np.int32) for _ in range(3))
    xb = rng.uniform(-1.0, 1.0, NB).astype(np.float32)
    coeffs3 = np.array([0.5, -1.0, 0.25], dtype=np.float32)
    coeffs6 = np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6], dtype=np.float32)
    mats = {(n, k): (rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal((NB, k)).astype(np.float32))
            for n, k in [(2, 3), (3, 4), (4, 4)]}
    logits4 = rng.standard_normal((NB, 4)).astype(np.float32)
    logits10 = rng.standard_normal((NB, 10)).astype(np.float32)
    rows32 = rng.standard_normal((NB, 32)).astype(np.float32)
    mlps = []
    for dims in HEAVY_MLPS:
        params, layers = mlp_init(rng, *dims)
        x = rng.uniform(-1.0, 1.0, (NB, dims[0])).astype(np.float32)
        mlps.append((dims, cuda(params), cuda(x), mlp_ref(layers, x)))
    fit_p = np.array([1.5, 2.0, -0.5, 0.25], dtype=np.float32)
    target = np.array([0.5, -0.25, 1.0], dtype=np.float32)
    ta, tb, tc, tv3a, tv3b, tt = map(cuda, (a, b, c, v3a.ravel(), v3b.ravel(), t))
    tua, tub = cuda(ua.view(np.int32)), cuda(ub.view(np.int32))
    tia, tib, tic, txb = map(cuda, (ia, ib, ic, xb))
    x64 = f64(xb)

    def launch(kernel: Callable, n: int, **tensors) -> None:
        kernel(**tensors, n=n).launchRaw(blockSize=(BLOCK, 1, 1), gridSize=((n + BLOCK - 1) // BLOCK, 1, 1))

    def out(*shape: int, dtype=torch.float32):
        return torch.zeros(*shape, dtype=dtype, device="cuda")

    def one_pass() -> None:
        r = out(N); launch(m.k_add, N, a=ta, b=tb, r=r); check("add", r, f64(a) + f64(b))  # noqa: E702
        r = out(N); launch(m.k_saxpy, N, s=2.5, x=ta, y=tb, r=r); check("saxpy", r, 2.5 * f64(a) + f64(b))  # noqa: E702
        r = out(N); launch(m.k_clamp01, N, a=ta, r=r); check("clamp01", r, np.clip(f64(a), 0, 1))  # noqa: E702
        r = out(N); launch(m.k_sigmoid, N, a=ta, r=r); check("sigmoid", r, 1 / (1 + np.exp(-f64(a))))  # noqa: E702
        r = out(N); launch(m.k_length3, N, v=tv3a, r=r)
        check("length3", r, np.linalg.norm(f64(v3a), axis=1))
        r = out(N); launch(m.k_dot3, N, a=tv3a, b=tv3b, r=r); check("dot3", r, (f64(v3a) * f64(v3b)).sum(1))  # noqa: E702
        r = out(N * 3); launch(m.k_lerp3, N, a=tv3a, b=tv3b, t=tt, r=r)
        check("lerp3", r, f64(v3a) + (f64(v3b) - f64(v3a)) * f64(t)[:, None])
        r = out(N, dtype=torch.int32); launch(m.k_mix_bits, N, a=tua, b=tub, r=r)
        bits = (((ua ^ ub).astype(np.uint64) + ((ua & ub).astype(np.uint64) << 1)) & 0xFFFFFFFF).astype(np.uint32)
        check("mix_bits", r, bits.view(np.int32), rtol=0, atol=0)
        r = out(N, dtype=torch.int32); launch(m.k_int_mad, N, a=tia, b=tib, c=tic, r=r)
        check("int_mad", r, ia * ib + ic, rtol=0, atol=0)

        r = out(NB); launch(m.k_poly3, NB, c=cuda(coeffs3), x=txb, r=r); check("poly3", r, np.polyval(f64(coeffs3), x64))  # noqa: E702
        r = out(NB); launch(m.k_poly6, NB, c=cuda(coeffs6), x=txb, r=r); check("poly6", r, np.polyval(f64(coeffs6), x64))  # noqa: E702
        for (n, k), (mat, vec) in mats.items():
            r = out(NB * n)
            launch(getattr(m, f"k_matvec_{n}_{k}"), NB, m=cuda(mat.ravel()), v=cuda(vec.ravel()), r=r)
            check(f"matvec<{n}, {k}>", r, f64(vec) @ f64(mat).T)
        r = out(NB * 4); launch(m.k_softmax4, NB, x=cuda(logits4.ravel()), r=r); check("softmax4", r, softmax_ref(logits4))  # noqa: E702
        r = out(NB * 10); launch(m.k_softmax10, NB, x=cuda(logits10.ravel()), r=r)
        check("softmax10", r, softmax_ref(logits10))
        r = out(NB); launch(m.k_reduce_max32, NB, x=cuda(rows32.ravel()), r=r); check("reduce_max32", r, rows32.max(1), 0, 0)  # noqa: E702
        r = out(NB); launch(m.k_wave_net64, NB, x=txb, r=r); check("wave_net64", r, wave_net_ref(64, xb)[0])  # noqa: E702
        r = out(NB); launch(m.k_wave_net32, NB, x=txb, r=r); check("wave_net32", r, wave_net_ref(32, xb)[0])  # noqa: E702

        for dims, params, x, ref in mlps:
            r = out(NB * dims[3])
            launch(getattr(m, "k_mlp_" + "_".join(map(str, dims))), NB, p=params, x=x.ravel(), y=r)
            check(f"mlp{dims}", r, ref, rtol=1e-4, atol=2e-5)

        r = out(NB); launch(m.k_softplus_bwd, NB, x=txb, dx=r); check("softplus.bwd", r, 1 / (1 + np.exp(-x64)))  # noqa: E702
        r = out(NB * 3); launch(m.k_dist2_bwd, NB, a=cuda(v3a[:NB].ravel()), b=cuda(target), da=r)
        check("dist2.bwd", r, 2.0 * (f64(v3a[:NB]) - f64(target)))
        r = out(NB); launch(m.k_fit_model_bwd, NB, params=cuda(fit_p), x=txb, dx=r)
        th = np.tanh(fit_p[1] * x64)
        check("fit_model.bwd", r, fit_p[0] * fit_p[1] * (1.0 - th * th) + fit_p[2], rtol=1e-4)
        for width in (16, 64, 128):
            r = out(NB); launch(getattr(m, f"k_wave_net{width}_bwd"), NB, x=txb, dx=r)
            check(f"wave_net{width}.bwd", r, wave_net_ref(width, xb)[1], rtol=1e-4)

    try:
        start = time.perf_counter()
        one_pass()
        timing["first_pass_s"] = time.perf_counter() - start
        timing["ready_to_all_first_results_s"] = time.perf_counter() - ready
        start = time.perf_counter()
        for _ in range(args.repeat - 1):
            one_pass()
        if args.repeat > 1:
            timing["steady_ms_per_pass"] = 1e3 * (time.perf_counter() - start) / (args.repeat - 1)
    except Mismatch as error:
        print(f"FAIL: {error}", file=sys.stderr)
        return 1
    timing["kernels"] = 30
    print("slangtorch-timing: " + json.dumps(timing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
