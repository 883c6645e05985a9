"""Describes slangpy call sites for the trace, from slangpy's own build data.

Only reads what slangpy computed anyway; every attribute is read defensively,
so that a slangpy change degrades the description instead of the app.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any


def _text(value: Any) -> str:
    if value is None:
        return ""
    full_name = getattr(value, "full_name", None)
    if isinstance(full_name, str):
        return full_name
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def _python_type(marshall: Any) -> str:
    """The marshall slangpy chose for the Python value, and the Slang type it maps to."""
    mapped = _text(getattr(marshall, "slang_type", None))
    kind = type(marshall).__name__
    return f"{kind}({mapped})" if mapped else kind


def describe_argument(variable: Any) -> dict[str, Any]:
    python = getattr(variable, "python", None)
    children = getattr(variable, "children", None) or {}
    dimensionality = getattr(variable, "call_dimensionality", None)
    return {
        "name": str(getattr(variable, "name", "")),
        "pythonType": _python_type(python),
        "slangType": _text(getattr(variable, "slang_type", None)),
        "vectorType": _text(getattr(variable, "vector_type", None)),
        "dimensionality": dimensionality if isinstance(dimensionality, int) else -1,
        "access": str(getattr(variable, "access", "")),
        "differentiable": bool(getattr(variable, "differentiable", False)),
        "paramIndex": int(getattr(variable, "param_index", -1) or -1),
        "children": [describe_argument(child) for child in children.values()],
    }


def _wrapper_fields(build_info: Any, code: str, seconds: float) -> dict[str, Any]:
    """What every kind of call site records about its wrapper and its build."""
    module = getattr(build_info, "module", None)
    device = getattr(module, "device", None)
    return {
        "module": _text(module),
        "function": _text(getattr(build_info, "name", "")),
        "typeConformances": [str(c) for c in getattr(build_info, "type_conformances", None) or []],
        "linkedModules": [_text(m) for m in getattr(module, "link", [])],
        "deferTargetCompilation": bool(getattr(build_info, "options", {}).get("defer_target_compilation", True)),
        "deviceType": _text(getattr(getattr(device, "info", None), "type", "")),
        "wrapperSourceDigest": list(hashlib.sha256(code.encode()).digest()),
        "buildSeconds": seconds,
        "threadName": threading.current_thread().name,
    }


def describe_call(call_data: Any, build_info: Any, bindings: Any, seconds: float) -> dict[str, Any]:
    code: str = getattr(call_data, "code", "") or ""
    conformances = getattr(build_info, "type_conformances", [])
    # The same identity slangpy gives the wrapper module (calldata.py): it is
    # the name the kernel's module carries in the trace.
    slangpy_hash = hashlib.sha256((str(conformances) + code).encode()).hexdigest()
    call_mode = _text(getattr(call_data, "call_mode", ""))
    pipeline_type = _text(getattr(build_info, "pipeline_type", ""))
    if "ray" in pipeline_type.lower():
        kind = "rayTracing"
    elif "bwds" in call_mode:
        kind = "backwardCall"
    else:
        kind = "call"
    arguments = [describe_argument(v) for v in getattr(bindings, "args", [])]
    arguments += [describe_argument(v) for v in getattr(bindings, "kwargs", {}).values()]
    return {
        **_wrapper_fields(build_info, code, seconds),
        "slangpyHash": slangpy_hash,
        "kind": kind,
        "callMode": call_mode,
        "arguments": arguments,
        "entryPoints": ["raygen_main"] if kind == "rayTracing" else ["compute_main"],
        "useEntrypointArgs": bool(getattr(call_data, "use_entrypoint_args", False)),
    }


def describe_dispatch(dispatch_data: Any, function: Any, code: str, seconds: float) -> dict[str, Any]:
    """A raw dispatch (`function.dispatch(...)`): slangpy names its wrapper
    module by the first 16 hex digits of the code's SHA-256 (dispatchdata.py)."""
    build_info = function.calc_build_info()
    fields = _wrapper_fields(build_info, code, seconds)
    bindings = getattr(dispatch_data, "debug_only_bindings", None)
    return {
        **fields,
        "slangpyHash": bytes(fields["wrapperSourceDigest"]).hex()[:16],
        "kind": "rawDispatch",
        "callMode": "prim",
        "arguments": [describe_argument(v) for v in getattr(bindings, "kwargs", {}).values()],
        "entryPoints": [f"{fields['function']}_entrypoint"],
    }


def describe_device(device: Any) -> dict[str, Any]:
    info = getattr(device, "info", None)
    limits = getattr(info, "limits", None)
    named_limits = []
    for name in dir(limits):
        if name.startswith("_"):
            continue
        value = getattr(limits, name, None)
        if callable(value):
            continue
        named_limits.append({"name": name, "value": str(value)})
    return {
        "type": _text(getattr(info, "type", "")),
        "name": str(getattr(info, "adapter_name", "")),
        "apiVersion": str(getattr(info, "api_name", "")),
        "limits": named_limits,
    }
