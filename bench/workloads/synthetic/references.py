# SPDX-License-Identifier: Apache-2.0
"""numpy references for the synthetic workload's kernels, shared by the slangpy
app and its slangtorch equivalent."""

from __future__ import annotations

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
