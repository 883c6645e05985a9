"""The installed tool loads the Slang of the slangpy beside it at run time
and links none of it: without that slangpy it still answers the commands that
need no Slang, and a compile says what to install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from spreplay._native import library_dir
from spreplay._tool import build_for_tool, slangpy_for_tool
from conftest import FIXTURES, clean_env


@pytest.fixture(scope="module")
def tool_without_slangpy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed tool copied with the libraries it carries, into a
    site-packages of its own that has no slangpy."""
    site = tmp_path_factory.mktemp("site-packages")
    installed = library_dir().parent
    shutil.copytree(installed / "_lib", site / "spreplay" / "_lib")
    bundled = installed.parent / "spreplay.libs"  # a release wheel's (auditwheel)
    if bundled.is_dir():
        shutil.copytree(bundled, site / "spreplay.libs")
    # The tool of this environment's slangpy's Slang build.
    return site / "spreplay" / "_lib" / build_for_tool(slangpy_for_tool()).native_subdirectory / "spreplay"


def run(tool: Path, *args: str) -> subprocess.CompletedProcess:
    env = clean_env()
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run([str(tool), *args], env=env, capture_output=True, text=True)


def test_the_tool_links_no_slang(tool_without_slangpy: Path) -> None:
    proc = run(tool_without_slangpy, "version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("spreplay ")
    assert run(tool_without_slangpy, "inspect", str(FIXTURES / "elementwise.capnp")).returncode == 0


def test_a_compile_without_slangpy_says_what_to_install(tool_without_slangpy: Path, tmp_path: Path) -> None:
    out = tmp_path / "kernels.sprk"
    proc = run(tool_without_slangpy, "compile", str(FIXTURES / "elementwise.capnp"), "-o", str(out), "--no-cache")
    assert proc.returncode != 0 and not out.exists()
    (message,) = proc.stderr.splitlines()
    assert message.startswith("spreplay compile: Slang is missing: ") and "libslang-compiler.so." in message
    assert "installed beside spreplay or named with --slangpy DIR" in message
