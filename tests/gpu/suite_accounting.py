"""A pytest plugin that accounts for spreplay in a test suite it did not write.

Loaded with `-p suite_accounting` (tests/gpu on PYTHONPATH) into every pytest
process, xdist workers included. For each test it appends one JSON line to
$SPREPLAY_SUITE_LOG/<worker>.jsonl: the test's outcome and the kernel
requests spreplay saw while the test ran (setup and teardown included):
served, compiled, not keyable, refused, and why each miss missed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

LOG_DIRECTORY = "SPREPLAY_SUITE_LOG"
_COUNTS = ("served", "compiled", "notKeyable", "refused")
_outcomes: dict[str, str] = {}


def _summary() -> dict[str, Any]:
    import spreplay

    return spreplay.summary()


def _log_file() -> Path:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    directory = Path(os.environ[LOG_DIRECTORY])
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{worker}.jsonl"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _outcomes[report.nodeid] = "failed" if report.when == "call" else "error"
    elif report.skipped and _outcomes.get(report.nodeid) not in ("failed", "error"):
        _outcomes[report.nodeid] = "skipped"
    else:
        _outcomes.setdefault(report.nodeid, "passed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    if LOG_DIRECTORY not in os.environ:
        yield
        return
    before = _summary()
    yield
    after = _summary()
    entry = {
        "test": item.nodeid,
        "file": item.nodeid.split("::")[0],
        "outcome": _outcomes.pop(item.nodeid, "passed"),
        **{count: after.get(count, 0) - before.get(count, 0) for count in _COUNTS},
        "misses": [miss["reason"] for miss in after.get("misses", [])[len(before.get("misses", [])):]],
    }
    with _log_file().open("a") as log:
        log.write(json.dumps(entry) + "\n")
