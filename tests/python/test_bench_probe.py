"""The cold-start benchmark's phase probe, run over real slangpy on the CPU device.

slangpy 0.43.1's CPU device cannot dispatch, so the app builds its call sites
with debug_build_call_data: that runs the same CallData build, Slang front end
and link the probe measures on a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, clean_env

sys.path.insert(0, str(ROOT / "bench"))
from phases import PHASES, summarize_run  # noqa: E402

SYNTHETIC = ROOT / "bench" / "workloads" / "synthetic"

APP = textwrap.dedent(f"""
    import time
    import numpy as np
    import slangpy as spy

    t0 = time.perf_counter()
    device = spy.create_device(spy.DeviceType.cpu, include_paths=[{str(SYNTHETIC)!r}])
    simple = spy.Module.load_from_file(device, "simple.slang")
    generics = spy.Module.load_from_file(device, "generics.slang")
    grads = spy.Module.load_from_file(device, "grads.slang")
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    x = np.ones(8, dtype=np.float32)
    simple.add.debug_build_call_data(x, x)
    params = spy.Tensor.from_numpy(device, np.zeros(1000, dtype=np.float32))
    generics["mlp<3, 45, 5, 3>"].debug_build_call_data(params, np.zeros((4, 3), dtype=np.float32))
    xs = spy.Tensor.from_numpy(device, x).with_grads()
    ys = spy.Tensor.empty_like(xs).with_grads()
    grads.softplus.bwds.debug_build_call_data(xs, _result=ys)
    print(f"timing: setup {{setup:.3f}}s, first pass {{time.perf_counter() - t1:.3f}}s (incl. kernel compile)")
""")


def run_probed(tmp_path: Path, extra_env: dict[str, str]) -> tuple[dict, subprocess.CompletedProcess]:
    app = tmp_path / "app.py"
    app.write_text(APP)
    probe = tmp_path / "probe.json"
    env = clean_env(SPREPLAY_BENCH_PROBE=str(probe), SPREPLAY_BENCH_T0=repr(time.time()), **extra_env)
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "phase_probe.py"), str(app)], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(probe.read_text()), proc


def test_probe_attributes_each_call_site_and_the_apps_module_loads(tmp_path: Path) -> None:
    probe, proc = run_probed(tmp_path, {})
    sites = probe["call_sites"]
    assert [(s["module"], s["function"], s["call_mode"]) for s in sites] == [
        ("simple.slang", "add", "prim"),
        ("generics.slang", "mlp<3, 45, 5, 3>", "prim"),
        ("grads.slang", "softplus", "bwds"),
    ]
    for site in sites:
        kinds = [call["kind"] for call in site["slang_calls"]]
        assert kinds == ["front_end", "link", "pipeline_object"], site
        assert len(site["program_hash"]) == 64 and all(c in "0123456789abcdef" for c in site["program_hash"])
        assert site["build_s"] >= sum(call["seconds"] for call in site["slang_calls"]) > 0
        assert probe["device_ready"] <= site["started"]
    loaded = [call["module_name"] for call in probe["app_slang_calls"]]
    assert {"simple.slang", "generics.slang", "grads.slang"} <= set(loaded)
    assert probe["process_spawned"] < probe["probe_start"] < probe["slangpy_imported"] < probe["device_ready"]
    # Every wrapper is a program in slang-rhi's compilation reports, labelled by its hash.
    labels = {report["label"].split(":")[0] for report in probe["reports"]}
    assert {site["program_hash"] for site in sites} <= labels

    run = summarize_run(probe, proc.stdout, proc.stderr)
    assert run["call_sites"] == 3
    assert all(run["phases_s"][name] >= 0 for name in PHASES if name != "other")
    assert abs(sum(run["phases_s"].values()) - run["ready_to_all_first_results_s"]) < 1e-9
    assert run["phases_s"]["front_end"] > 0 and run["phases_s"]["app_modules"] > 0


def test_probe_gives_the_device_the_caches_it_is_told_to(tmp_path: Path) -> None:
    module_cache = tmp_path / "module-cache"
    shader_cache = tmp_path / "shader-cache"
    run_probed(tmp_path, {"SPREPLAY_BENCH_MODULE_CACHE": str(module_cache),
                          "SPREPLAY_BENCH_SHADER_CACHE": str(shader_cache)})
    # sgl writes each module it loads to the module cache as a .slang-module file.
    cached = sorted(p.name for p in module_cache.rglob("*.slang-module"))
    assert {"simple.slang-module", "generics.slang-module", "grads.slang-module"} <= set(cached), cached
    assert shader_cache.is_dir()


def synthetic_probe(started: list[float]) -> dict:
    """A probe record of call sites built at the given times, 0.1 s each."""
    sites = [{"function": f"f{i}", "module": "m.slang", "call_mode": "prim", "started": t, "build_s": 0.1,
              "program_hash": f"{i:064x}", "slang_calls": [{"kind": "front_end", "seconds": 0.05}]}
             for i, t in enumerate(started)]
    reports = [{"label": f"{i:064x}:compute_main", "compile_slang_s": 0.2, "compile_downstream_s": 0.3,
                "create_pipeline_s": 0.1, "entry_points_cached": [False], "pipelines_cached": [False]}
               for i in range(len(started))]
    return {"process_spawned": 90.0, "probe_start": 91.0, "slangpy_imported": 92.0, "device_create_s": 1.0,
            "device_ready": 100.0, "call_sites": sites, "app_slang_calls": [], "reports": reports}


def test_only_call_sites_of_the_first_pass_are_counted() -> None:
    stdout = ("timing: setup 1.000s, first pass 2.000s (incl. kernel compile), steady 1.00 ms/pass over 3 passes\n"
              "timing: first pass ended at unix time 103.000000\n")
    run = summarize_run(synthetic_probe([101.0, 102.0, 150.0]), stdout, "")
    assert run["call_sites"] == 2 and run["call_sites_built_later"] == 1
    assert abs(run["phases_s"]["codegen"] - 1.0) < 1e-9
    assert abs(run["ready_to_all_first_results_s"] - 2.0) < 1e-9


def test_phases_beyond_the_first_pass_are_refused() -> None:
    stdout = "timing: setup 1.000s, first pass 0.500s (incl. kernel compile)\n"
    with pytest.raises(ValueError, match="more than"):
        summarize_run(synthetic_probe([101.0, 102.0]), stdout, "")
