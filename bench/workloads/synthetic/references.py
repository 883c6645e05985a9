# SPDX-License-Identifier: Apache-2.0
"""The synthetic workload's inputs and numpy references, shared by the slangpy
app and its slangtorch equivalent."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def mlp_init(rng: np.random.Generator, n_in: int, width: int, depth: int, n_out: int):
    """Flat float32 parameters in the Slang layout, and the float64 layers."""
    sizes = [n_in] + [width] * depth + [n_out]
    layers, flat = [], []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        b = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
        layers.append((f64(w), f64(b)))
        flat += [w.ravel(), b]
    return np.concatenate(flat), layers


def mlp_ref(layers, x: np.ndarray) -> np.ndarray:
    h = f64(x)
    for i, (w, b) in enumerate(layers):
        h = h @ w.T + b
        if i < len(layers) - 1:
            h = np.tanh(h)
    return h


def wave_net_ref(width: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value and d/dx of grads.slang's wave_net<width>."""
    a = np.arange(width, dtype=np.float64) * 0.37
    h = np.tanh(np.sin(a)[None, :] * f64(x)[:, None] + 0.1 * np.cos(a)[None, :])
    w_out = np.cos(1.3 * a)[None, :]
    y = (w_out * h).sum(1) / width
    dydx = (w_out * (1.0 - h * h) * np.sin(a)[None, :]).sum(1) / width
    return y, dydx


def softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(f64(x) - f64(x).max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


N = 4096  # elements per elementwise call
NB = 1024  # batch of the generic calls
MATVECS = [(2, 3), (3, 4), (4, 4)]
HEAVY_MLPS = [(3, 45, 5, 3), (4, 64, 4, 4), (8, 32, 6, 2), (2, 48, 5, 1), (6, 40, 5, 6)]
WAVE_WIDTHS_BWDS = [16, 64, 128]
FIT_PARAMS = np.array([1.5, 2.0, -0.5, 0.25], dtype=np.float32)
DIST_TARGET = np.array([0.5, -0.25, 1.0], dtype=np.float32)


@dataclass
class Inputs:
    """Every input of one pass; the same in every app that runs the workload."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    v3a: np.ndarray
    v3b: np.ndarray
    t: np.ndarray
    ua: np.ndarray
    ub: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    ic: np.ndarray
    xb: np.ndarray
    coeffs3: np.ndarray
    coeffs6: np.ndarray
    matvecs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]
    logits4: np.ndarray
    logits10: np.ndarray
    rows32: np.ndarray
    # (In, Width, Depth, Out), flat parameters, x, reference output
    mlps: list[tuple[tuple[int, int, int, int], np.ndarray, np.ndarray, np.ndarray]]


def make_inputs(seed: int = 30) -> Inputs:
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    v3a, v3b = (rng.standard_normal((N, 3)).astype(np.float32) for _ in range(2))
    t = rng.uniform(0.0, 1.0, N).astype(np.float32)
    ua, ub = (rng.integers(0, 1 << 31, N, dtype=np.uint32) for _ in range(2))
    ia, ib, ic = (rng.integers(-2000, 2000, N, dtype=np.int32) for _ in range(3))
    xb = rng.uniform(-1.0, 1.0, NB).astype(np.float32)
    matvecs = {(n, m): (rng.standard_normal((n, m)).astype(np.float32),
                        rng.standard_normal((NB, m)).astype(np.float32)) for n, m in MATVECS}
    logits4 = rng.standard_normal((NB, 4)).astype(np.float32)
    logits10 = rng.standard_normal((NB, 10)).astype(np.float32)
    rows32 = rng.standard_normal((NB, 32)).astype(np.float32)
    mlps = []
    for dims in HEAVY_MLPS:
        params, layers = mlp_init(rng, *dims)
        x = rng.uniform(-1.0, 1.0, (NB, dims[0])).astype(np.float32)
        mlps.append((dims, params, x, mlp_ref(layers, x)))
    return Inputs(a, b, c, v3a, v3b, t, ua, ub, ia, ib, ic, xb,
                  coeffs3=np.array([0.5, -1.0, 0.25], dtype=np.float32),
                  coeffs6=np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6], dtype=np.float32),
                  matvecs=matvecs, logits4=logits4, logits10=logits10, rows32=rows32, mlps=mlps)
