"""Where the native `spreplay` tool is, and the environment it runs in."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from ._native import library_dir


class ToolMissing(RuntimeError):
    """The native tool is not installed with this package."""


def tool_binary() -> Path:
    binary = library_dir() / "spreplay"
    if not binary.exists():
        raise ToolMissing(f"spreplay: {binary} is missing: reinstall spreplay")
    return binary


def tool_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) as the tool needs it."""
    env = dict(os.environ if base is None else base)
    # The tool replays kernels with the Slang of the slangpy installed here,
    # which is what keeps an archive's kernels identical to what slangpy builds.
    try:
        from ._slangpy_location import locate_slangpy

        slang_dir = str(locate_slangpy().package_dir)
        paths = [slang_dir, *filter(None, env.get("LD_LIBRARY_PATH", "").split(os.pathsep))]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
    except Exception as error:  # the tool itself explains a missing Slang
        print(f"spreplay: warning: {error}", file=sys.stderr)
    # A CUDA toolkit wins; without one, CUDA's compilers from NVIDIA's PyPI
    # wheels (`pip install "spreplay[compile]"`), as they are installed.
    system = Path(env.get("CUDA_HOME", "/usr/local/cuda"))
    if not (system / "bin" / "ptxas").exists() and (wheels := pypi_cuda()) is not None:
        env["CUDA_HOME"] = str(wheels)
    return env


def pypi_cuda() -> Path | None:
    """The CUDA 13 that NVIDIA's wheels install (nvidia/cu13: bin/ptxas,
    lib/libnvrtc.so.13, include/), if they are installed here."""
    spec = importlib.util.find_spec("nvidia")
    for location in (spec.submodule_search_locations or []) if spec else []:
        root = Path(location) / "cu13"
        if (root / "bin" / "ptxas").exists():
            return root
    return None
