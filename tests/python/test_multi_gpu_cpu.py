"""The multi-GPU check (tests/gpu/multi_gpu.py) on a machine that cannot run
it: it says so in one line and passes. And the check's own judgement, on real
data: the traces recorded on the H200, traces recorded here on the CPU device
by several processes at once, outputs saved as the app saves them.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, ROOT, clean_env, inspect_json, run_spreplay

sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import multi_gpu  # noqa: E402

HARNESS = ROOT / "tests" / "gpu" / "multi_gpu.py"
APP = ROOT / "tests" / "gpu" / "apps" / "ddp_app.py"
CPU_APP = ROOT / "tests" / "python" / "cpu_call_sites.py"
NO_GPU_LINE = "multi-gpu: skipped: 0 GPU(s) here, this check needs 2 or more (nvidia-h200-x2 or larger)"
FIXTURE_TRACES = ["autodiff", "elementwise", "generic_mlp", "local_modules", "local_modules-noise-first"]


def run_harness(out: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HARNESS), "--out", str(out), *args], env=clean_env(**env),
                          capture_output=True, text=True, timeout=300)


# --- Skipping -----------------------------------------------------------------------------------


def test_skips_in_one_line_and_passes_with_fewer_than_two_gpus(tmp_path: Path) -> None:
    count = multi_gpu.gpu_count()
    if count >= 2:
        pytest.skip(f"{count} GPUs here: the check itself runs (make gpu-test-multi)")
    proc = run_harness(tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [multi_gpu.SKIP_LINE.format(count=count)]
    report = json.loads((tmp_path / "out" / "multi_gpu.json").read_text())
    assert report == {"skipped": proc.stdout.strip(), "gpus": count}


def test_gpus_hidden_from_cuda_skip_the_same_way(tmp_path: Path) -> None:
    proc = run_harness(tmp_path / "out", CUDA_VISIBLE_DEVICES="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [NO_GPU_LINE]
    assert (tmp_path / "out" / "multi-gpu.md").read_text().splitlines()[-1] == NO_GPU_LINE


def test_an_unknown_check_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = run_harness(tmp_path / "out", "--checks", "stock,bogus")
    assert proc.returncode == 2
    assert "unknown checks ['bogus']" in proc.stderr


@pytest.mark.parametrize(("count", "variable", "visible"), [
    (4, None, 4), (4, "", 0), (4, "0,1", 2), (4, "1,-1,2", 1), (1, "0,1,2", 1), (8, "GPU-1a2b,GPU-3c4d", 2),
    (2, "0,,1", 1),
])
def test_visible_gpus_reads_cuda_visible_devices_as_cuda_does(count: int, variable: str | None,
                                                              visible: int) -> None:
    assert multi_gpu.visible_gpus(count, variable) == visible


# --- Outputs against stock's -------------------------------------------------------------------


def saved(tmp_path: Path, name: str, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """Arrays through an .npz file, as the app writes its outputs and the check reads them."""
    path = tmp_path / f"{name}.npz"
    np.savez(path, **arrays)
    return multi_gpu.load_outputs(path)


def outputs(losses: list[float], w: list[float]) -> dict[str, np.ndarray]:
    return {"losses": np.array(losses, np.float32), "w": np.array(w, np.float32)}


def test_where_stock_is_bit_identical_served_must_be(tmp_path: Path) -> None:
    stock = saved(tmp_path, "a", **outputs([0.31, 0.29], [0.5, -0.25]))
    again = saved(tmp_path, "b", **outputs([0.31, 0.29], [0.5, -0.25]))
    assert multi_gpu.compare_with_stock(stock, again, saved(tmp_path, "c", **outputs([0.31, 0.29], [0.5, -0.25]))) == []
    one_ulp = np.nextafter(np.float32(0.29), np.float32(1.0))
    problems = multi_gpu.compare_with_stock(stock, again, saved(tmp_path, "d", **outputs([0.31, one_ulp], [0.5, -0.25])))
    assert len(problems) == 1 and problems[0].startswith("losses: differs from stock, which is bit-identical")


def test_bits_decide_not_values() -> None:
    stock = {"w": np.array([0.0, np.nan], np.float32)}
    assert multi_gpu.compare_with_stock(stock, stock, {"w": np.array([0.0, np.nan], np.float32)}) == []
    negative_zero = multi_gpu.compare_with_stock(stock, stock, {"w": np.array([-0.0, np.nan], np.float32)})
    assert len(negative_zero) == 1 and negative_zero[0].startswith("w: differs from stock")
    assert multi_gpu.same_bits(np.float32(1.0), np.float32(1.0)).shape == ()


def test_where_stock_differs_run_to_run_served_may_differ_as_much(tmp_path: Path) -> None:
    # Two stock runs 1e-6 apart in the last loss, bit-identical in w.
    stock = saved(tmp_path, "a", **outputs([0.31, 0.290000], [0.5, -0.25]))
    again = saved(tmp_path, "b", **outputs([0.31, 0.290001], [0.5, -0.25]))
    spread = multi_gpu.spread(stock, again)
    assert spread["w"] == {"identical": True, "max_abs_difference": 0.0}
    assert not spread["losses"]["identical"] and 0 < spread["losses"]["max_abs_difference"] < 2e-6
    between = outputs([0.31, 0.2900005], [0.5, -0.25])
    beyond = outputs([0.31, 0.290004], [0.5, -0.25])
    assert multi_gpu.compare_with_stock(stock, again, again) == []
    assert multi_gpu.compare_with_stock(stock, again, between) == []
    (problem,) = multi_gpu.compare_with_stock(stock, again, beyond)
    assert problem.startswith("losses:") and "beyond the" in problem
    # w is still held to the bit.
    (problem,) = multi_gpu.compare_with_stock(stock, again, outputs([0.31, 0.290000], [0.5, -0.2500001]))
    assert problem.startswith("w: differs from stock")


def test_missing_arrays_and_other_shapes_are_problems() -> None:
    stock = outputs([0.31, 0.29], [0.5, -0.25])
    problems = multi_gpu.compare_with_stock(stock, stock, {"losses": np.array([0.31], np.float32)})
    assert problems == ["arrays ['losses'], stock has ['losses', 'w']", "losses: float32[1], stock has float32[2]"]
    (problem,) = multi_gpu.compare_with_stock(stock, stock, {**stock, "w": stock["w"].astype(np.float64)})
    assert problem == "w: float64[2], stock has float32[2]"


# --- Traces: one call site, one name, whatever GPU recorded it --------------------------------


@pytest.mark.parametrize("name", FIXTURE_TRACES)
def test_traces_recorded_on_the_h200_have_no_duplicates(name: str) -> None:
    trace = inspect_json(FIXTURES / f"{name}.capnp")
    assert multi_gpu.duplicate_call_sites(trace["callSites"]) == []
    assert multi_gpu.duplicate_kernels(trace) == []


def test_two_recordings_of_one_app_merge_without_duplicates(tmp_path: Path) -> None:
    # local_modules recorded in both of its module load orders: the same call
    # sites and kernels, so the merged trace holds each once.
    first = inspect_json(FIXTURES / "local_modules.capnp")
    second = inspect_json(FIXTURES / "local_modules-noise-first.capnp")
    assert multi_gpu.call_site_ids(first) == multi_gpu.call_site_ids(second)
    assert multi_gpu.kernel_keys(first) == multi_gpu.kernel_keys(second)
    run_spreplay("merge", str(FIXTURES / "local_modules.capnp"), str(FIXTURES / "local_modules-noise-first.capnp"),
                 "-o", str(tmp_path / "merged.capnp"))
    merged = inspect_json(tmp_path / "merged.capnp")
    assert multi_gpu.call_site_ids(merged) == multi_gpu.call_site_ids(first)
    assert multi_gpu.duplicate_call_sites(merged["callSites"]) == []
    assert multi_gpu.duplicate_kernels(merged) == []


def split_by_gpu(trace: dict) -> dict:
    """The trace as if a second GPU had keyed every call site and kernel apart:
    each call site again under another hash, each kernel again under another
    key, built from the renamed wrapper."""
    renamed = {site["slangpyHash"]: hashlib.sha256(f"{site['slangpyHash']} gpu 1".encode()).hexdigest()
               for site in trace["callSites"]}
    sites = [{**site, "slangpyHash": renamed[site["slangpyHash"]]} for site in trace["callSites"]]
    kernels = [{**kernel, "key": hashlib.sha256(f"{kernel['key']} gpu 1".encode()).hexdigest(),
                "moduleNames": [renamed.get(name, name) for name in kernel["moduleNames"]]}
               for kernel in trace["kernels"]]
    return {**trace, "callSites": trace["callSites"] + sites, "kernels": trace["kernels"] + kernels}


def test_call_sites_and_kernels_keyed_apart_by_gpu_are_found() -> None:
    trace = inspect_json(FIXTURES / "autodiff.capnp")
    split = split_by_gpu(trace)
    duplicates = multi_gpu.duplicate_call_sites(split["callSites"])
    assert len(duplicates) == len(trace["callSites"]) == 8
    assert all(len(names) == 2 for names in duplicates)
    assert {names[0] for names in duplicates} | {names[1] for names in duplicates} == \
        {site["slangpyHash"] for site in split["callSites"]}
    kernels = multi_gpu.duplicate_kernels(split)
    assert len(kernels) == len(trace["kernels"]) and all(len(keys) == 2 for keys in kernels)


def test_processes_recording_one_trace_at_once_record_each_call_site_once(tmp_path: Path) -> None:
    trace = tmp_path / "trace.capnp"
    recorders = [subprocess.Popen([sys.executable, str(CPU_APP)], env=clean_env(SLANGPY_RECORD=str(trace)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for recorder in recorders:
        _, stderr = recorder.communicate(timeout=300)
        assert recorder.returncode == 0, stderr
    contents = inspect_json(trace)
    assert len(contents["processes"]) == 3 and len(contents["devices"]) == 3
    assert len(contents["callSites"]) == 6
    assert multi_gpu.duplicate_call_sites(contents["callSites"]) == []
    # The check counts the app's processes by the script each ran.
    (process, *_) = contents["processes"]
    assert multi_gpu.app_processes(contents) == []
    rank = {**process, "commandLine": [str(APP), "--out", "out.npz"]}
    torchrun = {**process, "commandLine": ["/venv/torch/distributed/run.py", "--standalone", str(APP)]}
    assert multi_gpu.app_processes({"processes": [rank, torchrun, process]}) == [rank]


# --- The app's lines and files ------------------------------------------------------------------


def test_summary_and_timing_lines_are_read_by_rank_with_or_without_a_launcher_prefix() -> None:
    text = "\n".join([
        'timing {"rank": 1, "device_to_first_step_s": 0.5}',
        '[default0]:timing {"rank": 0, "device_to_first_step_s": 0.7}',
        'summary {"served": 5, "compiled": 0, "active": true, "rank": 1}',
        'summary {"active": false}',
        "summary {not json",
        "spreplay: 5 kernel(s) served from kernels.sprk, 0 compiled",
    ])
    found = multi_gpu.tagged_lines(text)
    assert found["timing"] == {1: {"rank": 1, "device_to_first_step_s": 0.5},
                               0: {"rank": 0, "device_to_first_step_s": 0.7}}
    assert found["summary"] == {1: {"served": 5, "compiled": 0, "active": True, "rank": 1}, 0: {"active": False}}


def test_the_check_reads_each_rank_s_outputs_where_the_app_writes_them() -> None:
    # ddp_app.py imports torch, absent here: its function, from its source.
    tree = ast.parse(APP.read_text())
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "rank_output"]
    namespace: dict = {"Path": Path}
    exec(compile(ast.Module(body=[function], type_ignores=[]), str(APP), "exec"), namespace)
    for out, rank in ((Path("/w/out.npz"), 0), (Path("run/out.npz"), 7)):
        assert namespace["rank_output"](out, rank) == multi_gpu.rank_output(out, rank)
    assert multi_gpu.rank_output(Path("/w/out.npz"), 3) == Path("/w/out.rank3.npz")


def test_the_report_tabulates_every_check_and_the_time_to_the_first_step() -> None:
    row = {"ranks_s": [3.21, 3.5], "job_s": 3.5, "job_from_launch_s": 9.0, "ranks_from_start_s": [8.0, 8.2]}
    report = {"gpus": 2, "gpu_names": ["NVIDIA H200", "NVIDIA H200"], "nproc": 2, "steps": 8, "arches": [90],
              "checks": {"stock": {"passed": True, "seconds": 40.0, "identical_run_to_run": True},
                         "served": {"passed": False, "seconds": 1.0, "failure": "rank 1: a|b\nmore"},
                         "timing": {"passed": True, "seconds": 60.0,
                                    "first_step": {"spreplay": {"label": "spreplay", **row}}}}}
    text = multi_gpu.markdown(report)
    assert "| served | FAIL: rank 1: a\\|b | 1.0 |" in text
    assert "| configuration | rank 0 | rank 1 | job | job, from launch |" in text
    assert "| spreplay | 3.21 | 3.50 | **3.50** | 9.00 |" in text
    assert "Two stock runs are bit-identical" in text
