# SPDX-License-Identifier: Apache-2.0
"""Generic MLP (width/depth as Slang generic parameters) plus vector/matrix generics.

mlp.slang (which imports linalg.slang) is loaded BY MODULE NAME, with this
folder added to the device's include paths.
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

# (In, Width, Depth, Out, batch): Depth = number of tanh hidden layers.
MLP_CONFIGS = [
    (2, 16, 2, 1, 4096),
    (4, 8, 3, 2, 2048),
    (8, 32, 1, 4, 512),
    (3, 45, 5, 3, 1024),  # the heavy one: 5 hidden layers of width 45
]
NB = 2048  # batch for the vector/matrix generics


def mlp_param_count(n_in: int, width: int, depth: int, n_out: int) -> int:
    dense = lambda i, o: o * i + o  # noqa: E731
    return dense(n_in, width) + (depth - 1) * dense(width, width) + dense(width, n_out)


def mlp_init(rng: np.random.Generator, n_in: int, width: int, depth: int, n_out: int):
    """Returns (flat float32 params in the Slang layout, list of float64 (W, b))."""
    sizes = [n_in] + [width] * depth + [n_out]
    layers, flat = [], []
    for fi, fo in zip(sizes[:-1], sizes[1:]):
        W = (rng.standard_normal((fo, fi)) / np.sqrt(fi)).astype(np.float32)
        b = (0.1 * rng.standard_normal(fo)).astype(np.float32)
        layers.append((W.astype(np.float64), b.astype(np.float64)))
        flat += [W.ravel(), b]
    params = np.concatenate(flat)
    assert params.size == mlp_param_count(n_in, width, depth, n_out)
    return params, layers


def mlp_ref(layers, x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float64)
    for i, (W, b) in enumerate(layers):
        h = h @ W.T + b
        if i < len(layers) - 1:
            h = np.tanh(h)
    return h


def main() -> None:
    args = sc.parse_args(__doc__.splitlines()[0])
    t_setup = time.perf_counter()
    device = sc.create_device(include_paths=[HERE])
    # Style 2: load by module name, found through the include path; the
    # `import linalg;` inside mlp.slang is found the same way.
    module = spy.Module.load_from_module(device, device.load_module("mlp"))

    rng = np.random.default_rng(2024)
    mlps = []
    for n_in, width, depth, n_out, batch in MLP_CONFIGS:
        params, layers = mlp_init(rng, n_in, width, depth, n_out)
        x = rng.uniform(-1.0, 1.0, (batch, n_in)).astype(np.float32)
        mlps.append(dict(
            name=f"mlp_eval<{n_in}, {width}, {depth}, {n_out}>",
            params=spy.Tensor.from_numpy(device, params),
            x=x,
            ref=mlp_ref(layers, x),
        ))

    m33 = rng.standard_normal((3, 3)).astype(np.float32)
    v3 = rng.standard_normal((NB, 3)).astype(np.float32)
    b3 = rng.standard_normal(3).astype(np.float32)
    t_v3 = spy.Tensor.empty(device, shape=(NB,), dtype="float3")
    t_v3.copy_from_numpy(v3)
    m24 = rng.standard_normal((2, 4)).astype(np.float32)
    v4 = rng.standard_normal((NB, 4)).astype(np.float32)
    b2 = rng.standard_normal(2).astype(np.float32)
    m44_batch = rng.standard_normal((NB, 4, 4)).astype(np.float32)  # one matrix per element
    b4 = rng.standard_normal(4).astype(np.float32)
    v2 = rng.standard_normal((NB, 2)).astype(np.float32)
    t_v4 = spy.Tensor.empty(device, shape=(NB,), dtype="float4")
    t_v4.copy_from_numpy(v4)
    oa = rng.standard_normal((NB, 3)).astype(np.float32)
    ob = rng.standard_normal((NB, 3)).astype(np.float32)
    d = lambda a: a.astype(np.float64)  # noqa: E731
    setup_s = time.perf_counter() - t_setup

    def body(ck: sc.Checker) -> None:
        # MLP instantiations: explicit generic arguments in the function name.
        for m in mlps:
            r = module[m["name"]](m["params"], m["x"], _result="numpy")
            ck.check(m["name"], {"": (r.reshape(m["ref"].shape), m["ref"])}, rtol=1e-4, atol=2e-5)

        # affine<3,3>: one uniform matrix (numpy [3,3]) applied to a float3 Tensor.
        r = module["affine<3, 3>"](m33, t_v3, b3, _result="numpy")
        ck.check("affine<3, 3>", {"": (r, d(v3) @ d(m33).T + d(b3))}, rtol=1e-5, atol=1e-5)

        # affine<2,4>: uniforms passed as slangpy float2x4 / float2 values.
        r = module["affine<2, 4>"](spy.float2x4(m24.ravel().tolist()), v4,
                                    spy.float2(*b2.tolist()), _result="numpy")
        ck.check("affine<2, 4>", {"": (r, d(v4) @ d(m24).T + d(b2))}, rtol=1e-5, atol=1e-5)

        # affine<4,4>: a different matrix per element (numpy [NB,4,4] is vectorized).
        r = module["affine<4, 4>"](m44_batch, v4, b4, _result="numpy")
        ref = np.einsum("nij,nj->ni", d(m44_batch), d(v4)) + d(b4)
        ck.check("affine<4, 4>", {"": (r, ref)}, rtol=1e-5, atol=1e-5)

        # sq_norm<2>: explicit generic argument, numpy [NB,2] input.
        r = module["sq_norm<2>"](v2, _result="numpy")
        ck.check("sq_norm<2>", {"": (r, (d(v2) ** 2).sum(1))}, rtol=1e-5, atol=1e-5)

        # l1_norm: no explicit generic argument; slangpy infers N = 4 from the
        # float4 Tensor element type. (A separate function from sq_norm on purpose:
        # slangpy 0.42 resolved `module.f` to an earlier `module["f<2>"]`.)
        r = module.l1_norm(t_v4, _result="numpy")
        ck.check("l1_norm (N=4 inferred)", {"": (r, np.abs(d(v4)).sum(1))}, rtol=1e-5, atol=1e-5)

        # outer<3>: matrix-valued result -> numpy [NB,3,3].
        r = module["outer<3>"](oa, ob, _result="numpy")
        ck.check("outer<3>", {"": (r.reshape(NB, 3, 3), d(oa)[:, :, None] * d(ob)[:, None, :])}, rtol=1e-6, atol=1e-6)

    sc.run_app(args, body, setup_seconds=setup_s)


if __name__ == "__main__":
    main()
