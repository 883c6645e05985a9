# SPDX-License-Identifier: Apache-2.0
"""Autodiff with slangpy: fit y = a*tanh(b*x) + c*x + d by gradient descent.

The per-sample squared-error loss is a [Differentiable] Slang function; its
parameter gradients come from `.bwds` on Tensors carrying gradients, are
reduced and applied by two more Slang kernels, and are checked against numpy.
train.slang (which imports model.slang) is loaded as "train.slang", found
through the device include path (this folder).
Run:  python app.py [--out out.npz] [--repeat N]
"""

import importlib.metadata
import sys
import time
from pathlib import Path

import numpy as np
import slangpy as spy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_common"))
import sample_common as sc  # noqa: E402

N = 512  # training samples
STEPS = 12  # gradient-descent steps
LR = 0.5
TRUE_P = np.array([1.5, 2.0, -0.5, 0.25])
INIT_P = np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32)
X0 = 0.3  # point for the scalar diffPair derivative
# Stock slangpy 0.42.0 returns this scalar diffPair's gradient as 0 (seen on
# an H200); 0.43.0 and later return it.
SLANGPY_VERSION = importlib.metadata.version("slangpy")
SCALAR_DIFFPAIR_GRADIENT_RETURNED = tuple(int(part) for part in SLANGPY_VERSION.split(".")[:2]) >= (0, 43)


def model_ref(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    return p[0] * np.tanh(p[1] * x) + p[2] * x + p[3]


def per_sample_grads_ref(p: np.ndarray, x: np.ndarray, t: np.ndarray, seed: float) -> np.ndarray:
    """d(seed * (model - t)^2)/dp for each sample, shape [N, 4]."""
    th = np.tanh(p[1] * x)
    r = model_ref(p, x) - t
    dmodel = np.stack([th, p[0] * x * (1.0 - th * th), x, np.ones_like(x)], axis=1)
    return dmodel * (2.0 * seed * r)[:, None]


def dmodel_dx_ref(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    th = np.tanh(p[1] * x)
    return p[0] * p[1] * (1.0 - th * th) + p[2]


def main() -> None:
    args = sc.parse_args(__doc__.splitlines()[0])
    t_setup = time.perf_counter()
    device = sc.create_device(include_paths=[HERE])
    # Style 3: a file name resolved through the include paths.
    module = spy.Module.load_from_file(device, "train.slang")

    rng = np.random.default_rng(7)
    x = np.linspace(-2.0, 2.0, N).astype(np.float32)
    t = (model_ref(TRUE_P, x.astype(np.float64)) + 0.05 * rng.standard_normal(N)).astype(np.float32)
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    t_x = spy.Tensor.from_numpy(device, x)
    t_t = spy.Tensor.from_numpy(device, t)
    t_j = spy.Tensor.from_numpy(device, np.arange(4, dtype=np.int32))  # one thread per parameter
    seed = np.full(N, 1.0 / N, dtype=np.float32)  # d(mean loss)/d(per-sample loss)
    x_eval = np.linspace(-1.5, 1.5, 256).astype(np.float32)
    setup_s = time.perf_counter() - t_setup

    def body(ck: sc.Checker) -> None:
        params = spy.Tensor.from_numpy(device, INIT_P)  # [4] floats, read as one float4
        p_ref = INIT_P.astype(np.float64)  # independent numpy trajectory
        err = {k: 0.0 for k in ("fwd", "bwds", "grad", "sum", "sgd")}
        losses = []
        for step in range(STEPS):
            p_now = params.to_numpy().astype(np.float64)
            # Broadcast the parameters to one row per sample so that .bwds writes
            # per-sample gradients ([N, 4]) instead of racing atomics into 4 floats.
            p_b = params.broadcast_to((N, 4)).with_grads()

            # Forward: per-sample loss -> Tensor [N].
            loss = module.sample_loss(p_b, t_x, t_t)
            loss_ref = (model_ref(p_now, x64) - t64) ** 2
            err["fwd"] = max(err["fwd"], ck.check(f"sample_loss/step{step:02d}", {"": (loss.to_numpy(), loss_ref)},
                                                  rtol=1e-4, atol=1e-5, quiet=True))
            losses.append(float(loss_ref.mean()))

            # Backward: seed d(mean)/d(loss_i) = 1/N, gradients land in p_b.grad.
            loss = loss.with_grads()
            loss.grad.copy_from_numpy(seed)
            module.sample_loss.bwds(p_b, t_x, t_t, _result=loss)
            g_ref = per_sample_grads_ref(p_now, x64, t64, 1.0 / N)
            g = p_b.grad.to_numpy()
            err["bwds"] = max(err["bwds"], ck.check(f"sample_loss.bwds/step{step:02d}", {"dparams": (g, g_ref)},
                                                    rtol=1e-3, atol=1e-6, quiet=True))

            # Cross-check: the same gradient via bwd_diff inside a forward kernel,
            # with the un-broadcast [4] tensor passed as one uniform float4.
            g2 = module.sample_loss_grad(params, t_x, t_t, 1.0 / N, _result="numpy")
            err["grad"] = max(err["grad"], ck.check(f"sample_loss_grad/step{step:02d}", {"": (g2, g_ref)},
                                                    rtol=1e-3, atol=1e-6, quiet=True))

            # Reduce per-sample gradients (fixed order -> deterministic) and step.
            g_sum = module.grad_sum(t_j, p_b.grad, N)
            err["sum"] = max(err["sum"], ck.check(f"grad_sum/step{step:02d}", {"": (g_sum.to_numpy(), g_ref.sum(0))},
                                                  rtol=1e-3, atol=1e-5, quiet=True))
            module.sgd_step(params, g_sum, LR)
            p_next_ref = p_now - LR * g_sum.to_numpy().astype(np.float64)
            err["sgd"] = max(err["sgd"], ck.check(f"sgd_step/step{step:02d}", {"": (params.to_numpy(), p_next_ref)},
                                                  rtol=1e-6, atol=1e-6, quiet=True))

            p_ref = p_ref - LR * per_sample_grads_ref(p_ref, x64, t64, 1.0 / N).sum(0)

        ck.say("sample_loss (fwd, Tensor[N,4] bcast)", f"x{STEPS} steps, max_err={err['fwd']:.2e}")
        ck.say("sample_loss.bwds (-> params.grad)", f"x{STEPS} steps, max_err={err['bwds']:.2e}")
        ck.say("sample_loss_grad (bwd_diff in Slang)", f"x{STEPS} steps, max_err={err['grad']:.2e}")
        ck.say("grad_sum (Tensor2D reduce)", f"x{STEPS} steps, max_err={err['sum']:.2e}")
        ck.say("sgd_step (inout Tensor)", f"x{STEPS} steps, max_err={err['sgd']:.2e}")

        final = params.to_numpy()
        ck.check("final_params", {"": (final, p_ref)}, rtol=1e-4, atol=1e-5,
                 note=f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
        if not losses[-1] < 0.5 * losses[0]:
            ck.fail(f"training did not converge: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
        p_final = final.astype(np.float64)
        p4 = spy.float4(*[float(v) for v in final])

        # dy/dx for a batch: x is a Tensor with gradients, result seeded with ones.
        xs = spy.Tensor.from_numpy(device, x_eval).with_grads()
        y = module.model_at(p4, xs)
        y = y.with_grads()
        y.grad.copy_from_numpy(np.ones_like(x_eval))
        module.model_at.bwds(p4, xs, _result=y)
        ck.check("model_at.bwds (x Tensor grads)", {"y": (y.to_numpy(), model_ref(p_final, x_eval.astype(np.float64))),
                                                     "dydx": (xs.grad.to_numpy(), dmodel_dx_ref(p_final, x_eval.astype(np.float64)))},
                 rtol=1e-4, atol=1e-5)

        # dy/dx at a single point with a scalar diffPair (a 0-dimensional call).
        xp = spy.diffPair(X0)
        module.model_at.bwds(p4, xp, spy.diffPair(d=1.0))
        if SCALAR_DIFFPAIR_GRADIENT_RETURNED:
            ck.check("model_at.bwds (scalar diffPair)",
                     {"": (np.float32(xp.grad), dmodel_dx_ref(p_final, np.float64(X0)))}, rtol=1e-4, atol=1e-5)
        else:
            ck.say("model_at.bwds (scalar diffPair)", f"built and run; its gradient is not checked: stock "
                   f"slangpy {SLANGPY_VERSION} returns 0 for it")

    sc.run_app(args, body, setup_seconds=setup_s)


if __name__ == "__main__":
    main()
