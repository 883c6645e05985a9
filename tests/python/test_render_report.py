"""The benchmark report, rendered from the committed H200 results.

Runs of one commit on one machine (one per workload group, and slangtorch)
render as one report; runs of different commits, or a workload measured
twice, are refused rather than mixed into one table.
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


def render(tmp_path: Path, *inputs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "render_report.py"), *map(str, inputs),
                           "--markdown", str(tmp_path / "report.md")], capture_output=True, text=True)


def test_runs_of_one_commit_render_as_one_report(tmp_path: Path) -> None:
    proc = render(tmp_path, *PARTS)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "report.md").read_text()
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


def test_runs_of_different_commits_are_refused(tmp_path: Path) -> None:
    older = RESULTS / "2026-11-29-h200-synthetic.json"
    with pytest.raises(ValueError, match="commit is '6b2c42d', not '0fe3dd2'"):
        merge_results([(PARTS[1], load(PARTS[1])), (older, load(older))])
    proc = render(tmp_path, PARTS[1], older)
    assert proc.returncode == 1 and not (tmp_path / "report.md").exists()
    assert proc.stderr == f"render_report: {older}: commit is '6b2c42d', not '0fe3dd2' as in {PARTS[1]}\n"


def test_slangtorch_from_another_commit_is_refused() -> None:
    slangtorch = load(PARTS[2])
    slangtorch["system"]["commit"] = "0fe3dd2-dirty"
    with pytest.raises(ValueError, match="commit is '0fe3dd2-dirty', not '0fe3dd2'"):
        merge_results([(PARTS[0], load(PARTS[0])), (PARTS[2], slangtorch)])


def test_a_file_of_something_else_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "e2e.json"
    other.write_text(json.dumps({"elementwise": {"served_all": True}}))
    proc = render(tmp_path, PARTS[0], other)
    assert proc.returncode == 1
    assert "neither bench/cold_start.py nor bench/slangtorch_runs.py results" in proc.stderr


def test_a_failed_slangtorch_attempt_gives_way_to_a_measured_one() -> None:
    synthetic = load(PARTS[0])
    synthetic["slangtorch"] = {"available": False, "reason": "slangtorch or torch is not installed"}
    merged = merge_results([(PARTS[0], synthetic), (PARTS[2], load(PARTS[2]))])
    assert merged["slangtorch"]["available"] and set(merged["slangtorch"]["variants"]) == {
        "default", "no_line_directives", "skip_ninja_check"}


def test_a_failed_slangtorch_variant_is_shown_as_failed() -> None:
    synthetic = load(PARTS[0])
    slangtorch = load(PARTS[2])
    slangtorch["variants"]["default"] = {"flags": [], "error": "exit 1:\nnvcc fatal: unsupported gpu"}
    text = Report(merge_results([(PARTS[0], synthetic), (PARTS[2], slangtorch)])).render()
    (row,) = rows_of(text, "defaults")
    assert row[1] == "failed: exit 1:" and row[2:] == ["-"] * 5


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
