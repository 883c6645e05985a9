# SPDX-License-Identifier: Apache-2.0
"""Runs a slangpy app and writes where its start-up time went, per call site.

    SPREPLAY_BENCH_PROBE=out.json python bench/phase_probe.py APP.py [ARGS...]

The probe wraps slangpy's Python-visible steps of building a call site and
reads slang-rhi's compilation reports at exit, so the app itself is unchanged:

  call-data build   CallData.build: type resolution, binding and wrapper codegen
                    in Python, plus the three Slang calls below
  front end         load_module_from_source of the session (parse, check, lower);
                    the app's own load_module calls are counted apart
  link              SlangSession.link_program
  pipeline object   Device.create_compute_pipeline (deferred: no code yet)
  codegen           Slang's codegen and NVRTC, from the compilation reports
                    (they run at the first dispatch)
  module load       pipeline creation in the reports: cuModuleLoadData, which
                    includes the driver's JIT when it gets PTX

Optional environment:
  SPREPLAY_BENCH_T0            time.time() just before the process was spawned
  SPREPLAY_BENCH_SHADER_CACHE  give the device this shader_cache_path
  SPREPLAY_BENCH_MODULE_CACHE  give the device this module_cache_path
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import runpy
import sys
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable

PROBE_START = time.time()

import slangpy as spy  # noqa: E402
from slangpy.core import calldata, utils  # noqa: E402

SLANGPY_IMPORTED = time.time()


@dataclass
class SlangCall:
    kind: str  # "front_end" | "link" | "pipeline_object"
    seconds: float
    module_name: str = ""
    from_source: bool = False


@dataclass
class CallSiteBuild:
    function: str
    module: str
    call_mode: str
    started: float = 0.0  # time.time()
    build_s: float = 0.0
    program_hash: str = ""
    slang_calls: list[SlangCall] = field(default_factory=list)


@dataclass
class Probe:
    """What one process did; written as JSON at exit."""

    process_spawned: float | None
    probe_start: float
    slangpy_imported: float
    device_create_s: float | None = None
    device_ready: float | None = None
    call_sites: list[CallSiteBuild] = field(default_factory=list)
    # Slang calls made outside any call-site build: the app's own modules.
    app_slang_calls: list[SlangCall] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    building: CallSiteBuild | None = None
    devices: list[Any] = field(default_factory=list)

    def note_slang_call(self, call: SlangCall) -> None:
        if self.building is not None:
            self.building.slang_calls.append(call)
            # slangpy names each wrapper module by the hash it labels the program with.
            if call.kind == "front_end" and call.from_source and not self.building.program_hash:
                self.building.program_hash = call.module_name
        else:
            self.app_slang_calls.append(call)

    def to_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, list):
                return [plain(item) for item in value]
            return asdict(value) if is_dataclass(value) else value

        return {f.name: plain(getattr(self, f.name)) for f in fields(self) if f.name not in ("building", "devices")}


def _timed(probe: Probe, kind: str, original: Callable[..., Any], from_source: bool = False) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = original(self, *args, **kwargs)
        name = args[0] if kind == "front_end" and args and isinstance(args[0], str) else ""
        probe.note_slang_call(SlangCall(kind, time.perf_counter() - start, name, from_source))
        return result

    return wrapper


def _patch_call_data_build(probe: Probe) -> None:
    original = calldata.CallData.build

    def build(self: Any, build_info: Any, *args: Any, **kwargs: Any) -> None:
        outer = probe.building
        site = CallSiteBuild(
            function=str(getattr(build_info, "name", "?")),
            module=str(getattr(getattr(build_info, "module", None), "name", "?")),
            call_mode=str(getattr(getattr(build_info, "call_mode", None), "name", "?")),
        )
        probe.building = site
        site.started = time.time()
        start = time.perf_counter()
        try:
            original(self, build_info, *args, **kwargs)
        finally:
            site.build_s = time.perf_counter() - start
            probe.building = outer
            probe.call_sites.append(site)

    calldata.CallData.build = build


def _patch_create_device(probe: Probe) -> None:
    original = utils.create_device
    shader_cache = os.environ.get("SPREPLAY_BENCH_SHADER_CACHE")
    module_cache = os.environ.get("SPREPLAY_BENCH_MODULE_CACHE")

    def create_device(*args: Any, **kwargs: Any) -> Any:
        kwargs["enable_compilation_reports"] = True
        start = time.perf_counter()
        if shader_cache or module_cache:
            device = _device_with_caches(original, shader_cache, module_cache, *args, **kwargs)
        else:
            device = original(*args, **kwargs)
        probe.device_create_s = time.perf_counter() - start
        probe.device_ready = time.time()
        probe.devices.append(device)
        return device

    spy.create_device = create_device
    utils.create_device = create_device


def _device_with_caches(original: Callable[..., Any], shader_cache: str | None, module_cache: str | None,
                        *args: Any, **kwargs: Any) -> Any:
    """What slangpy's create_device builds, plus the caches it does not expose."""
    bound = inspect.signature(original).bind(*args, **kwargs)
    bound.apply_defaults()
    options = dict(bound.arguments)
    slang_dir = Path(utils.__file__).resolve().parent.parent / "slang"
    include_paths = [str(slang_dir)] + [str(p) for p in options.pop("include_paths")]
    return spy.Device(**options, compiler_options={"include_paths": include_paths},
                      shader_cache_path=shader_cache, module_cache_path=module_cache)


def _read_reports(probe: Probe) -> None:
    for device in probe.devices:
        try:
            reports = device.get_compilation_reports()
        except Exception as error:  # a device the app closed: say so, keep the rest
            print(f"phase_probe: no compilation reports from a device: {error}", file=sys.stderr)
            continue
        for report in reports:
            probe.reports.append({
                "label": report["label"],
                "compile_slang_s": report["compile_slang_time"],
                "compile_downstream_s": report["compile_downstream_time"],
                "create_pipeline_s": report["create_pipeline_time"],
                "entry_points_cached": [ep["is_cached"] for ep in report["entry_point_reports"]],
                "pipelines_cached": [p["is_cached"] for p in report["pipeline_reports"]],
            })


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: SPREPLAY_BENCH_PROBE=out.json python bench/phase_probe.py APP.py [ARGS...]")
    out = os.environ.get("SPREPLAY_BENCH_PROBE")
    spawned = os.environ.get("SPREPLAY_BENCH_T0")
    probe = Probe(float(spawned) if spawned else None, PROBE_START, SLANGPY_IMPORTED)
    for owner in (spy.SlangSession, spy.Device):
        owner.load_module = _timed(probe, "front_end", owner.load_module)
        owner.load_module_from_source = _timed(probe, "front_end", owner.load_module_from_source, from_source=True)
    spy.SlangSession.link_program = _timed(probe, "link", spy.SlangSession.link_program)
    spy.Device.create_compute_pipeline = _timed(probe, "pipeline_object", spy.Device.create_compute_pipeline)
    _patch_call_data_build(probe)
    _patch_create_device(probe)

    def write() -> None:
        _read_reports(probe)
        if out:
            with open(out, "w") as f:
                json.dump(probe.to_json(), f, indent=1)

    # Exit handlers run last-registered first: this one runs after any the app
    # registers and before slangpy's own, registered at import.
    atexit.register(write)
    app = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(app, run_name="__main__")


if __name__ == "__main__":
    main()
