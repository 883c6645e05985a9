"""The table of supported releases (python/spreplay/supported_builds.json)
agrees with the package's slangpy range, the installed native builds, the
tool, and the slangpy functions its patch sets wrap in the installed release."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from spreplay._native import library_dir
from spreplay._slangpy_location import locate_slangpy
from spreplay._slangpy_patches import PATCH_SETS
from spreplay._supported_builds import UnsupportedBuild, select_build, supported_builds
from conftest import ROOT, SLANGPY_VERSION, clean_env, run_spreplay


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def slangpy_requirement(listed: list[str]) -> str:
    (slangpy,) = [r for r in listed if r.startswith("slangpy")]
    return slangpy


def test_installing_spreplay_never_changes_a_supported_slangpy() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = re.fullmatch(r"slangpy>=([0-9.]+),<([0-9.]+)", slangpy_requirement(project["project"]["dependencies"]))
    assert found, "the package's slangpy requirement is not a range >=A,<B"
    versions = [version_tuple(build.slangpy) for build in supported_builds()]
    assert version_tuple(found[1]) <= min(versions)
    assert all(version < version_tuple(found[2]) for version in versions)


def test_a_build_from_source_gets_a_supported_slangpy() -> None:
    """The build compiles against a supported release's slang.h, whatever
    slangpy PyPI has newest: the build requirement is one supported release."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = re.fullmatch(r"slangpy==([0-9.]+)", slangpy_requirement(project["build-system"]["requires"]))
    assert found and found[1] in {build.slangpy for build in supported_builds()}


def test_every_release_is_listed_once_with_a_patch_set() -> None:
    builds = supported_builds()
    assert len({build.slangpy for build in builds}) == len(builds)
    assert {"0.42.0", "0.43.0", "0.43.1"} <= {build.slangpy for build in builds}
    for build in builds:
        assert build.patches in PATCH_SETS, build


def test_the_wheel_holds_a_native_library_and_tool_per_slang_build() -> None:
    for build in supported_builds():
        folder = library_dir() / build.native_subdirectory
        assert (folder / "libspreplay_native.so").is_file(), folder
        assert (folder / "spreplay").is_file(), folder
    assert (library_dir() / "libspreplay_shim.so").is_file()


def test_the_tool_names_its_slang_and_every_supported_build() -> None:
    (here,) = [build for build in supported_builds() if build.slangpy == SLANGPY_VERSION]
    lines = run_spreplay("version").stdout.splitlines()
    assert f"this tool replays with Slang {here.slang}" in lines
    (supports,) = [line for line in lines if line.startswith("supports ")]
    for build in supported_builds():
        assert build.describe() in supports


def test_every_function_the_installed_release_is_patched_at_exists() -> None:
    (here,) = [build for build in supported_builds() if build.slangpy == SLANGPY_VERSION]
    for patch in PATCH_SETS[here.patches]:
        target = importlib.import_module(patch.module)
        for part in patch.function.split("."):
            target = getattr(target, part)
        assert callable(target), f"{patch.module}.{patch.function}"


@pytest.mark.parametrize("slangpy, library, running", [
    ("0.44.0", "libslang-compiler.so.0.2026.16.1", "slangpy 0.44.0 / Slang 2026.16.1"),
    ("0.43.1", "libslang-compiler.so.0.2026.16.1", "slangpy 0.43.1 / Slang 2026.16.1"),
    ("0.43.1", "libslang-compiler.so", "slangpy 0.43.1 / Slang of unknown build (libslang-compiler.so)"),
])
def test_any_other_release_or_slang_build_is_refused_naming_it(slangpy: str, library: str, running: str) -> None:
    """A newer release, a release with another Slang beside it, a Slang built
    from source (its library's name says no build)."""
    with pytest.raises(UnsupportedBuild) as refused:
        select_build(slangpy, Path("/site-packages/slangpy") / library)
    message = str(refused.value)
    assert message.startswith(f"{running} is not supported by spreplay ")
    assert all(build.describe() in message for build in supported_builds())


def test_the_native_library_of_one_slang_build_refuses_another_before_patching() -> None:
    """The library checks Slang's own build tag, from the real library, before
    it configures anything: each build's core, given the other build's Slang."""
    builds = {build.slang: build for build in supported_builds()}
    here = locate_slangpy().slang_library
    other = next(build for slang, build in builds.items() if not here.name.endswith(f".so.0.{slang}"))
    core = library_dir() / other.native_subdirectory / "libspreplay_native.so"
    code = ("import ctypes, sys; core = ctypes.CDLL(sys.argv[1]); core.spreplay_last_error.restype = ctypes.c_char_p; "
            "status = core.spreplay_configure(sys.argv[2].encode(), b'slangpy test', 0); "
            "print(status); print(core.spreplay_last_error().decode())")
    proc = subprocess.run([sys.executable, "-c", code, str(core), str(here)], capture_output=True, text=True,
                          env=clean_env())
    status, message = proc.stdout.splitlines()[:2]
    assert status != "0", proc.stdout
    assert f"but this spreplay library is built for Slang {other.slang}" in message
    assert message.startswith(f"{here} is Slang ")
