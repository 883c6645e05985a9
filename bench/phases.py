# SPDX-License-Identifier: Apache-2.0
"""Turns one probed process (bench/phase_probe.py's JSON plus the app's timing
line) into the start-up metrics the cold-start benchmark reports."""

from __future__ import annotations

from typing import Any

from app_output import FIRST_PASS_END, SERVED, TIMING

# Where the time from device ready to the last first result went, in order.
PHASES = ["app_modules", "python_build", "front_end", "link", "codegen", "module_load", "other"]
PHASE_LABELS = {
    "app_modules": "app's module loads",
    "python_build": "Python call-data build",
    "front_end": "Slang front end",
    "link": "link",
    "codegen": "codegen + NVRTC",
    "module_load": "module load / driver JIT",
    "other": "everything else",
}


def _report_by_hash(reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {report["label"].split(":", 1)[0]: report for report in reports}


def call_site_rows(probe: dict[str, Any], built_before: float | None = None) -> list[dict[str, Any]]:
    """One row per call site built (before `built_before`, a time.time(), if
    given), in build order, with its phases. A call site's code is generated at
    its first dispatch, right after its build, so its report goes with it."""
    reports = _report_by_hash(probe["reports"])
    rows = []
    for site in probe["call_sites"]:
        if built_before is not None and site.get("started", 0.0) > built_before:
            continue
        slang = {kind: sum(c["seconds"] for c in site["slang_calls"] if c["kind"] == kind)
                 for kind in ("front_end", "link")}
        report = reports.get(site["program_hash"], {})
        rows.append({
            "call_site": f"{site['module']}:{site['function']}" + ("" if site["call_mode"] == "prim" else
                                                                  f".{site['call_mode']}"),
            # The pipeline object is created with compilation deferred: Python-side cost.
            "python_build_s": site["build_s"] - slang["front_end"] - slang["link"],
            "front_end_s": slang["front_end"],
            "link_s": slang["link"],
            "codegen_slang_s": report.get("compile_slang_s", 0.0),
            "codegen_downstream_s": report.get("compile_downstream_s", 0.0),
            "module_load_s": report.get("create_pipeline_s", 0.0),
            "shader_cache_hit": any(report.get("entry_points_cached", [])),
            "compiled": bool(report) and not any(report["entry_points_cached"])
            and report["compile_slang_s"] + report["compile_downstream_s"] > 0,
        })
    return rows


def summarize_run(probe: dict[str, Any], stdout: str, stderr: str) -> dict[str, Any]:
    """The process-level metrics of one run, with the phase sums."""
    timing = TIMING.search(stdout)
    if timing is None or probe.get("device_ready") is None:
        raise ValueError("the app printed no timing line or created no device")
    end = FIRST_PASS_END.search(stdout)
    rows = call_site_rows(probe, float(end["end"]) if end else None)
    setup_s, first_pass_s = float(timing["setup"]), float(timing["first"])
    ready_to_results = setup_s - probe["device_create_s"] + first_pass_s
    phases = {
        "app_modules": sum(c["seconds"] for c in probe["app_slang_calls"]),
        "python_build": sum(r["python_build_s"] for r in rows),
        "front_end": sum(r["front_end_s"] for r in rows),
        "link": sum(r["link_s"] for r in rows),
        "codegen": sum(r["codegen_slang_s"] + r["codegen_downstream_s"] for r in rows),
        "module_load": sum(r["module_load_s"] for r in rows),
    }
    phases["other"] = ready_to_results - sum(phases.values())
    if phases["other"] < -0.01:
        raise ValueError(f"the phases add up to {sum(phases.values()):.3f} s, more than the "
                         f"{ready_to_results:.3f} s they are part of: work after the first pass was counted")
    spawned = probe["process_spawned"]
    result: dict[str, Any] = {
        "start_to_device_ready_s": probe["device_ready"] - spawned if spawned else None,
        "interpreter_start_s": probe["probe_start"] - spawned if spawned else None,
        "import_slangpy_s": probe["slangpy_imported"] - probe["probe_start"],
        "device_create_s": probe["device_create_s"],
        "ready_to_all_first_results_s": ready_to_results,
        "first_pass_s": first_pass_s,
        "steady_ms_per_pass": float(timing["steady"]) if timing["steady"] else None,
        "phases_s": phases,
        "codegen_slang_s": sum(r["codegen_slang_s"] for r in rows),
        "codegen_downstream_s": sum(r["codegen_downstream_s"] for r in rows),
        "call_sites": len(rows),
        "call_sites_built_later": len(probe["call_sites"]) - len(rows),
        "call_sites_compiled": sum(r["compiled"] for r in rows),
        "shader_cache_hits": sum(r["shader_cache_hit"] for r in rows),
        "per_call_site": rows,
    }
    if served := SERVED.search(stderr):
        result["spreplay_served"] = int(served["served"])
        result["spreplay_compiled"] = int(served["compiled"])
        if served["modules_served"] is not None:
            result["spreplay_modules_served"] = int(served["modules_served"])
            result["spreplay_modules_compiled"] = int(served["modules_compiled"])
    return result


def dominant_phase(phases: dict[str, float]) -> str:
    return max(PHASES, key=lambda name: phases.get(name, 0.0))
