"""The Dask recipe of docs/sharded-compile.md, in Dask's local mode: shards
compiled by worker processes and merged are byte-identical to one compile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT, clean_env, inspect_json, run_spreplay

RECIPE = ROOT / "docs" / "recipes" / "dask_compile.py"
TRACES = [str(FIXTURES / "elementwise.capnp"), str(FIXTURES / "autodiff.capnp")]


def test_the_dask_recipe_builds_what_one_compile_builds(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    merged = tmp_path / "out" / "kernels.sprk"
    merged.parent.mkdir()
    proc = subprocess.run([sys.executable, str(RECIPE), *TRACES, "-o", str(merged), "--shards", "3",
                           "--cache", str(cache), "--arch", "90"],
                          env=clean_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    recorded = {k["key"] for t in TRACES for k in inspect_json(Path(t))["kernels"]}
    assert f"{len(recorded)} kernels from 3 shards" in proc.stdout
    assert sorted(p.name for p in merged.parent.iterdir()) == ["kernels.sprk"]  # shards cleaned up

    single = tmp_path / "single.sprk"
    run_spreplay("compile", *TRACES, "-o", str(single), "--arch", "90", "--cache", str(cache))
    assert merged.read_bytes() == single.read_bytes()
