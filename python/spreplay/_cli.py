"""The `spreplay` console script: runs the native tool installed with the package."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._native import library_dir


def main() -> None:
    binary = library_dir() / "spreplay"
    if not binary.exists():
        sys.exit(f"spreplay: {binary} is missing: reinstall spreplay")
    # The tool replays kernels with the Slang of the slangpy installed here,
    # which is what keeps an archive's kernels identical to what slangpy builds.
    try:
        from ._slangpy_location import locate_slangpy

        slang_dir = str(locate_slangpy().package_dir)
        paths = [slang_dir, *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep))]
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
    except Exception as error:  # the tool itself explains a missing Slang
        print(f"spreplay: warning: {error}", file=sys.stderr)
    # Without a system CUDA toolkit, `make setup` puts CUDA's compilers from
    # PyPI in the virtualenv; point the tool at them.
    bundled = Path(sys.prefix) / "cuda"
    system = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    if not (system / "bin" / "ptxas").exists() and (bundled / "bin" / "ptxas").exists():
        os.environ["CUDA_HOME"] = str(bundled)
    os.execv(binary, [str(binary), *sys.argv[1:]])
