"""Recording under concurrency on the CPU device, with no GPU: call sites
built from many threads at once, and many processes recording into one trace
while one of them is killed. tests/gpu/hardening.py runs the same on a GPU,
through compile and serving."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, clean_env, inspect_json

APP = ROOT / "tests" / "python" / "cpu_concurrent_app.py"
RECORDERS = 8


def test_call_sites_built_from_many_threads_are_all_recorded(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    proc = subprocess.run([sys.executable, str(APP), "threads", "--threads", "12"],
                          env=clean_env(SLANGPY_RECORD=str(trace)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    contents = inspect_json(trace)
    assert contents["damage"] == [] and contents["undecodableRecords"] == 0
    sites = contents["callSites"]
    assert sorted(site["function"] for site in sites) == sorted(f"f{i}" for i in range(12))
    # Each call site carries the thread that built it.
    assert {site["function"]: site["threadName"] for site in sites} == {f"f{i}": f"site-{i}" for i in range(12)}


def test_many_recorders_with_one_killed_leave_one_whole_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    env = clean_env(SLANGPY_RECORD=str(trace))
    victim = RECORDERS - 1
    processes = [
        subprocess.Popen([sys.executable, str(APP), "worker", "--index", str(i),
                          *(["--forever"] if i == victim else [])],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for i in range(RECORDERS)
    ]
    built = 0
    for line in processes[victim].stdout:
        built += line.strip() == "built"
        if built >= 2:
            break
    processes[victim].send_signal(signal.SIGKILL)
    assert processes[victim].wait() == -signal.SIGKILL and built >= 2
    assert all(p.wait(timeout=300) == 0 for i, p in enumerate(processes) if i != victim)

    contents = inspect_json(trace)
    assert contents["undecodableRecords"] == 0 and contents["damage"] == []
    assert len(contents["processes"]) == RECORDERS
    recorded = {(site["function"], site["arguments"][0]["dimensionality"]) for site in contents["callSites"]}
    survivors = {(f"f{f % 12}", 1) for i in range(RECORDERS - 1) for f in (i, i + 5)}
    assert survivors <= recorded
    # The killed one's call sites that it finished are there too, up to the kill.
    assert len([site for site in recorded if site[1] > 1]) >= 2
