"""Installs the native Slang hooks, once per process, before slangpy loads."""

from __future__ import annotations

import sys

from ._native import Native
from ._slangpy_location import locate_slangpy

_native: Native | None = None


class TooLate(RuntimeError):
    pass


def install(verbose: bool = False) -> Native:
    """Loads the native core and hooks Slang. Must run before `import slangpy`."""
    global _native
    if _native is not None:
        return _native
    if "slangpy" in sys.modules:
        raise TooLate(
            "spreplay must be activated before slangpy is imported; "
            "set SLANGPY_KERNELS / SLANGPY_RECORD in the environment instead of in code"
        )
    install_info = locate_slangpy()
    native = Native()
    native.install_hooks(install_info.slang_library, f"slangpy {install_info.version}", verbose)
    _native = native
    return native


def native() -> Native | None:
    return _native
