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
from references import (  # noqa: E402
    DIST_TARGET, FIT_PARAMS, NB, WAVE_WIDTHS_BWDS, f64, make_inputs, softmax_ref, wave_net_ref)



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

    inp = make_inputs()
    a, b, v3a, v3b, t, xb = inp.a, inp.b, inp.v3a, inp.v3b, inp.t, inp.xb
    t_coeffs3 = spy.Tensor.from_numpy(device, inp.coeffs3)
    t_coeffs6 = spy.Tensor.from_numpy(device, inp.coeffs6)
    mlps = [(f"mlp<{', '.join(map(str, dims))}>", spy.Tensor.from_numpy(device, params), x, ref)
            for dims, params, x, ref in inp.mlps]
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
        ua, ub = inp.ua, inp.ub
        bits_ref = ((ua ^ ub).astype(np.uint64) + ((ua & ub).astype(np.uint64) << 1)) & 0xFFFFFFFF
        ck.check("mix_bits", {"": (simple.mix_bits(ua, ub, _result="numpy"), bits_ref.astype(np.uint32))},
                 rtol=0, atol=0)
        ck.check("int_mad", {"": (simple.int_mad(inp.ia, inp.ib, inp.ic, _result="numpy"), inp.ia * inp.ib + inp.ic)},
                 rtol=0, atol=0)

        # Medium generics: explicit size arguments in the function name.
        x64 = f64(xb)
        ck.check("poly<3>", {"": (generics["poly<3>"](t_coeffs3, xb, _result="numpy"),
                                  np.polyval(f64(inp.coeffs3), x64))}, **loose)
        ck.check("poly<6>", {"": (generics["poly<6>"](t_coeffs6, xb, _result="numpy"),
                                  np.polyval(f64(inp.coeffs6), x64))}, **loose)
        for (n, m), (mat, vec) in inp.matvecs.items():
            name = f"matvec<{n}, {m}>"
            ck.check(name, {"": (generics[name](mat, vec, _result="numpy"), f64(vec) @ f64(mat).T)}, **loose)
        ck.check("softmax<4>", {"": (generics["softmax<4>"](inp.logits4, _result="numpy").reshape(NB, 4),
                                     softmax_ref(inp.logits4))}, **loose)
        ck.check("softmax<10>", {"": (generics["softmax<10>"](inp.logits10, _result="numpy").reshape(NB, 10),
                                      softmax_ref(inp.logits10))}, **loose)
        ck.check("reduce_max<32>", {"": (generics["reduce_max<32>"](inp.rows32, _result="numpy"), inp.rows32.max(1))},
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
        target = spy.float3(*DIST_TARGET.tolist())
        grads.dist2.bwds(a3, target, _result=y)
        d_ref = 2.0 * (f64(v3a[:NB]) - f64(DIST_TARGET))
        ck.check("dist2.bwds", {"": (a3.grad.to_numpy().reshape(NB, 3), d_ref)}, **loose)

        fit_p = FIT_PARAMS
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
