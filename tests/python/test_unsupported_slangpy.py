"""A slangpy release outside the supported set, installed from PyPI in a
virtualenv of its own with the spreplay wheel beside it: recording and
serving are refused in one line before anything is loaded or patched, the
app runs exactly as stock, and the tool refuses to replay with its Slang."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spreplay._supported_builds import supported_builds
from conftest import FIXTURES, ROOT, clean_env, run_spreplay, slangpy_venv

# The newest release before the supported range.
UNSUPPORTED = "0.41.0"
APP = ROOT / "tests" / "python" / "cpu_call_sites.py"


@pytest.fixture(scope="module")
def python_of_unsupported_slangpy() -> Path:
    assert UNSUPPORTED not in {build.slangpy for build in supported_builds()}
    return slangpy_venv(UNSUPPORTED) / "bin" / "python"


def run_app(python: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), str(APP)], env=clean_env(**env), capture_output=True, text=True,
                          cwd=ROOT / "samples" / "autodiff")


def spreplay_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "spreplay" in line]


def assert_refused_in_one_line(stderr: str) -> None:
    (line,) = spreplay_lines(stderr)
    assert line.startswith(f"spreplay: not active, the app runs as stock: slangpy {UNSUPPORTED} / Slang "), line
    assert " is not supported by spreplay " in line
    for build in supported_builds():
        assert f"slangpy {build.slangpy} / Slang {build.slang}" in line
    assert "install one of those slangpy releases" in line


def test_recording_is_refused_and_the_app_runs_as_stock(python_of_unsupported_slangpy: Path,
                                                        tmp_path: Path) -> None:
    stock = run_app(python_of_unsupported_slangpy)
    trace = tmp_path / "trace.capnp"
    recording = run_app(python_of_unsupported_slangpy, SLANGPY_RECORD=str(trace))
    assert recording.returncode == stock.returncode
    assert recording.stdout == stock.stdout
    assert not spreplay_lines(stock.stderr)
    assert_refused_in_one_line(recording.stderr)
    assert not trace.exists()
    assert list(tmp_path.iterdir()) == []


def test_serving_is_refused_and_the_app_runs_as_stock(python_of_unsupported_slangpy: Path, tmp_path: Path) -> None:
    archive = tmp_path / "kernels.sprk"
    run_spreplay("compile", str(FIXTURES / "elementwise.capnp"), "-o", str(archive), "--arch", "90")
    stock = run_app(python_of_unsupported_slangpy)
    for strict in ({}, {"SLANGPY_KERNELS_STRICT": "1"}):
        served = run_app(python_of_unsupported_slangpy, SLANGPY_KERNELS=str(archive), **strict)
        assert served.returncode == stock.returncode
        assert served.stdout == stock.stdout
        assert_refused_in_one_line(served.stderr)


def test_the_tool_refuses_to_replay_with_that_slang(python_of_unsupported_slangpy: Path, tmp_path: Path) -> None:
    out = tmp_path / "kernels.sprk"
    proc = subprocess.run([str(python_of_unsupported_slangpy), "-m", "spreplay", "compile",
                           str(FIXTURES / "elementwise.capnp"), "-o", str(out)],
                          env=clean_env(), capture_output=True, text=True)
    assert proc.returncode != 0 and not out.exists()
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"spreplay: slangpy {UNSUPPORTED} / Slang "), line
    assert "is not supported by spreplay" in line
    # What needs no Slang still works.
    for command in (["version"], ["inspect", str(FIXTURES / "elementwise.capnp")]):
        answered = subprocess.run([str(python_of_unsupported_slangpy), "-m", "spreplay", *command],
                                  env=clean_env(), capture_output=True, text=True)
        assert answered.returncode == 0, answered.stderr
