"""Which slangpy and Slang builds this spreplay serves: the one seam between
spreplay and slangpy's releases (supported_builds.json).

Everything that depends on the build asks here: the native library and tool
to load (one per Slang build, each compiled against that build's slang.h),
the slangpy patches to apply, and the refusal of every other build.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

_TABLE = Path(__file__).resolve().parent / "supported_builds.json"
# slangpy's wheel names its Slang library after the build it bundles.
_SLANG_LIBRARY_PREFIX = "libslang-compiler.so.0."


@dataclass(frozen=True)
class SupportedBuild:
    slangpy: str
    slang: str  # Slang's build tag, as spGetBuildTagString returns it
    patches: str  # the set of slangpy patches (_slangpy_patches.PATCH_SETS)

    @property
    def native_subdirectory(self) -> str:
        """Where, under spreplay/_lib, this Slang build's library and tool are."""
        return f"slang-{self.slang}"

    def describe(self) -> str:
        return f"slangpy {self.slangpy} / Slang {self.slang}"


class UnsupportedBuild(RuntimeError):
    """The process runs a slangpy or Slang this spreplay was not built for."""


@functools.cache
def supported_builds() -> tuple[SupportedBuild, ...]:
    table = json.loads(_TABLE.read_text())
    return tuple(SupportedBuild(b["slangpy"], b["slang"], b["patches"]) for b in table["builds"])


def slang_build_of_library(library: Path) -> str | None:
    """The Slang build a slangpy wheel's library file name says, or None for
    a name that says none (a Slang built from source, say)."""
    name = library.name
    return name[len(_SLANG_LIBRARY_PREFIX):] if name.startswith(_SLANG_LIBRARY_PREFIX) else None


def supported_list() -> str:
    return ", ".join(build.describe() for build in supported_builds())


def select_build(slangpy_version: str, slang_library: Path) -> SupportedBuild:
    """The supported build this process runs, or UnsupportedBuild naming it,
    the supported ones and what to do. The native library checks the Slang
    build once more, from Slang itself, before it patches anything."""
    slang = slang_build_of_library(slang_library)
    for build in supported_builds():
        if build.slangpy == slangpy_version and build.slang == slang:
            return build
    running = f"slangpy {slangpy_version} / Slang {slang or f'of unknown build ({slang_library.name})'}"
    from . import __version__

    raise UnsupportedBuild(
        f"{running} is not supported by spreplay {__version__} "
        f"(it supports {supported_list()}): install one of those slangpy releases, or a spreplay "
        f"release that supports yours")
