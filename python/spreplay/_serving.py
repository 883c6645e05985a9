"""Serves kernels from an archive (SLANGPY_KERNELS) and reports how it went."""

from __future__ import annotations

import atexit
import os
import sys

from . import _hooks
from ._activation import switch_is_on
from ._native import Native, NativeError
from ._slangpy_patches import call_site_hub

STRICT = "SLANGPY_KERNELS_STRICT"
STRICT_MODULES = "SLANGPY_KERNELS_STRICT_MODULES"
SUMMARY = "SLANGPY_KERNELS_SUMMARY"


# The kind names `spreplay compile` writes into archives.
_KIND_NAMES = {"call": "call", "backwardCall": "bwds", "rawDispatch": "dispatch", "rayTracing": "raytracing"}


def _name_call_site(native: Native, description: dict) -> None:
    kind = _KIND_NAMES.get(description["kind"], description["kind"])
    native.name_call_site(description["slangpyHash"], description["module"], description["function"], kind)


def format_summary(summary: dict) -> str:
    text = (
        f"spreplay: {summary['served']} kernel(s) served from {summary.get('archive', 'no archive')}, "
        f"{summary['compiled'] + summary['notKeyable']} compiled"
    )
    if summary["refused"]:
        text += f", {summary['refused']} refused"
    text += (
        f"; {summary.get('modulesServed', 0)} module(s) served as IR, "
        f"{summary.get('modulesCompiled', 0)} loaded from source"
    )
    if summary.get("modulesRefused"):
        text += f", {summary['modulesRefused']} refused"
    for miss in summary.get("misses", []):
        outcome = "refused" if miss.get("refused") else "compiled"
        text += f"\n  {outcome} {miss['callSite']}: {miss['reason']}"
    for miss in summary.get("moduleMisses", []):
        outcome = "refused" if miss.get("refused") else "loaded from source"
        text += f"\n  {outcome} {miss['module']}: {miss['reason']}"
    return text


def start_serving(archive_path: str, verbose: bool) -> Native:
    native = _hooks.install(verbose=verbose)
    strict = switch_is_on(STRICT)
    strict_modules = switch_is_on(STRICT_MODULES)
    path = os.path.abspath(archive_path)
    try:
        native.serve_archive(path, strict, strict_modules)
    except NativeError as error:
        message = f"spreplay: cannot serve kernels from {archive_path}: {error}"
        if strict:
            native.refuse_all(f"{message} (and {STRICT} is set)")
        print(f"{message}; {'every kernel will fail' if strict else 'kernels compile as usual'}", file=sys.stderr)
    call_site_hub(_hooks.build().patches).call_site_observers.append(
        lambda description: _name_call_site(native, description))
    if switch_is_on(SUMMARY):
        atexit.register(lambda: print(format_summary(native.summary()), file=sys.stderr))
    return native
