# SPDX-License-Identifier: Apache-2.0
"""Run the sample apps under samples/ with stock slangpy (no spreplay).

Each app runs in a subprocess on the device named by SPREPLAY_SAMPLE_DEVICE
(default: cpu), must exit 0 and print "OK <checksum>", and a second run (with
--repeat 2) must save bit-identical output arrays.

If slangpy cannot execute kernels on that device at all (slangpy 0.43.x's CPU
device reports zero compute dispatch groups and refuses every call), the tests
are skipped with the reason; set SPREPLAY_SAMPLE_DEVICE=cuda on a GPU machine.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import clean_env

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
APPS = ["elementwise", "generic_mlp", "autodiff", "local_modules"]
DEVICE = os.environ.get("SPREPLAY_SAMPLE_DEVICE", "cpu")
TIMEOUT_S = 300

PROBE = r"""
import sys, numpy as np, slangpy as spy
dev = spy.create_device({"cpu": spy.DeviceType.cpu, "cuda": spy.DeviceType.cuda,
                         "vulkan": spy.DeviceType.vulkan}[sys.argv[1]])
m = spy.Module.load_from_source(dev, "spreplay_probe", "float inc(float a) { return a + 1.0; }")
r = m.inc(np.arange(4, dtype=np.float32), _result="numpy")
assert r.tolist() == [1.0, 2.0, 3.0, 4.0], r
"""


def _env() -> dict:
    # Nothing records or replaces kernels: this is the stock run.
    return clean_env(SPREPLAY_SAMPLE_DEVICE=DEVICE, PYTHONUNBUFFERED="1")


@pytest.fixture(scope="module")
def device_usable():
    try:
        import slangpy
        version = getattr(slangpy, "__version__", "?")
    except ImportError as e:
        pytest.skip(f"slangpy not importable: {e}")
    p = subprocess.run([sys.executable, "-c", PROBE, DEVICE], env=_env(), capture_output=True,
                       text=True, timeout=TIMEOUT_S)
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip() and "WARN" not in ln]
        why = next((ln for ln in lines if "Error" in ln or "error" in ln), lines[-1] if lines else "")
        pytest.skip(f"slangpy {version} cannot run a kernel on the {DEVICE!r} device here "
                    f"(rc={p.returncode}): {why.strip()}")


def _run(app: str, out: Path, *extra: str) -> str:
    cmd = [sys.executable, str(SAMPLES / app / "app.py"), "--out", str(out), *extra]
    # From the app's own folder, as its users run it (local_modules finds its modules there).
    p = subprocess.run(cmd, cwd=str(SAMPLES / app), env=_env(), capture_output=True, text=True,
                       timeout=TIMEOUT_S)
    log = f"$ {' '.join(cmd)}\n--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}"
    assert p.returncode == 0, log
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert last.startswith("OK "), log
    assert out.is_file(), log
    return last


@pytest.mark.parametrize("app", APPS)
def test_sample_stock(app: str, tmp_path: Path, device_usable) -> None:
    a, b = tmp_path / "run1.npz", tmp_path / "run2.npz"
    ok1 = _run(app, a)
    ok2 = _run(app, b, "--repeat", "2")  # repeat re-runs every call site in-process
    assert ok1 == ok2, f"checksums differ between runs: {ok1!r} vs {ok2!r}"

    with np.load(a) as za, np.load(b) as zb:
        assert len(za.files) > 0
        assert sorted(za.files) == sorted(zb.files)
        for key in za.files:
            x, y = za[key], zb[key]
            assert x.dtype == y.dtype and x.shape == y.shape, key
            assert x.tobytes() == y.tobytes(), f"{app}: output {key!r} is not bit-identical between runs"
