"""How `spreplay compile` spreads its work over its jobs, read from the
timeline in its JSON report, on an H200 trace whose eight kernels share one
Slang session configuration: the configuration's modules are loaded from
source once, every kernel is proven by its program rebuilt over their IR
(no kernel is replayed from source as well), those rebuilds run on every
worker, the longest first, a configuration split into several sessions
serializes on every worker, and none of it changes what the archive holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, inspect_json, run_spreplay

TRACE = FIXTURES / "elementwise.capnp"


def compile_with(out: Path, name: str, *flags: str) -> dict:
    archive = out / f"{name}.sprk"
    report = out / f"{name}.json"
    run_spreplay("compile", str(TRACE), "-o", str(archive), "--arch", "90", "--no-cache", "--report", str(report),
                 *flags)
    return {"report": json.loads(report.read_text()), "index": inspect_json(archive)}


@pytest.fixture(scope="module")
def compiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("schedule")
    return {"jobs1": compile_with(out, "jobs1", "--jobs", "1"),
            "jobs2": compile_with(out, "jobs2", "--jobs", "2"),
            "split": compile_with(out, "split", "--jobs", "2", "--programs-per-session", "3"),
            "one-session": compile_with(out, "one-session", "--jobs", "2", "--programs-per-session", "all"),
            "from-source": compile_with(out, "from-source", "--jobs", "2", "--no-modules")}


def spans(report: dict, stage: str) -> list[dict]:
    return sorted((s for s in report["timeline"] if s["stage"] == stage), key=lambda s: s["start"])


def test_the_trace_is_one_session_configuration() -> None:
    kernels = inspect_json(TRACE)["kernels"]
    assert len(kernels) == 8 and len({kernel["session"] for kernel in kernels}) == 1


@pytest.mark.parametrize("name,jobs,sessions", [("jobs1", 1, 1), ("jobs2", 2, 1), ("split", 2, 3),
                                                     ("one-session", 2, 1)])
def test_each_kernel_is_compiled_once_over_its_modules_ir(compiles: dict[str, dict], name: str, jobs: int,
                                                          sessions: int) -> None:
    report = compiles[name]["report"]
    kernels = len(report["kernels"])
    assert all(kernel["replayedOverIr"] for kernel in report["kernels"]), report["kernels"]
    assert len(spans(report, "serialize")) == sessions
    assert len(spans(report, "rebuild")) == kernels  # no module is loaded without a kernel
    assert spans(report, "replay") == []
    assert len(spans(report, "sass")) == kernels  # one arch
    for span in report["timeline"]:
        assert 0 <= span["start"] <= span["end"] <= report["wallSeconds"], span
        assert 0 <= span["worker"] < jobs, span


def test_without_modules_every_kernel_is_replayed_from_source(compiles: dict[str, dict]) -> None:
    report = compiles["from-source"]["report"]
    assert not any(kernel["replayedOverIr"] for kernel in report["kernels"])
    assert len(spans(report, "replay")) == len(report["kernels"])
    assert spans(report, "rebuild") == spans(report, "serialize") == []


def test_the_longest_recorded_kernels_start_first(compiles: dict[str, dict]) -> None:
    for name, stage in (("jobs1", "rebuild"), ("from-source", "replay")):
        report = compiles[name]["report"]
        recorded = {k["label"]: k["recordedCompileSeconds"] for k in report["kernels"]}
        started = [recorded[span["label"]] for span in spans(report, stage)]
        assert started == sorted(started, reverse=True), (name, started)


def test_one_configurations_kernels_rebuild_on_every_worker(compiles: dict[str, dict]) -> None:
    assert {span["worker"] for span in spans(compiles["jobs2"]["report"], "rebuild")} == {0, 1}


def test_a_configuration_split_into_sessions_serializes_on_every_worker(compiles: dict[str, dict]) -> None:
    serializations = spans(compiles["split"]["report"], "serialize")
    assert sorted(int(span["label"].split(" program(s)")[0]) for span in serializations) == [2, 3, 3]
    assert {span["worker"] for span in serializations} == {0, 1}


def test_the_schedule_changes_nothing_archived(compiles: dict[str, dict]) -> None:
    def modules(compiled: dict) -> list:
        index = compiled["index"]
        return sorted((m["name"], m["key"]) for m in index["modules"]) + sorted(
            m["name"] for m in index["unservedModules"])

    assert (modules(compiles["jobs1"]) == modules(compiles["jobs2"]) == modules(compiles["split"])
            == modules(compiles["one-session"]))
    assert modules(compiles["jobs1"]), "no module was archived"
    # Kernels: the same entries, blobs included, whether proven over IR on one
    # worker or two, or replayed from source.
    def kernels(compiled: dict) -> list:
        return sorted(compiled["index"]["kernels"], key=lambda kernel: kernel["key"])

    assert (kernels(compiles["jobs1"]) == kernels(compiles["jobs2"]) == kernels(compiles["split"])
            == kernels(compiles["one-session"]) == kernels(compiles["from-source"]))
    assert len(kernels(compiles["jobs1"])) == 8


@pytest.mark.parametrize("name", ["jobs1", "jobs2", "from-source"])
def test_the_report_weighs_the_compile_against_the_apps_own(compiles: dict[str, dict], name: str) -> None:
    report = compiles[name]["report"]
    kernels = report["kernels"]
    assert report["appCompileSeconds"] == pytest.approx(sum(k["recordedCompileSeconds"] for k in kernels))
    assert report["appCompileSeconds"] > 0
    slowest = max(kernels, key=lambda k: max(k["frontEndSeconds"] + k["codegenSeconds"],
                                             max(k["sassSeconds"].values(), default=0)))
    assert report["criticalPathKernel"] == slowest["label"]
    assert 0 < report["criticalPathSeconds"] <= report["wallSeconds"]
    # The workers' and ptxas' time is in the CPU figure: with rebuilds in worker
    # processes, this process alone would not account for the kernels.
    assert report["cpuSeconds"] >= sum(max(k["sassSeconds"].values(), default=0) for k in kernels)
    # Slang alone maps more than this; far less than this machine's memory.
    assert 100e6 < report["peakRssBytes"] < 16e9


def test_kernels_the_cache_proved_keep_the_chain_of_the_modules_they_were_rebuilt_for(tmp_path: Path) -> None:
    """Every kernel's PTX proven from source into the cache, then compiled with
    its modules: no kernel is replayed, but its configuration's modules are
    serialized and its program rebuilt over them, and that chain is the
    compile's critical path."""
    cache = tmp_path / "cache"
    for name, flags in (("from-source", ["--no-modules"]), ("modules", [])):
        run_spreplay("compile", str(TRACE), "-o", str(tmp_path / f"{name}.sprk"), "--arch", "90", "--jobs", "2",
                     "--cache", str(cache), "--report", str(tmp_path / f"{name}.json"), *flags)
    report = json.loads((tmp_path / "modules.json").read_text())
    assert all(kernel["replayCached"] for kernel in report["kernels"]), report["kernels"]
    serialization = spans(report, "serialize")
    assert len(serialization) == 1 and len(spans(report, "rebuild")) == len(report["kernels"])
    serialize_seconds = serialization[0]["end"] - serialization[0]["start"]
    assert all(kernel["frontEndSeconds"] > 0 and kernel["codegenSeconds"] > 0 for kernel in report["kernels"])
    assert report["criticalPathSeconds"] >= serialize_seconds * 0.9
