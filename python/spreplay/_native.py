"""Loads spreplay's native libraries and declares their C interface (runtime/c_api.h)."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

from ._supported_builds import SupportedBuild

_LIB_DIR_VARIABLE = "SPREPLAY_LIB_DIR"

CompileCallback = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double
)


class NativeError(RuntimeError):
    """The native library refused a request; the message says why."""


def library_dir() -> Path:
    """The shim, and a folder per Slang build with its native core and tool."""
    override = os.environ.get(_LIB_DIR_VARIABLE)
    return Path(override) if override else Path(__file__).resolve().parent / "_lib"


class Native:
    """The shim (global scope, interposes slang_createGlobalSession2) and the
    native core built against `build`'s slang.h."""

    def __init__(self, build: SupportedBuild) -> None:
        directory = library_dir()
        shim_path = directory / "libspreplay_shim.so"
        native_path = directory / build.native_subdirectory / "libspreplay_native.so"
        for path in (shim_path, native_path):
            if not path.exists():
                raise NativeError(f"{path} is missing: this installation of spreplay has no build for Slang "
                                  f"{build.slang}; install a spreplay release wheel, which has one for every "
                                  "supported slangpy release")
        # The core first: if it cannot load, nothing of spreplay stays in the
        # process. The shim enters the global scope in install_hooks, once the
        # core has accepted the Slang build, and before slangpy's libsgl loads,
        # so that libsgl's slang_createGlobalSession2 binds to it.
        self.core = ctypes.CDLL(str(native_path), mode=ctypes.RTLD_LOCAL)
        self._shim_path = shim_path
        self.shim: ctypes.CDLL | None = None
        self._declare()

    def _declare(self) -> None:
        core = self.core
        core.spreplay_last_error.restype = ctypes.c_char_p
        core.spreplay_configure.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
        core.spreplay_configure.restype = ctypes.c_int
        core.spreplay_add_kernel.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        core.spreplay_add_kernel.restype = ctypes.c_int
        core.spreplay_on_compile.argtypes = [CompileCallback]
        core.spreplay_on_compile.restype = None
        core.spreplay_record_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        core.spreplay_record_open.restype = ctypes.c_int
        core.spreplay_record_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        core.spreplay_record_json.restype = ctypes.c_int
        core.spreplay_serve_archive.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        core.spreplay_serve_archive.restype = ctypes.c_int
        core.spreplay_refuse_all.argtypes = [ctypes.c_char_p]
        core.spreplay_refuse_all.restype = None
        core.spreplay_name_call_site.argtypes = [ctypes.c_char_p] * 4
        core.spreplay_name_call_site.restype = None
        core.spreplay_summary_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        core.spreplay_summary_json.restype = ctypes.c_size_t

    def _check(self, result: int) -> None:
        if result != 0:
            raise NativeError(self.core.spreplay_last_error().decode(errors="replace"))

    def install_hooks(self, slang_library: Path, toolchain: str, verbose: bool) -> None:
        # The core checks Slang's own build tag first: until it has agreed,
        # nothing of spreplay is in the process's global scope.
        self._check(self.core.spreplay_configure(str(slang_library).encode(), toolchain.encode(), int(verbose)))
        self.shim = shim = ctypes.CDLL(str(self._shim_path), mode=ctypes.RTLD_GLOBAL)
        shim.spreplay_shim_configure.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
        shim.spreplay_shim_configure.restype = ctypes.c_int
        shim.spreplay_shim_error.restype = ctypes.c_char_p
        callback = ctypes.cast(self.core.spreplay_on_global_session, ctypes.c_void_p)
        if shim.spreplay_shim_configure(str(slang_library).encode(), callback, None) != 0:
            raise NativeError(shim.spreplay_shim_error().decode(errors="replace"))

    def add_kernel(self, key_hex: str, code: bytes) -> None:
        self._check(self.core.spreplay_add_kernel(key_hex.encode(), code, len(code)))

    def on_compile(self, callback: CompileCallback) -> None:
        self.core.spreplay_on_compile(callback)

    def serve_archive(self, path: str, strict: bool, strict_modules: bool = False) -> None:
        self._check(self.core.spreplay_serve_archive(path.encode(), int(strict), int(strict_modules)))

    def refuse_all(self, reason: str) -> None:
        self.core.spreplay_refuse_all(reason.encode())

    def name_call_site(self, wrapper_module: str, module: str, function: str, kind: str) -> None:
        self.core.spreplay_name_call_site(wrapper_module.encode(), module.encode(), function.encode(), kind.encode())

    def summary(self) -> dict:
        size = self.core.spreplay_summary_json(None, 0)
        buffer = ctypes.create_string_buffer(size + 1)
        self.core.spreplay_summary_json(buffer, size + 1)
        return json.loads(buffer.value.decode())

    def record_open(self, path: str, process_json: str) -> None:
        self._check(self.core.spreplay_record_open(path.encode(), process_json.encode()))

    def record_json(self, kind: str, json_text: str) -> None:
        self._check(self.core.spreplay_record_json(kind.encode(), json_text.encode()))
