"""`spreplay compile` replays with the Slang a trace was recorded with: a trace
of another Slang build is refused in one line, and `--slangpy DIR` names the
slangpy to replay with, installed anywhere (here, another release's
virtualenv)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spreplay._slangpy_location import locate_slangpy
from spreplay._supported_builds import supported_builds
from spreplay._tool import tool_binary
from conftest import ROOT, SLANGPY_VERSION, clean_env, inspect_json, run_spreplay, slangpy_venv

HERE = next(build for build in supported_builds() if build.slangpy == SLANGPY_VERSION)
OTHER_SLANG = next(build for build in supported_builds() if build.slang != HERE.slang)
HERE_LIBRARY_NAME = locate_slangpy().slang_library.name


def fixture_of(release: str) -> Path:
    return ROOT / "tests" / "fixtures" / "h200" / f"slangpy-{release}" / "elementwise.capnp"


@pytest.fixture(scope="module")
def other_site_packages() -> Path:
    (site,) = slangpy_venv(OTHER_SLANG.slangpy).glob("lib/python3*/site-packages")
    return site


def test_a_trace_of_another_slang_build_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "kernels.sprk"
    proc = run_spreplay("compile", str(fixture_of(OTHER_SLANG.slangpy)), "-o", str(out), "--no-cache", check=False)
    assert proc.returncode != 0 and not out.exists()
    (line,) = proc.stderr.splitlines()
    assert f"was recorded with slangpy {OTHER_SLANG.slangpy} slang {OTHER_SLANG.slang}" in line, line
    assert f"replays with Slang {HERE.slang}" in line and "--slangpy DIR" in line


def test_slangpy_option_replays_with_the_named_slangpy(tmp_path: Path, other_site_packages: Path) -> None:
    out = tmp_path / "kernels.sprk"
    trace = fixture_of(OTHER_SLANG.slangpy)
    proc = run_spreplay("--slangpy", str(other_site_packages), "compile", str(trace), "-o", str(out), "--arch",
                        "90", "--no-cache")
    kernels = {kernel["key"] for kernel in inspect_json(trace)["kernels"]}
    assert proc.stderr.count("PTX identical") == len(kernels), proc.stderr
    assert {entry["key"] for entry in inspect_json(out)["kernels"]} == kernels


def test_slangpy_option_names_what_it_needs(tmp_path: Path) -> None:
    proc = run_spreplay("--slangpy", str(tmp_path), "version", check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip() == f"spreplay: {tmp_path} holds no slangpy package"


def test_the_tool_opens_the_slang_library_the_console_script_names(tmp_path: Path) -> None:
    """By path, not by file name: a release wheel's tool would otherwise find
    the slangpy beside spreplay through its RPATH first, whatever --slangpy
    named (two releases of one Slang build have the same file name)."""
    named = tmp_path / HERE_LIBRARY_NAME
    proc = subprocess.run([str(tool_binary(HERE)), "compile", str(fixture_of(SLANGPY_VERSION)), "-o",
                           str(tmp_path / "kernels.sprk"), "--no-cache"],
                          env={**clean_env(), "SPREPLAY_SLANG_LIBRARY": str(named)}, capture_output=True, text=True)
    assert proc.returncode != 0
    assert str(named) in proc.stderr and "Slang is missing" in proc.stderr, proc.stderr
