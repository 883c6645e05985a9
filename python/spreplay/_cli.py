"""The `spreplay` console script: runs the native tool installed with the package."""

from __future__ import annotations

import os
import sys

from ._native import library_dir


def main() -> None:
    binary = library_dir() / "spreplay"
    if not binary.exists():
        sys.exit(f"spreplay: {binary} is missing: reinstall spreplay")
    os.execv(binary, [str(binary), *sys.argv[1:]])
