"""Where the native `spreplay` tool is, and the environment it runs in."""

from __future__ import annotations

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
    # Without a system CUDA toolkit, `make setup` puts CUDA's compilers from
    # PyPI in the virtualenv; point the tool at them.
    bundled = Path(sys.prefix) / "cuda"
    system = Path(env.get("CUDA_HOME", "/usr/local/cuda"))
    if not (system / "bin" / "ptxas").exists() and (bundled / "bin" / "ptxas").exists():
        env["CUDA_HOME"] = str(bundled)
    return env
