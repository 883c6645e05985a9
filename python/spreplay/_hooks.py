"""Installs the native Slang hooks, once per process, before slangpy loads."""

from __future__ import annotations

import sys

from ._native import Native
from ._slangpy_location import locate_slangpy
from ._supported_builds import SupportedBuild, select_build

_native: Native | None = None
_build: SupportedBuild | None = None


class TooLate(RuntimeError):
    pass


def install(verbose: bool = False) -> Native:
    """Loads the native core and hooks Slang. Must run before `import slangpy`.
    Raises UnsupportedBuild, having loaded and patched nothing, when the
    process runs a slangpy or Slang this spreplay does not support."""
    global _native, _build
    if _native is not None:
        return _native
    if "slangpy" in sys.modules:
        raise TooLate(
            "spreplay must be activated before slangpy is imported; "
            "set SLANGPY_KERNELS / SLANGPY_RECORD in the environment instead of in code"
        )
    install_info = locate_slangpy()
    build = select_build(install_info.version, install_info.slang_library)
    native = Native(build)
    native.install_hooks(install_info.slang_library, f"slangpy {install_info.version}", verbose)
    _native, _build = native, build
    return native


def native() -> Native | None:
    return _native


def build() -> SupportedBuild:
    """The supported build the hooks were installed for (install first)."""
    if _build is None:
        raise RuntimeError("spreplay's hooks are not installed")
    return _build
