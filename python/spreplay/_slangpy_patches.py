"""Wraps the slangpy functions where call sites are built, to record them.

The wrappers run only when a call site is built for the first time; dispatches
of a built call site never reach them, so recording costs nothing per dispatch.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from ._call_sites import describe_call, describe_device, describe_dispatch

CallSiteObserver = Callable[[dict[str, Any]], None]
DeviceObserver = Callable[[dict[str, Any]], None]


def _patch_calldata(module: ModuleType, on_call_site: CallSiteObserver, on_device: DeviceObserver) -> None:
    call_data_class = module.CallData
    original = call_data_class._try_build_shader
    seen_devices: set[int] = set()

    # The same arguments as slangpy's method (context, build_info, bindings,
    # type_conformances), passed through as they come.
    def _try_build_shader(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = original(self, *args, **kwargs)
        seconds = time.perf_counter() - start
        try:
            build_info = args[1] if len(args) > 1 else kwargs["build_info"]
            bindings = args[2] if len(args) > 2 else kwargs["bindings"]
            device = getattr(getattr(build_info, "module", None), "device", None)
            if device is not None and id(device) not in seen_devices:
                seen_devices.add(id(device))
                on_device(describe_device(device))
            on_call_site(describe_call(self, build_info, bindings, seconds))
        except Exception as error:  # never let recording break the app
            print(f"spreplay: could not record a call site: {error}", file=sys.stderr)
        return result

    call_data_class._try_build_shader = _try_build_shader


# The code the last CodeGen.finish produced on this thread: DispatchData
# generates its wrapper, hashes it and drops it, all inside its constructor.
_last_code = threading.local()


def _patch_codegen(module: ModuleType) -> None:
    original = module.CodeGen.finish

    def finish(self: Any, *args: Any, **kwargs: Any) -> str:
        code = original(self, *args, **kwargs)
        _last_code.value = code
        return code

    module.CodeGen.finish = finish


def _patch_dispatchdata(module: ModuleType, on_call_site: CallSiteObserver) -> None:
    dispatch_data_class = module.DispatchData
    original = dispatch_data_class.__init__

    def __init__(self: Any, func: Any, *args: Any, **kwargs: Any) -> None:
        _last_code.value = None
        start = time.perf_counter()
        original(self, func, *args, **kwargs)
        seconds = time.perf_counter() - start
        code = getattr(_last_code, "value", None)
        if not code:
            return
        try:
            on_call_site(describe_dispatch(self, func, code, seconds))
        except Exception as error:  # never let recording break the app
            print(f"spreplay: could not record a raw dispatch: {error}", file=sys.stderr)

    dispatch_data_class.__init__ = __init__


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs a patch right after a named module has been executed."""

    def __init__(self, module_name: str, patch: Callable[[ModuleType], None]) -> None:
        self._module_name = module_name
        self._patch = patch
        self._spec: importlib.machinery.ModuleSpec | None = None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._module_name or self._spec is not None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._spec = spec
        self._original_loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._original_loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._original_loader.exec_module(module)
        sys.meta_path.remove(self)
        try:
            self._patch(module)
        except Exception as error:  # a slangpy this spreplay does not know: still import it
            print(f"spreplay: cannot follow {self._module_name} ({error}); call sites go unnamed and "
                  "unrecorded, kernels are still keyed and served", file=sys.stderr)


class CallSiteHub:
    """Fans each built call site out to every part of spreplay that wants it."""

    def __init__(self) -> None:
        self.call_site_observers: list[CallSiteObserver] = []
        self.device_observers: list[DeviceObserver] = []

    def call_site(self, description: dict[str, Any]) -> None:
        for observer in self.call_site_observers:
            observer(description)

    def device(self, description: dict[str, Any]) -> None:
        for observer in self.device_observers:
            observer(description)


@dataclass(frozen=True)
class Patch:
    """One slangpy function wrapped, right after its module is imported."""

    module: str
    function: str  # its qualified name in `module`
    apply: Callable[[ModuleType, CallSiteHub], None]


# Where each supported slangpy builds call sites, by the names
# supported_builds.json gives them. A release whose Python moved or changed
# these functions gets a set of its own (tools/check_slangpy_release.py
# compares them between releases).
PATCH_SETS: dict[str, tuple[Patch, ...]] = {
    "calldata-codegen-dispatchdata": (
        Patch("slangpy.core.calldata", "CallData._try_build_shader",
              lambda module, hub: _patch_calldata(module, hub.call_site, hub.device)),
        Patch("slangpy.bindings.codegen", "CodeGen.finish", lambda module, hub: _patch_codegen(module)),
        Patch("slangpy.core.dispatchdata", "DispatchData.__init__",
              lambda module, hub: _patch_dispatchdata(module, hub.call_site)),
    ),
}

_hub: CallSiteHub | None = None


def call_site_hub(patches: str) -> CallSiteHub:
    """The process's hub; slangpy is patched, with the named set of patches,
    when it is first asked for."""
    global _hub
    if _hub is None:
        hub = CallSiteHub()
        for patch in PATCH_SETS[patches]:
            sys.meta_path.insert(0, _PatchAfterImport(patch.module, lambda module, patch=patch: patch.apply(module, hub)))
        _hub = hub
    return _hub
