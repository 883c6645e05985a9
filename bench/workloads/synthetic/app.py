# SPDX-License-Identifier: Apache-2.0
"""Synthetic start-up workload: 30 distinct call sites, each checked against numpy.

Shaped like a training script's first step: 9 simple elementwise kernels,
10 medium generics, 5 heavy MLP specialisations (In, Width, Depth, Out, such as
mlp<3, 45, 5, 3>) and 6 backward passes. The three modules are loaded by file
name through the device include path (this folder).
Run:  python app.py [--out out.npz] [--repeat N]
"""

import sys
import time
from pathlib import Path

import numpy as np
import slangpy as spy

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2] / "samples" / "_common")]
import sample_common as sc  # noqa: E402
from references import f64, mlp_init, mlp_ref, softmax_ref, wave_net_ref  # noqa: E402

N = 4096  # elements per elementwise call
NB = 1024  # batch of the generic calls
HEAVY_MLPS = [(3, 45, 5, 3), (4, 64, 4, 4), (8, 32, 6, 2), (2, 48, 5, 1), (6, 40, 5, 6)]
MATVECS = [(2, 3), (3, 4), (4, 4)]
WAVE_WIDTHS_BWDS = [16, 64, 128]


def with_seeded_grad(tensor: spy.Tensor, seed: np.ndarray) -> spy.Tensor:
    tensor = tensor.with_grads()
    tensor.grad.copy_from_numpy(seed)
    return tensor


def main() -> None:
    args = sc.parse_args(__doc__.splitlines()[0])
    t_setup = time.perf_counter()
    device = sc.create_device(include_paths=[HERE])
    simple = spy.Module.load_from_file(device, "simple.slang")
    generics = spy.Module.load_from_file(device, "generics.slang")
    grads = spy.Module.load_from_file(device, "grads.slang")

    rng = np.random.default_rng(30)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    v3a, v3b = (rng.standard_normal((N, 3)).astype(np.float32) for _ in range(2))
    t = rng.uniform(0.0, 1.0, N).astype(np.float32)
    ua, ub = (rng.integers(0, 1 << 31, N, dtype=np.uint32) for _ in range(2))
    ia, ib, ic = (rng.integers(-2000, 2000, N, dtype=np.int32) for _ in range(3))
    xb = rng.uniform(-1.0, 1.0, NB).astype(np.float32)
    coeffs3 = np.array([0.5, -1.0, 0.25], dtype=np.float32)
    coeffs6 = np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6], dtype=np.float32)
    t_coeffs3 = spy.Tensor.from_numpy(device, coeffs3)
    t_coeffs6 = spy.Tensor.from_numpy(device, coeffs6)
    matvec_inputs = {(n, m): (rng.standard_normal((n, m)).astype(np.float32),
                              rng.standard_normal((NB, m)).astype(np.float32)) for n, m in MATVECS}
    logits4 = rng.standard_normal((NB, 4)).astype(np.float32)
    logits10 = rng.standard_normal((NB, 10)).astype(np.float32)
    rows32 = rng.standard_normal((NB, 32)).astype(np.float32)
    mlps = []
    for n_in, width, depth, n_out in HEAVY_MLPS:
        params, layers = mlp_init(rng, n_in, width, depth, n_out)
        x = rng.uniform(-1.0, 1.0, (NB, n_in)).astype(np.float32)
        mlps.append((f"mlp<{n_in}, {width}, {depth}, {n_out}>", spy.Tensor.from_numpy(device, params), x,
                     mlp_ref(layers, x)))
    fit_p = np.array([1.5, 2.0, -0.5, 0.25], dtype=np.float32)
    ones = np.ones(NB, dtype=np.float32)
    setup_s = time.perf_counter() - t_setup

    def body(ck: sc.Checker) -> None:
        loose = dict(rtol=1e-5, atol=1e-5)
        # Simple elementwise kernels.
        ck.check("add", {"": (simple.add(a, b, _result="numpy"), f64(a) + f64(b))}, **loose)
        ck.check("saxpy", {"": (simple.saxpy(2.5, a, b, _result="numpy"), 2.5 * f64(a) + f64(b))}, **loose)
        ck.check("clamp01", {"": (simple.clamp01(a, _result="numpy"), np.clip(f64(a), 0, 1))}, rtol=0, atol=0)
        ck.check("sigmoid", {"": (simple.sigmoid(a, _result="numpy"), 1 / (1 + np.exp(-f64(a))))}, **loose)
        ck.check("length3", {"": (simple.length3(v3a, _result="numpy"), np.linalg.norm(f64(v3a), axis=1))}, **loose)
        ck.check("dot3", {"": (simple.dot3(v3a, v3b, _result="numpy"), (f64(v3a) * f64(v3b)).sum(1))}, **loose)
        lerp_ref = f64(v3a) + (f64(v3b) - f64(v3a)) * f64(t)[:, None]
        ck.check("lerp3", {"": (simple.lerp3(v3a, v3b, t, _result="numpy"), lerp_ref)}, **loose)
        bits_ref = ((ua ^ ub).astype(np.uint64) + ((ua & ub).astype(np.uint64) << 1)) & 0xFFFFFFFF
        ck.check("mix_bits", {"": (simple.mix_bits(ua, ub, _result="numpy"), bits_ref.astype(np.uint32))},
                 rtol=0, atol=0)
        ck.check("int_mad", {"": (simple.int_mad(ia, ib, ic, _result="numpy"), ia * ib + ic)}, rtol=0, atol=0)

        # Medium generics: explicit size arguments in the function name.
        x64 = f64(xb)
        ck.check("poly<3>", {"": (generics["poly<3>"](t_coeffs3, xb, _result="numpy"),
                                  np.polyval(f64(coeffs3), x64))}, **loose)
        ck.check("poly<6>", {"": (generics["poly<6>"](t_coeffs6, xb, _result="numpy"),
                                  np.polyval(f64(coeffs6), x64))}, **loose)
        for (n, m), (mat, vec) in matvec_inputs.items():
            name = f"matvec<{n}, {m}>"
            ck.check(name, {"": (generics[name](mat, vec, _result="numpy"), f64(vec) @ f64(mat).T)}, **loose)
        ck.check("softmax<4>", {"": (generics["softmax<4>"](logits4, _result="numpy").reshape(NB, 4),
                                     softmax_ref(logits4))}, **loose)
        ck.check("softmax<10>", {"": (generics["softmax<10>"](logits10, _result="numpy").reshape(NB, 10),
                                      softmax_ref(logits10))}, **loose)
        ck.check("reduce_max<32>", {"": (generics["reduce_max<32>"](rows32, _result="numpy"), rows32.max(1))},
                 rtol=0, atol=0)
        ck.check("wave_net<64>", {"": (grads["wave_net<64>"](xb, _result="numpy"), wave_net_ref(64, xb)[0])},
                 **loose)
        ck.check("wave_net<32>", {"": (grads["wave_net<32>"](xb, _result="numpy"), wave_net_ref(32, xb)[0])},
                 **loose)

        # Heavy generics: MLPs specialised over every dimension.
        for name, params, x, ref in mlps:
            got = generics[name](params, x, _result="numpy").reshape(ref.shape)
            ck.check(name, {"": (got, ref)}, rtol=1e-4, atol=2e-5)

        # Backward passes: gradients with respect to a Tensor input.
        xs = spy.Tensor.from_numpy(device, xb).with_grads()
        y = with_seeded_grad(spy.Tensor.empty_like(xs), ones)
        grads.softplus.bwds(xs, _result=y)
        ck.check("softplus.bwds", {"": (xs.grad.to_numpy(), 1 / (1 + np.exp(-x64)))}, **loose)

        a3 = spy.Tensor.empty(device, shape=(NB,), dtype="float3")
        a3.copy_from_numpy(v3a[:NB])
        a3 = a3.with_grads()
        y = with_seeded_grad(spy.Tensor.empty(device, shape=(NB,), dtype="float"), ones)
        target = spy.float3(0.5, -0.25, 1.0)
        grads.dist2.bwds(a3, target, _result=y)
        d_ref = 2.0 * (f64(v3a[:NB]) - np.array([0.5, -0.25, 1.0]))
        ck.check("dist2.bwds", {"": (a3.grad.to_numpy().reshape(NB, 3), d_ref)}, **loose)

        p4 = spy.float4(*fit_p.tolist())
        xs = spy.Tensor.from_numpy(device, xb).with_grads()
        y = with_seeded_grad(spy.Tensor.empty_like(xs), ones)
        grads.fit_model.bwds(p4, xs, _result=y)
        th = np.tanh(fit_p[1] * x64)
        dfit_ref = fit_p[0] * fit_p[1] * (1.0 - th * th) + fit_p[2]
        ck.check("fit_model.bwds", {"": (xs.grad.to_numpy(), dfit_ref)}, rtol=1e-4, atol=1e-5)

        for width in WAVE_WIDTHS_BWDS:
            name = f"wave_net<{width}>"
            xs = spy.Tensor.from_numpy(device, xb).with_grads()
            y = with_seeded_grad(spy.Tensor.empty_like(xs), ones)
            grads[name].bwds(xs, _result=y)
            ck.check(f"{name}.bwds", {"": (xs.grad.to_numpy(), wave_net_ref(width, xb)[1])}, rtol=1e-4, atol=1e-5)

    sc.run_app(args, body, setup_seconds=setup_s)


if __name__ == "__main__":
    main()
