"""How `spreplay compile` spreads its work over its jobs, read from the
timeline in its JSON report, on an H200 trace whose eight kernels share one
Slang session configuration: the kernels the app took longest to compile
replay first, and that one configuration's modules are verified on every
worker, with the same outcome as on one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, inspect_json, run_spreplay

TRACE = FIXTURES / "elementwise.capnp"


def compile_with(jobs: int, out: Path) -> dict:
    archive = out / f"jobs{jobs}.sprk"
    report = out / f"jobs{jobs}.json"
    run_spreplay("compile", str(TRACE), "-o", str(archive), "--arch", "90", "--no-cache", "--jobs", str(jobs),
                 "--report", str(report))
    return {"report": json.loads(report.read_text()), "index": inspect_json(archive)}


@pytest.fixture(scope="module")
def compiles(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("schedule")
    return {jobs: compile_with(jobs, out) for jobs in (1, 2)}


def spans(report: dict, stage: str) -> list[dict]:
    return sorted((s for s in report["timeline"] if s["stage"] == stage), key=lambda s: s["start"])


def test_the_trace_is_one_session_configuration() -> None:
    sessions = {kernel["session"] for kernel in inspect_json(TRACE)["kernels"]}
    assert len(sessions) == 1 and len(inspect_json(TRACE)["kernels"]) == 8


def test_every_job_is_on_the_timeline(compiles: dict[int, dict]) -> None:
    for jobs, compiled in compiles.items():
        report = compiled["report"]
        kernels = len(report["kernels"])
        assert len(spans(report, "replay")) == kernels
        assert len(spans(report, "sass")) == kernels  # one arch
        assert len(spans(report, "rebuild")) == kernels  # no module is loaded without a kernel
        assert len(spans(report, "serialize")) == 1
        for span in report["timeline"]:
            assert 0 <= span["start"] <= span["end"] <= report["wallSeconds"], span
            assert 0 <= span["worker"] < jobs, span


def test_the_longest_recorded_kernels_replay_first(compiles: dict[int, dict]) -> None:
    report = compiles[1]["report"]
    recorded = {k["label"]: k["recordedCompileSeconds"] for k in report["kernels"]}
    started = [span["label"] for span in spans(report, "replay")]
    seconds = [recorded[label] for label in started]
    assert seconds == sorted(seconds, reverse=True), list(zip(started, seconds))


def test_one_configurations_kernels_rebuild_over_ir_on_every_worker(compiles: dict[int, dict]) -> None:
    rebuilds = spans(compiles[2]["report"], "rebuild")
    assert {span["worker"] for span in rebuilds} == {0, 1}, rebuilds


def test_spreading_the_modules_stage_changes_no_outcome(compiles: dict[int, dict]) -> None:
    def outcome(compiled: dict) -> tuple:
        index = compiled["index"]
        return (sorted(k["key"] for k in index["kernels"]),
                sorted((m["name"], m["key"]) for m in index["modules"]),
                sorted(m["name"] for m in index.get("unservedModules", [])))

    one, two = outcome(compiles[1]), outcome(compiles[2])
    assert one == two
    assert one[1], "no module was archived"
