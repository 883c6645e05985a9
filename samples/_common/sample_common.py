# SPDX-License-Identifier: Apache-2.0
"""Tiny helpers shared by the spreplay sample apps.

* device choice:  env SPREPLAY_SAMPLE_DEVICE = cpu | cuda | vulkan; when unset,
  CUDA if slangpy can see a CUDA adapter, else CPU.
* command line:   --out PATH.npz (save every output array), --repeat N.
* checking:       Checker.check() compares against a numpy reference, keeps the
  arrays for --out and prints one short line per call site.
* run_app():      runs the app body N times, verifies that every repetition
  produced bit-identical outputs, saves them and prints "OK <crc32>".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np
import slangpy as spy

DEVICE_ENV = "SPREPLAY_SAMPLE_DEVICE"
_DEVICE_TYPES = {
    "cpu": spy.DeviceType.cpu,
    "cuda": spy.DeviceType.cuda,
    "vulkan": spy.DeviceType.vulkan,
}


class CheckFailed(Exception):
    pass


def _cuda_available() -> bool:
    try:
        return len(spy.Device.enumerate_adapters(spy.DeviceType.cuda)) > 0
    except Exception:
        pass
    try:  # enumeration unavailable: fall back to simply trying to create one
        spy.create_device(spy.DeviceType.cuda).close()
        return True
    except Exception:
        return False


def pick_device_type() -> spy.DeviceType:
    name = os.environ.get(DEVICE_ENV, "").strip().lower()
    if not name:
        return spy.DeviceType.cuda if _cuda_available() else spy.DeviceType.cpu
    if name not in _DEVICE_TYPES:
        sys.exit(f"error: {DEVICE_ENV}={name!r}, expected one of {'|'.join(_DEVICE_TYPES)}")
    return _DEVICE_TYPES[name]


REPORTS_ENV = "SPREPLAY_SAMPLE_REPORTS"
# Devices this app created, for the compilation-report line at exit.
_devices: list[spy.Device] = []


def create_device(include_paths: Sequence[os.PathLike | str] = (), debug_info: bool = False) -> spy.Device:
    """A device of the chosen type; `debug_info` compiles with Slang's standard
    debug information, as slangpy's own test devices do."""
    dev_type = pick_device_type()
    reports = os.environ.get(REPORTS_ENV, "") not in ("", "0")
    if debug_info:
        # What spy.create_device does, plus the debug information option.
        paths = [spy.SHADER_PATH, *(str(p) for p in include_paths)]
        options = spy.SlangCompilerOptions({"include_paths": paths,
                                            "debug_info": spy.SlangDebugInfoLevel.standard})
        device = spy.Device(type=dev_type, compiler_options=options, enable_compilation_reports=reports)
    else:
        device = spy.create_device(dev_type, include_paths=[str(p) for p in include_paths],
                                   enable_compilation_reports=reports)
    print(f"device: {device.info.type.name} ({device.info.adapter_name})")
    if reports:
        _devices.append(device)
    return device


def print_compilation_reports() -> None:
    """One line summing Slang's compilation reports: how much codegen ran."""
    for device in _devices:
        if not hasattr(device, "get_compilation_reports"):  # slangpy before 0.43
            print("compilation-report: unavailable in this slangpy")
            continue
        entries = [ep for report in device.get_compilation_reports() for ep in report["entry_point_reports"]]
        slang = sum(ep["compile_slang_time"] for ep in entries)
        downstream = sum(ep["compile_downstream_time"] for ep in entries)
        compiled = sum(1 for ep in entries if ep["compile_slang_time"] > 0 or ep["compile_downstream_time"] > 0)
        print(f"compilation-report: entry_points={len(entries)} compiled={compiled} "
              f"slang_s={slang:.6f} downstream_s={downstream:.6f}")


def parse_args(description: str, flags: Sequence[tuple[str, str]] = ()) -> argparse.Namespace:
    """The common options plus each (flag, help) of `flags`, an on/off switch."""
    p = argparse.ArgumentParser(description=description)
    for flag, help_text in flags:
        p.add_argument(flag, action="store_true", help=help_text)
    p.add_argument("--out", metavar="PATH.npz", help="save every output array to this .npz file")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run all call sites N times (default 1)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    return args


class Checker:
    """Collects the outputs of one pass over all call sites."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.outputs: dict[str, np.ndarray] = {}

    def check(self, site: str, outputs: dict[str, tuple[Any, Any]], rtol: float = 1e-5,
              atol: float = 1e-5, note: str = "", keep: bool = True, quiet: bool = False) -> float:
        """Compare each (got, ref) pair; store `got` under `site/name` (or `site` if the
        only name is ""). Raises CheckFailed beyond rtol/atol (0/0 = exact)."""
        worst = 0.0
        shapes = []
        for name, (got, ref) in outputs.items():
            key = f"{site}/{name}" if name else site
            got = np.asarray(got)
            ref = np.asarray(ref)
            if got.shape != ref.shape:
                raise CheckFailed(f"{key}: shape {got.shape} != reference {ref.shape}")
            if rtol == 0 and atol == 0:
                bad = got != ref
                err = float(np.count_nonzero(bad))
                if err:
                    i = np.flatnonzero(bad)[0]
                    raise CheckFailed(f"{key}: {int(err)} elements differ (first at flat index {i}:"
                                      f" {got.ravel()[i]} vs {ref.ravel()[i]})")
            else:
                g = got.astype(np.float64)
                r = ref.astype(np.float64)
                diff = np.abs(g - r)
                err = float(diff.max()) if diff.size else 0.0
                if not np.all(np.isfinite(g)) or np.any(diff > atol + rtol * np.abs(r)):
                    i = int(np.argmax(diff - rtol * np.abs(r)))
                    raise CheckFailed(f"{key}: max abs error {err:.3g} beyond tolerance "
                                      f"(rtol={rtol}, atol={atol}); flat index {i}: "
                                      f"{g.ravel()[i]!r} vs reference {r.ravel()[i]!r}")
            worst = max(worst, err)
            shapes.append(f"{got.dtype}{list(got.shape)}")
            if keep:
                if key in self.outputs:
                    raise CheckFailed(f"output key {key!r} used twice")
                self.outputs[key] = np.array(got, copy=True)
        if self.verbose and not quiet:
            kind = "exact" if rtol == 0 and atol == 0 else f"max_err={worst:.2e}"
            extra = f" {note}" if note else ""
            print(f"  {site:<40} {' '.join(shapes):<22} {kind}{extra}")
        return worst

    def say(self, site: str, text: str) -> None:
        """Print a one-line summary for a call site (first repetition only)."""
        if self.verbose:
            print(f"  {site:<40} {text}")

    def fail(self, message: str) -> None:
        raise CheckFailed(message)


def checksum(outputs: dict[str, np.ndarray]) -> str:
    crc = 0
    for key in sorted(outputs):
        arr = np.ascontiguousarray(outputs[key])
        crc = zlib.crc32(f"{key}:{arr.dtype.str}:{arr.shape}".encode(), crc)
        crc = zlib.crc32(arr.tobytes(), crc)
    return f"{crc:08x}"


def run_app(args: argparse.Namespace, body: Callable[[Checker], None],
            setup_seconds: Optional[float] = None) -> None:
    """Run `body` args.repeat times; exit(1) with a message on any mismatch."""
    first: Optional[dict[str, np.ndarray]] = None
    times = []
    try:
        for rep in range(args.repeat):
            ck = Checker(verbose=(rep == 0))
            t0 = time.perf_counter()
            body(ck)
            times.append(time.perf_counter() - t0)
            if first is None:
                first_pass_end = time.time()
                first = ck.outputs
            else:
                if sorted(first) != sorted(ck.outputs):
                    raise CheckFailed(f"repetition {rep}: different set of outputs")
                for k, v in first.items():
                    w = ck.outputs[k]
                    if v.dtype != w.dtype or v.shape != w.shape or v.tobytes() != w.tobytes():
                        raise CheckFailed(f"repetition {rep}: {k} is not bit-identical to repetition 0")
    except CheckFailed as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)

    assert first is not None
    timing = f"timing: first pass {times[0]:.3f}s (incl. kernel compile)"
    if setup_seconds is not None:
        timing = f"timing: setup {setup_seconds:.3f}s, first pass {times[0]:.3f}s (incl. kernel compile)"
    if len(times) > 1:
        steady = times[1:]
        timing += f", steady {1e3 * sum(steady) / len(steady):.2f} ms/pass over {len(steady)} passes"
    print(timing)
    # Wall-clock, so that a benchmark can tell work of the first pass from later work.
    print(f"timing: first pass ended at unix time {first_pass_end:.6f}")
    print_compilation_reports()
    if args.out:
        np.savez(args.out, **first)
        print(f"saved {len(first)} arrays to {args.out}")
    print(f"OK {checksum(first)}")
