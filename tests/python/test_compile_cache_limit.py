"""The compile cache stays within its limit: a compile that leaves it larger
removes the entries used longest ago, and a later compile rebuilds what went
missing and serves what a compile without the cache serves.

On the fixture elementwise (eight kernels of one configuration, H200).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import spreplay

from conftest import FIXTURES, clean_env, compile_trace, served, spreplay_command

TRACE = FIXTURES / "elementwise.capnp"


def cache_bytes(cache: Path) -> int:
    return sum(path.stat().st_size for path in cache.rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not TRACE.exists():
        pytest.skip(f"no {TRACE.name} recorded under this slangpy")
    out = tmp_path_factory.mktemp("cache-limit")
    cache = out / "cache"
    without_cache = compile_trace(TRACE, out, "without-cache", None)
    compile_trace(TRACE, out, "fill", cache)
    full = cache_bytes(cache)
    limit = full // 2
    # Unchanged, so everything comes from the cache; then half of it goes.
    # Through the Python API, which passes the limit on.
    trim_log = spreplay.compile(TRACE, out / "trim.sprk", arches=[90], jobs=2, cache=cache,
                                cache_max_size=limit).log
    after_trim = cache_bytes(cache)
    again = compile_trace(TRACE, out, "again", cache)
    return {"full": full, "limit": limit, "after_trim": after_trim, "trim_log": trim_log,
            "without_cache": without_cache, "again": again, "cache": cache, "out": out}


def test_a_compile_trims_the_cache_to_its_limit_and_says_so(trimmed: dict) -> None:
    assert 0 < trimmed["after_trim"] <= trimmed["limit"] < trimmed["full"]
    assert "entries used longest ago removed" in trimmed["trim_log"], trimmed["trim_log"]


def test_what_the_trim_removed_is_rebuilt_and_served_as_without_the_cache(trimmed: dict) -> None:
    report = trimmed["again"]["report"]
    assert all(kernel["status"] == "compiled" for kernel in report["kernels"])
    # Half the cache went: not every kernel's proof and fatbin, nor the
    # modules' outcome, can have come from it.
    rebuilt = [kernel for kernel in report["kernels"] if not kernel["replayCached"]]
    assert rebuilt or report["moduleSessionsCached"] < report["moduleSessions"]
    assert served(trimmed["again"]) == served(trimmed["without_cache"])


def test_without_a_limit_a_compile_still_removes_what_killed_compiles_left(trimmed: dict) -> None:
    cache: Path = trimmed["cache"]
    entry = next(path for path in sorted((cache / "v1").rglob("*")) if path.is_file())
    # Named as a writer names its temporary: the entry's name, ".tmp.", its pid and a random number.
    abandoned, in_progress = entry.with_name(f"{entry.name}.tmp.1.2"), entry.with_name(f"{entry.name}.tmp.3.4")
    abandoned.write_bytes(b"a compile killed two hours ago")
    in_progress.write_bytes(b"a compile writing now")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(abandoned, (two_hours_ago, two_hours_ago))
    entries = cache_bytes(cache) - abandoned.stat().st_size - in_progress.stat().st_size
    log = spreplay.compile(TRACE, trimmed["out"] / "no-limit.sprk", arches=[90], jobs=2, cache=cache,
                           cache_max_size=0).log
    assert not abandoned.exists(), log
    assert in_progress.exists()
    assert cache_bytes(cache) - in_progress.stat().st_size == entries  # no entry removed
    assert "entries used longest ago removed" not in log


def test_a_limit_that_is_not_a_size_is_refused_before_any_work(tmp_path: Path) -> None:
    for argv, env in ((["--cache-max-size", "5 GB"], clean_env()),
                      ([], clean_env(SPREPLAY_CACHE_MAX_SIZE="lots"))):
        proc = subprocess.run([*spreplay_command(), "compile", str(TRACE), "-o", str(tmp_path / "a.sprk"), *argv],
                              env=env, capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert "is not a size" in proc.stderr
        assert not (tmp_path / "a.sprk").exists()
