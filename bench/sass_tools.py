# SPDX-License-Identifier: Apache-2.0
"""ptxas against nvJitLink, the two tools `spreplay compile --sass` can build
SASS with, over every kernel's PTX in an archive (OptiX programs aside, which
get no SASS): each kernel built for each arch in turn, one build at a time,
in rounds that alternate which tool goes first. Prints each round's wall and
CPU time (this process's and its children's) and the cubins' bytes. Needs no
GPU.

    python bench/sass_tools.py ARCHIVE.sprk [--arch 90,...] [--rounds 2]
                               [--kernel 'wave_net<128> (bwds)']

ptxas runs as `spreplay compile` runs it: one process per build, its PTX
written to a file of its own first. nvJitLink runs in this process, with the
options the compile passes it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def archived_ptx(archive: Path, kernel: str | None) -> list[bytes]:
    """The PTX of each kernel in `archive` that gets SASS, or of those named
    `kernel` ("function (call kind)")."""
    inspected = subprocess.run([sys.executable, "-m", "spreplay", "inspect", str(archive), "--json"],
                               check=True, capture_output=True, text=True)
    data = archive.read_bytes()
    return [data[blob["offset"]:blob["offset"] + blob["size"]].rstrip(b"\0")
            for entry in json.loads(inspected.stdout)["kernels"]
            if not entry["optix"] and kernel in (None, f"{entry['function']} ({entry['callKind']})")
            for blob in entry["blobs"] if blob["kind"] == "ptx"]


class NvJitLink:
    """nvJitLink 13.0 from a toolkit (lib64/) or NVIDIA's wheels (lib/)."""

    def __init__(self, cuda_root: Path) -> None:
        path = next((candidate for candidate in (cuda_root / "lib64" / "libnvJitLink.so.13",
                                                 cuda_root / "lib" / "libnvJitLink.so.13") if candidate.exists()),
                    None)
        if path is None:
            raise SystemExit(f"sass_tools: no libnvJitLink.so.13 under {cuda_root}/lib64 or {cuda_root}/lib")
        library = ctypes.CDLL(str(path))
        handle_p, size_p = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)
        # By name: a double underscore inside a class would be mangled.
        self.create = self._bind(library, "Create", [handle_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)])
        self.add_data = self._bind(library, "AddData",
                                   [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p])
        self.complete = self._bind(library, "Complete", [ctypes.c_void_p])
        self.cubin_size = self._bind(library, "GetLinkedCubinSize", [ctypes.c_void_p, size_p])
        self.destroy = self._bind(library, "Destroy", [handle_p])

    @staticmethod
    def _bind(library: ctypes.CDLL, name: str, argtypes: list) -> ctypes._CFuncPtr:
        function = getattr(library, f"__nvJitLink{name}_13_0")
        function.argtypes, function.restype = argtypes, ctypes.c_int
        return function

    def cubin_bytes(self, ptx: bytes, arch: int) -> int:
        """Builds `ptx` for sm_`arch` and returns the linked cubin's size."""
        options = (ctypes.c_char_p * 2)(f"-arch=sm_{arch}".encode(), b"-O3")
        handle = ctypes.c_void_p()
        if self.create(ctypes.byref(handle), 2, options) != 0:
            raise RuntimeError(f"nvJitLinkCreate failed for sm_{arch}")
        try:
            size = ctypes.c_size_t()
            if (self.add_data(handle, 2, ptx, len(ptx), b"kernel.ptx") != 0 or self.complete(handle) != 0
                    or self.cubin_size(handle, ctypes.byref(size)) != 0):
                raise RuntimeError(f"nvJitLink failed for sm_{arch}")
            return size.value
        finally:
            self.destroy(ctypes.byref(handle))


def ptxas_cubin_bytes(ptxas: Path, ptx: bytes, arch: int) -> int:
    """Builds `ptx` for sm_`arch` as the compile does and returns the cubin's size."""
    with tempfile.TemporaryDirectory(prefix="spreplay-ptxas-") as scratch:
        source, cubin = Path(scratch, "kernel.ptx"), Path(scratch, "kernel.cubin")
        source.write_bytes(ptx)
        subprocess.run([str(ptxas), f"-arch=sm_{arch}", str(source), "-o", str(cubin)], check=True)
        return cubin.stat().st_size


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def time_tool(tool: str, kernels: list[bytes], arches: list[int], cuda_root: Path, linker: NvJitLink) -> str:
    cpu, start, cubins = cpu_seconds(), time.perf_counter(), 0
    for ptx in kernels:
        for arch in arches:
            cubins += (ptxas_cubin_bytes(cuda_root / "bin" / "ptxas", ptx, arch) if tool == "ptxas"
                       else linker.cubin_bytes(ptx, arch))
    return (f"{tool}: {len(kernels)} kernels x sm_{','.join(map(str, arches))}: {time.perf_counter() - start:.2f} s "
            f"wall, {cpu_seconds() - cpu:.2f} s CPU, {cubins} bytes of cubins")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive", type=Path)
    parser.add_argument("--arch", default="90")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kernel", help="only this kernel, as 'function (call kind)'")
    parser.add_argument("--cuda", type=Path, default=Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")))
    args = parser.parse_args()
    arches = [int(arch) for arch in args.arch.split(",")]
    kernels = archived_ptx(args.archive, args.kernel)
    if not kernels:
        named = f" named {args.kernel}" if args.kernel else ""
        raise SystemExit(f"sass_tools: no kernel of {args.archive} to build{named}")
    linker = NvJitLink(args.cuda)
    for round_number in range(1, args.rounds + 1):
        tools = ("ptxas", "nvJitLink") if round_number % 2 else ("nvJitLink", "ptxas")
        for tool in tools:
            print(f"round {round_number} {time_tool(tool, kernels, arches, args.cuda, linker)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
