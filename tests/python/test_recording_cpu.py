"""Recording real slangpy call sites on the CPU device, with no GPU.

The CPU device generates no target code, so these traces hold no kernels;
they prove the hooks, the recorder and the trace format on the real slangpy
and Slang. Kernels are covered by the H200 fixtures (test_compile_fixtures.py)
and the GPU checks (tests/gpu/).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT, SLANG_BUILD, SLANGPY_VERSION, clean_env, inspect_json, run_python, run_spreplay

APP = ROOT / "tests" / "python" / "cpu_call_sites.py"


def record(trace: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(APP), *extra], env=clean_env(SLANGPY_RECORD=str(trace)),
                          capture_output=True, text=True)


def test_records_every_call_site_of_an_unmodified_app(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    proc = record(trace)
    assert proc.returncode == 0, proc.stderr
    contents = inspect_json(trace)
    assert contents["damage"] == [] and contents["undecodableRecords"] == 0
    sites = {(c["function"], c["kind"]) for c in contents["callSites"]}
    assert sites == {("add", "call"), ("poly3", "call"), ("outer<3>", "call"), ("model_at", "call"),
                     ("model_at", "backwardCall"), ("fill", "rawDispatch")}
    add = next(c for c in contents["callSites"] if c["function"] == "add")
    assert [a["name"] for a in add["arguments"]] == ["a", "b", "_result"]
    assert add["arguments"][0]["vectorType"] == "float" and add["arguments"][0]["dimensionality"] == 1
    assert add["module"].endswith("elementwise.slang") and add["deviceType"] == "cpu"
    assert len(add["slangpyHash"]) == 64 and add["entryPoints"] == ["compute_main"]
    (process,) = contents["processes"]
    assert process["slangpyVersion"] == SLANGPY_VERSION
    assert process["toolchain"] == f"slangpy {SLANGPY_VERSION} slang {SLANG_BUILD}"
    assert contents["devices"][0]["type"] == "cpu"


def test_trace_holds_every_source_the_call_sites_read(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    assert record(trace).returncode == 0
    data = trace.read_bytes()
    # The imported files of the samples and slangpy's own Slang library travel in the trace.
    for source in ("ew_util.slang", "linalg.slang", "model.slang"):
        assert (ROOT / "samples").glob(f"*/{source}")
        content = next((ROOT / "samples").glob(f"*/{source}")).read_bytes()
        assert content in data, f"{source} is not in the trace"
    import slangpy

    core = (Path(slangpy.__file__).parent / "slang" / "slangpy.slang").read_bytes()
    assert core in data


def test_a_second_process_appends_to_the_same_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    first = subprocess.Popen([sys.executable, str(APP)], env=clean_env(SLANGPY_RECORD=str(trace)))
    second = subprocess.Popen([sys.executable, str(APP)], env=clean_env(SLANGPY_RECORD=str(trace)))
    assert first.wait() == 0 and second.wait() == 0
    contents = inspect_json(trace)
    assert len(contents["processes"]) == 2
    assert contents["damage"] == []
    assert len(contents["callSites"]) == 6  # de-duplicated across processes


def test_a_recorder_killed_mid_run_leaves_a_readable_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    env = clean_env(SLANGPY_RECORD=str(trace))
    proc = subprocess.Popen([sys.executable, str(APP), "--hang"], env=env, stdout=subprocess.PIPE, text=True)
    # slangpy prints its own warnings first.
    for line in proc.stdout:
        if line.strip() == "built":
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    contents = inspect_json(trace)
    assert len(contents["callSites"]) == 6


def test_nothing_loads_without_the_environment_variables() -> None:
    proc = run_python("import sys, slangpy; print(sorted(m for m in sys.modules if m.startswith('spreplay')))", {})
    assert proc.returncode == 0, proc.stderr
    # The .pth imports only the activation module, which returns at once.
    assert proc.stdout.strip() == "['spreplay', 'spreplay._activation']"


def test_inspect_rejects_foreign_and_damaged_traces(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.capnp"
    foreign.write_bytes(b"GIF89a" + bytes(100))
    proc = run_spreplay("inspect", str(foreign), check=False)
    assert proc.returncode == 1 and "is not a spreplay trace" in proc.stderr
    empty = tmp_path / "empty.capnp"
    empty.write_bytes(b"")
    proc = run_spreplay("inspect", str(empty), check=False)
    assert proc.returncode == 1 and "empty" in proc.stderr
    trace = tmp_path / "trace.capnp"
    assert record(trace).returncode == 0
    torn = tmp_path / "torn.capnp"
    torn.write_bytes(trace.read_bytes()[:-100])
    contents = inspect_json(torn)
    assert len(contents["damage"]) == 1 and "truncated" in contents["damage"][0]["reason"]


def test_merge_keeps_one_copy_of_every_record(tmp_path: Path) -> None:
    first, second = tmp_path / "a.capnp", tmp_path / "b.capnp"
    assert record(first).returncode == 0 and record(second).returncode == 0
    merged = tmp_path / "merged.capnp"
    proc = run_spreplay("merge", str(first), str(second), "-o", str(merged))
    assert "records kept" in proc.stderr
    contents = inspect_json(merged)
    assert len(contents["processes"]) == 2 and len(contents["callSites"]) == 6
    assert merged.stat().st_size < first.stat().st_size + second.stat().st_size * 0.5
    # The same module loaded in the same configuration is one load, though the two took different times.
    assert sorted(load["name"] for load in contents["moduleLoads"]) == \
        sorted(load["name"] for load in inspect_json(first)["moduleLoads"])


def test_every_module_load_the_app_asked_for_carries_its_time(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    assert record(trace).returncode == 0
    loads = inspect_json(trace)["moduleLoads"]
    names = {load["name"] for load in loads}
    assert {"slangpy.slang", "mlp.slang", "train.slang"} <= names, names
    assert all(load["loadSeconds"] > 0 for load in loads), loads
    proc = run_spreplay("inspect", str(trace))
    total = sum(load["loadSeconds"] for load in loads)
    assert f"module loads: {len(loads)}, {total:.2f} s in the app" in proc.stdout


def test_a_merge_that_fails_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    first = tmp_path / "a.capnp"
    assert record(first).returncode == 0
    merged = tmp_path / "merged.capnp"
    merged.write_bytes(b"an earlier merge")
    proc = run_spreplay("merge", str(first), str(tmp_path / "missing.capnp"), "-o", str(merged), check=False)
    assert proc.returncode == 1 and "missing.capnp" in proc.stderr
    assert merged.read_bytes() == b"an earlier merge"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.capnp", "merged.capnp"]


def test_serving_records_its_misses_to_the_misses_trace(tmp_path: Path) -> None:
    archive = tmp_path / "kernels.sprk"
    run_spreplay("compile", str(FIXTURES / "autodiff.capnp"), "-o", str(archive),
                 "--arch", "90", "--no-cache")
    misses = tmp_path / "misses.capnp"
    proc = subprocess.run([sys.executable, str(APP)], capture_output=True, text=True,
                          env=clean_env(SLANGPY_KERNELS=str(archive), SLANGPY_KERNELS_MISSES=str(misses)))
    assert proc.returncode == 0, proc.stderr
    assert len(inspect_json(misses)["callSites"]) == 6

    trace = tmp_path / "trace.capnp"
    other = tmp_path / "other-misses.capnp"
    proc = subprocess.run([sys.executable, str(APP)], capture_output=True, text=True,
                          env=clean_env(SLANGPY_KERNELS=str(archive), SLANGPY_KERNELS_MISSES=str(other),
                                        SLANGPY_RECORD=str(trace)))
    assert proc.returncode == 0, proc.stderr
    assert f"SLANGPY_KERNELS_MISSES ignored: SLANGPY_RECORD records every compiled kernel to {trace}" in proc.stderr
    assert len(inspect_json(trace)["callSites"]) == 6 and not other.exists()
