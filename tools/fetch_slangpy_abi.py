#!/usr/bin/env python3
"""Fetches what building spreplay for one slangpy release needs from its
wheel: Slang's headers and the Slang library's file (by whose name the tool
loads it), into DEST/slangpy. Nothing of slangpy is installed.

    tools/fetch_slangpy_abi.py VERSION DEST [--wheel-dir DIR]

--wheel-dir (or SPREPLAY_SLANGPY_WHEELS) is searched first for the wheel, so
a build without a package registry can be given it; otherwise pip downloads
it from PyPI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def find_wheel(version: str, directories: list[Path], scratch: Path) -> Path:
    # Linux x86-64 wheels only: the headers are the same in all, but the
    # library's name (which says the Slang build) is Linux's.
    pattern = f"slangpy-{version}-*manylinux*x86_64.whl"
    for directory in directories:
        found = sorted(directory.glob(pattern))
        if found:
            return found[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--platform", "manylinux_2_34_x86_64", "--python-version", "3.12", "--implementation", "cp",
                    f"slangpy=={version}", "-d", str(scratch)], check=True)
    return next(scratch.glob(pattern))


def extract(wheel: Path, destination: Path) -> None:
    package = destination / "slangpy"
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            wanted = member.startswith("slangpy/include/") or (
                member.startswith("slangpy/libslang-compiler.so") and "/" not in member[len("slangpy/"):])
            if wanted and not member.endswith("/"):
                archive.extract(member, destination)
    if not (package / "include" / "slang.h").exists() or not list(package.glob("libslang-compiler.so*")):
        raise SystemExit(f"fetch_slangpy_abi: {wheel.name} holds no slang.h or libslang-compiler.so")
    (package / "__init__.py").write_text(f"# the Slang of slangpy {wheel.name}, for building spreplay only\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version")
    parser.add_argument("destination", type=Path)
    parser.add_argument("--wheel-dir", type=Path, action="append", default=[])
    options = parser.parse_args()
    directories = options.wheel_dir + [Path(p) for p in os.environ.get("SPREPLAY_SLANGPY_WHEELS", "").split(":") if p]
    marker = options.destination / "slangpy" / "__init__.py"
    if marker.exists():
        return 0
    options.destination.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=options.destination) as scratch:
        wheel = find_wheel(options.version, directories, Path(scratch))
        staging = Path(scratch) / "extracted"
        extract(wheel, staging)
        # One rename, so that an interrupted fetch never looks complete.
        (staging / "slangpy").rename(options.destination / "slangpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
