# SPDX-License-Identifier: Apache-2.0
"""The synthetic workload's 30 kernels through slangtorch, checked against numpy.

    python app.py KERNELS.slang [--repeat N] [--no-line-directives] [--skip-ninja-check]

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
from references import (  # noqa: E402
    DIST_TARGET, FIT_PARAMS, N, NB, WAVE_WIDTHS_BWDS, f64, make_inputs, softmax_ref, wave_net_ref)

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
    parser.add_argument("--no-line-directives", action="store_true",
                        help="loadModule(slangGenLineInfo=False): slangc writes no #line directives")
    parser.add_argument("--skip-ninja-check", action="store_true",
                        help="loadModule(skipNinjaCheck=True): a cached extension is loaded without asking ninja")
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
    m = slangtorch.loadModule(str(args.kernels), includePaths=[str(SYNTHETIC)], cudaFastMath=False,
                              slangGenLineInfo=not args.no_line_directives, skipNinjaCheck=args.skip_ninja_check)
    timing["load_module_s"] = time.perf_counter() - start

    cuda = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()  # noqa: E731
    inp = make_inputs()
    a, b, v3a, v3b, t, ua, ub, ia, ib, ic, xb = (inp.a, inp.b, inp.v3a, inp.v3b, inp.t, inp.ua, inp.ub, inp.ia,
                                                 inp.ib, inp.ic, inp.xb)
    mlps = [(dims, cuda(params), cuda(x), ref) for dims, params, x, ref in inp.mlps]
    fit_p, target = FIT_PARAMS, DIST_TARGET
    ta, tb, tv3a, tv3b, tt = map(cuda, (a, b, v3a.ravel(), v3b.ravel(), t))
    tua, tub = cuda(ua.view(np.int32)), cuda(ub.view(np.int32))
    tia, tib, tic, txb = map(cuda, (ia, ib, ic, xb))
    x64 = f64(xb)

    def run(name: str, kernel: Callable, n: int, result_size: int, ref: np.ndarray, rtol: float = 1e-5,
            atol: float = 1e-5, result_dtype=torch.float32, **tensors) -> None:
        """Launch `kernel` over n threads into a fresh result tensor, passed as
        the parameter named in `tensors` by None, and compare it with `ref`."""
        result = torch.zeros(result_size, dtype=result_dtype, device="cuda")
        (result_name,) = [key for key, value in tensors.items() if value is None]
        tensors[result_name] = result
        kernel(**tensors, n=n).launchRaw(blockSize=(BLOCK, 1, 1), gridSize=((n + BLOCK - 1) // BLOCK, 1, 1))
        check(name, result, ref, rtol, atol)

    def one_pass() -> None:
        run("add", m.k_add, N, N, f64(a) + f64(b), a=ta, b=tb, r=None)
        run("saxpy", m.k_saxpy, N, N, 2.5 * f64(a) + f64(b), s=2.5, x=ta, y=tb, r=None)
        run("clamp01", m.k_clamp01, N, N, np.clip(f64(a), 0, 1), a=ta, r=None)
        run("sigmoid", m.k_sigmoid, N, N, 1 / (1 + np.exp(-f64(a))), a=ta, r=None)
        run("length3", m.k_length3, N, N, np.linalg.norm(f64(v3a), axis=1), v=tv3a, r=None)
        run("dot3", m.k_dot3, N, N, (f64(v3a) * f64(v3b)).sum(1), a=tv3a, b=tv3b, r=None)
        run("lerp3", m.k_lerp3, N, N * 3, f64(v3a) + (f64(v3b) - f64(v3a)) * f64(t)[:, None], a=tv3a, b=tv3b,
            t=tt, r=None)
        bits = (((ua ^ ub).astype(np.uint64) + ((ua & ub).astype(np.uint64) << 1)) & 0xFFFFFFFF).astype(np.uint32)
        run("mix_bits", m.k_mix_bits, N, N, bits.view(np.int32), 0, 0, torch.int32, a=tua, b=tub, r=None)
        run("int_mad", m.k_int_mad, N, N, ia * ib + ic, 0, 0, torch.int32, a=tia, b=tib, c=tic, r=None)

        run("poly3", m.k_poly3, NB, NB, np.polyval(f64(inp.coeffs3), x64), c=cuda(inp.coeffs3), x=txb, r=None)
        run("poly6", m.k_poly6, NB, NB, np.polyval(f64(inp.coeffs6), x64), c=cuda(inp.coeffs6), x=txb, r=None)
        for (n, k), (mat, vec) in inp.matvecs.items():
            run(f"matvec<{n}, {k}>", getattr(m, f"k_matvec_{n}_{k}"), NB, NB * n, f64(vec) @ f64(mat).T,
                m=cuda(mat.ravel()), v=cuda(vec.ravel()), r=None)
        run("softmax4", m.k_softmax4, NB, NB * 4, softmax_ref(inp.logits4), x=cuda(inp.logits4.ravel()), r=None)
        run("softmax10", m.k_softmax10, NB, NB * 10, softmax_ref(inp.logits10), x=cuda(inp.logits10.ravel()),
            r=None)
        run("reduce_max32", m.k_reduce_max32, NB, NB, inp.rows32.max(1), 0, 0, x=cuda(inp.rows32.ravel()), r=None)
        run("wave_net64", m.k_wave_net64, NB, NB, wave_net_ref(64, xb)[0], x=txb, r=None)
        run("wave_net32", m.k_wave_net32, NB, NB, wave_net_ref(32, xb)[0], x=txb, r=None)

        for dims, params, x, ref in mlps:
            run(f"mlp{dims}", getattr(m, "k_mlp_" + "_".join(map(str, dims))), NB, NB * dims[3], ref, 1e-4, 2e-5,
                p=params, x=x.ravel(), y=None)

        run("softplus.bwd", m.k_softplus_bwd, NB, NB, 1 / (1 + np.exp(-x64)), x=txb, dx=None)
        run("dist2.bwd", m.k_dist2_bwd, NB, NB * 3, 2.0 * (f64(v3a[:NB]) - f64(target)), a=cuda(v3a[:NB].ravel()),
            b=cuda(target), da=None)
        th = np.tanh(fit_p[1] * x64)
        run("fit_model.bwd", m.k_fit_model_bwd, NB, NB, fit_p[0] * fit_p[1] * (1.0 - th * th) + fit_p[2], 1e-4,
            params=cuda(fit_p), x=txb, dx=None)
        for width in WAVE_WIDTHS_BWDS:
            run(f"wave_net{width}.bwd", getattr(m, f"k_wave_net{width}_bwd"), NB, NB, wave_net_ref(width, xb)[1],
                1e-4, x=txb, dx=None)

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
