"""The first-pass profile behind docs/benchmarks.md, read from the committed
H200 samples of an elementwise process served by spreplay."""

from __future__ import annotations

import lzma
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PROFILE = ROOT / "bench" / "results" / "2026-12-02-h200-bench-00ad8ff" / "elementwise-spreplay-pyspy.txt.xz"
TOOL = ROOT / "bench" / "first_pass_profile.py"


def shares(tmp_path: Path) -> dict[str, int]:
    stacks = tmp_path / "stacks.txt"
    stacks.write_bytes(lzma.decompress(PROFILE.read_bytes()))
    out = subprocess.run([sys.executable, str(TOOL), str(stacks)], capture_output=True, text=True, check=True).stdout
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| ") and "%" in line]
    return {name.strip(): int(share.strip().rstrip("%")) for name, share in rows}


def test_slangs_layouts_and_lookups_outweigh_what_spreplay_serves(tmp_path: Path) -> None:
    found = shares(tmp_path)
    assert 98 <= sum(found.values()) <= 102  # rounded shares of one whole
    assert max(found, key=found.get) == "call-data build: link_program"
    layouts_and_lookups = sum(found[name] for name in ("call-data build: link_program",
                                                       "call-data build: entry point layout",
                                                       "call-data build: type lookups"))
    served = found["call-data build: wrapper front end"] + found["app's module loads"]
    assert layouts_and_lookups >= 50
    assert served <= 15


def test_a_profile_without_an_apps_first_pass_is_refused(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks.txt"
    stacks.write_text("<module> (phase_probe.py:41);import_module (importlib/__init__.py:90) 12\n")
    proc = subprocess.run([sys.executable, str(TOOL), str(stacks)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "no samples in an app's main() after device creation" in proc.stderr
