"""spreplay_add_archive: a CMake build step that turns traces into an archive
and rebuilds it when a trace changes, and only then."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spreplay
from conftest import FIXTURES, inspect_json, run_spreplay

pytestmark = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")), reason="needs cmake and ninja")

PROJECT = """cmake_minimum_required(VERSION 3.20)
project(app NONE)
find_package(spreplay CONFIG REQUIRED)
spreplay_add_archive(app_kernels OUTPUT kernels.sprk TRACES traces/elementwise.capnp ARCHES 90 JOBS 2
                     CACHE "${SPREPLAY_TEST_CACHE}" ALL)
"""


def build(build_dir: Path) -> str:
    proc = subprocess.run(["cmake", "--build", str(build_dir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_archive_is_built_and_rebuilt_when_a_trace_changes(tmp_path: Path) -> None:
    source = tmp_path / "app"
    (source / "traces").mkdir(parents=True)
    trace = source / "traces" / "elementwise.capnp"
    shutil.copyfile(FIXTURES / "elementwise.capnp", trace)
    (source / "CMakeLists.txt").write_text(PROJECT)
    build_dir = tmp_path / "build"
    executable = Path(sys.executable).parent / "spreplay"
    configure = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja", f"-Dspreplay_DIR={spreplay.cmake_dir()}",
         f"-DSPREPLAY_EXECUTABLE={executable}", f"-DSPREPLAY_TEST_CACHE={tmp_path / 'cache'}"],
        capture_output=True, text=True, env={**os.environ})
    assert configure.returncode == 0, configure.stdout + configure.stderr

    assert "spreplay: compiling app_kernels" in build(build_dir)
    archive = build_dir / "kernels.sprk"
    keys = {k["key"] for k in inspect_json(archive)["kernels"]}
    assert keys == {k["key"] for k in inspect_json(trace)["kernels"]}

    assert "spreplay: compiling" not in build(build_dir)  # up to date: nothing to do

    # A re-recorded trace: here the same one with autodiff's kernels merged in.
    merged = tmp_path / "merged.capnp"
    run_spreplay("merge", str(trace), str(FIXTURES / "autodiff.capnp"), "-o", str(merged))
    shutil.move(merged, trace)
    assert "spreplay: compiling app_kernels" in build(build_dir)
    grown = {k["key"] for k in inspect_json(archive)["kernels"]}
    assert grown == keys | {k["key"] for k in inspect_json(FIXTURES / "autodiff.capnp")["kernels"]}
    assert grown > keys


def test_a_missing_argument_is_a_configure_error(tmp_path: Path) -> None:
    source = tmp_path / "app"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(app NONE)\nfind_package(spreplay CONFIG REQUIRED)\n"
        "spreplay_add_archive(app_kernels TRACES a.capnp)\n")
    proc = subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "build"), "-G", "Ninja",
                           f"-Dspreplay_DIR={spreplay.cmake_dir()}"], capture_output=True, text=True)
    assert proc.returncode != 0 and "OUTPUT and TRACES are required" in proc.stderr
