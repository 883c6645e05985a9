"""A pytest plugin that accounts for spreplay in a test suite it did not write.

Loaded with `-p suite_accounting` (tests/gpu on PYTHONPATH) into every pytest
process, xdist workers included. It appends JSON lines to files in
$SPREPLAY_SUITE_LOG:
  - requests-<worker>.jsonl, written where a test runs: the kernel requests
    spreplay saw while it ran (setup and teardown included): served,
    compiled, not keyable, refused, and why each miss missed; and the module
    loads it saw (served as IR, loaded from source, refused) and their reasons;
  - outcomes.jsonl, written by the process that collects the reports (the
    xdist controller, or pytest itself without xdist): every test report and
    collection problem, so that a test whose worker crashed still counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

LOG_DIRECTORY = "SPREPLAY_SUITE_LOG"
_COUNTS = ("served", "compiled", "notKeyable", "refused", "modulesServed", "modulesCompiled", "modulesRefused")


def _summary() -> dict[str, Any]:
    import spreplay

    return spreplay.summary()


def _append(name: str, entry: dict[str, Any]) -> None:
    directory = Path(os.environ[LOG_DIRECTORY])
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / name).open("a") as log:
        log.write(json.dumps(entry) + "\n")


def _is_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if LOG_DIRECTORY not in os.environ or _is_worker():
        return
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    _append("outcomes.jsonl", {"test": report.nodeid, "when": report.when, "outcome": outcome})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if LOG_DIRECTORY not in os.environ or _is_worker() or report.passed:
        return
    # A file that fails to import, or skips itself whole, has no test reports.
    _append("outcomes.jsonl", {"test": report.nodeid, "when": "collect", "outcome": report.outcome})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    if LOG_DIRECTORY not in os.environ:
        yield
        return
    before = _summary()
    yield
    after = _summary()
    _append(f"requests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", {
        "test": item.nodeid,
        **{count: after.get(count, 0) - before.get(count, 0) for count in _COUNTS},
        "misses": [miss["reason"] for miss in after.get("misses", [])[len(before.get("misses", [])):]],
        "moduleMisses": [miss["reason"] for miss in after.get("moduleMisses", [])[len(before.get("moduleMisses", [])):]],
    })
