"""A trace that adds a call site to one compiled into the cache costs about
that call site: the modules stage takes every part of the configuration the
cache verified before, and serializes and rebuilds only the new kernel's
program. A trace that drops one re-verifies the part it broke. Either way
the archive serves what a compile without the cache serves.

On H200 traces: the fixture elementwise (eight kernels of one
configuration), and the synthetic workload's, whose trace without its last
kernel holds a module no kernel was built with that the last kernel is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, SLANGPY_VERSION, compile_trace, served, spreplay_command

sys.path.insert(0, str(ROOT / "bench"))
from trace_prefix import without_last_kernel  # noqa: E402

SYNTHETIC = ROOT / "bench" / "traces" / f"synthetic-slangpy-{SLANGPY_VERSION}.capnp"


def spans(report: dict, stage: str) -> list[dict]:
    return [span for span in report["timeline"] if span["stage"] == stage]


def label_of(report: dict, key: str) -> str:
    return next(kernel["label"] for kernel in report["kernels"] if kernel["key"] == key)


@pytest.fixture(scope="module", params=["elementwise", "synthetic"])
def compiles(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    trace = FIXTURES / "elementwise.capnp" if request.param == "elementwise" else SYNTHETIC
    if not trace.exists():
        pytest.skip(f"no {request.param} trace recorded under slangpy {SLANGPY_VERSION}")
    out = tmp_path_factory.mktemp(f"incremental-{request.param}")
    fewer = out / "fewer.capnp"
    left_out = without_last_kernel(spreplay_command(), trace, fewer)
    added_cache, dropped_cache = out / "added-cache", out / "dropped-cache"
    compiled = {"left_out": left_out,
                "cold": compile_trace(trace, out, "cold", None),
                "cold-fewer": compile_trace(fewer, out, "cold-fewer", None),
                "fewer": compile_trace(fewer, out, "fewer", added_cache),
                "dropped-before": compile_trace(trace, out, "dropped-before", dropped_cache)}
    compiled["added"] = compile_trace(trace, out, "added", added_cache)
    compiled["dropped"] = compile_trace(fewer, out, "dropped", dropped_cache)
    return compiled


def test_an_added_call_site_alone_is_serialized_and_rebuilt(compiles: dict) -> None:
    report = compiles["added"]["report"]
    new_kernel = label_of(report, compiles["left_out"])
    assert [span["label"] for span in spans(report, "serialize")] == [f"1 program(s), the first {new_kernel}"]
    assert [span["label"] for span in spans(report, "rebuild")] == [new_kernel]
    assert spans(report, "replay") == []
    assert report["moduleSessionsCached"] == 0  # the configuration changed: its parts were taken, not the whole
    # Every other kernel's proof came from the cache; the new one from its rebuild.
    for kernel in report["kernels"]:
        assert kernel["replayedOverIr"] == (kernel["key"] == compiles["left_out"]), kernel


def test_an_added_call_site_serves_what_a_compile_without_the_cache_serves(compiles: dict) -> None:
    assert served(compiles["added"]) == served(compiles["cold"])
    assert served(compiles["added"])["modules"], "no module was archived"


def test_a_dropped_call_site_re_verifies_the_part_it_broke(compiles: dict) -> None:
    report = compiles["dropped"]["report"]
    kernels = len(report["kernels"])
    serialized = spans(report, "serialize")
    assert sum(int(span["label"].split(" program(s)")[0]) for span in serialized) >= kernels
    assert len(spans(report, "rebuild")) >= kernels
    assert served(compiles["dropped"]) == served(compiles["cold-fewer"])


def test_the_trace_without_its_last_call_site_compiles_as_without_the_cache(compiles: dict) -> None:
    assert served(compiles["fewer"]) == served(compiles["cold-fewer"])
    assert len(compiles["fewer"]["index"]["kernels"]) == len(compiles["cold"]["index"]["kernels"]) - 1
