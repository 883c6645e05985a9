"""The benchmark report, rendered from the committed H200 results.

Runs of one commit made in separate device calls render as one report; runs
of different commits, or a workload measured twice, are refused rather than
mixed into one table.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from render_report import Report, merge_results  # noqa: E402

RESULTS = ROOT / "bench" / "results"
RUN = RESULTS / "2026-11-29-h200-0fe3dd2"
PARTS = [RUN / "cold_start-synthetic.json", RUN / "cold_start-samples.json", RUN / "slangtorch.json"]


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def ready_median(data: dict, workload: str, config: str) -> float:
    return statistics.median(r[config]["ready_to_all_first_results_s"] for r in data["workloads"][workload]["rounds"])


def rows_of(markdown: str, first_cell: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in markdown.splitlines() if line.startswith(f"| {first_cell} |")]


def test_runs_of_one_commit_render_as_one_report(tmp_path: Path) -> None:
    markdown = tmp_path / "report.md"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "render_report.py"), *map(str, PARTS),
                           "--markdown", str(markdown)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = markdown.read_text()
    synthetic, samples = load(PARTS[0]), load(PARTS[1])
    for data in (synthetic, samples):
        for workload in data["workloads"]:
            row = rows_of(text, workload)[0]
            cold, served = ready_median(data, workload, "cold"), ready_median(data, workload, "spreplay")
            assert row[2] == f"{cold:.2f}"
            assert row[5] == f"{served:.2f}"
            assert row[6] == f"{cold / served:.1f}x"
            assert row[-1] == "yes"
    assert "## (d) slangtorch on the same 30 kernels" in text
    assert "| `--skip-ninja-check` | same file, fresh processes (median of 2) |" in text
    assert "defaults: in 2 of 2 later processes `loadModule` took more than half" in text


def test_runs_of_different_commits_are_refused() -> None:
    older = RESULTS / "2026-11-29-h200-synthetic.json"
    with pytest.raises(ValueError, match="commit is '6b2c42d', not '0fe3dd2'"):
        merge_results([(PARTS[1], load(PARTS[1])), (older, load(older))])


def test_a_workload_measured_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="workload synthetic is in more than one input"):
        merge_results([(PARTS[0], load(PARTS[0])), (PARTS[0], load(PARTS[0]))])


def test_slangtorch_alone_is_not_a_report() -> None:
    with pytest.raises(ValueError, match="no bench/cold_start.py results"):
        merge_results([(PARTS[2], load(PARTS[2]))])


def test_slangtorch_results_from_before_variants_render_as_defaults() -> None:
    data = load(PARTS[0])
    legacy = load(RESULTS / "2026-11-29-h200-slangtorch.json")
    data["slangtorch"] = legacy
    text = Report(merge_results([(PARTS[0], data)])).render()
    cold, warm = rows_of(text, "defaults")
    assert cold[1] == "cold build"
    assert cold[4] == f"{legacy['cold']['load_module_s']:.2f}"
    assert warm[1] == f"same file, fresh processes (median of {len(legacy['warm'])})"
