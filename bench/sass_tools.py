# SPDX-License-Identifier: Apache-2.0
"""ptxas against nvJitLink, the two tools `spreplay compile --sass` can build
SASS with, over every kernel's PTX in an archive: each kernel built for each
arch in turn, one build at a time, in rounds that alternate the tools. Prints
each round's wall and CPU time and the cubins' bytes. Needs no GPU.

    python bench/sass_tools.py ARCHIVE.sprk [--arch 90,...] [--rounds 2]

ptxas runs as `spreplay compile` runs it, one process per build; nvJitLink
in this process, with the options the compile passes it.
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


def archived_ptx(archive: Path) -> list[bytes]:
    inspected = subprocess.run([sys.executable, "-m", "spreplay", "inspect", str(archive), "--json"],
                               check=True, capture_output=True, text=True)
    data = archive.read_bytes()
    return [data[blob["offset"]:blob["offset"] + blob["size"]].rstrip(b"\0")
            for kernel in json.loads(inspected.stdout)["kernels"] for blob in kernel["blobs"] if blob["kind"] == "ptx"]


class NvJitLink:
    def __init__(self, cuda_root: Path):
        library = ctypes.CDLL(str(cuda_root / "lib64" / "libnvJitLink.so.13"))
        # By name: a double underscore inside a class would be mangled.
        self.create, self.add_data, self.complete, self.cubin_size, self.destroy = (
            getattr(library, f"__nvJitLink{name}_13_0")
            for name in ("Create", "AddData", "Complete", "GetLinkedCubinSize", "Destroy"))

    def build(self, ptx: bytes, arch: int) -> int:
        options = (ctypes.c_char_p * 2)(f"-arch=sm_{arch}".encode(), b"-O3")
        handle = ctypes.c_void_p()
        if (self.create(ctypes.byref(handle), 2, options) != 0
                or self.add_data(handle, 2, ptx, len(ptx), b"kernel.ptx") != 0 or self.complete(handle) != 0):
            raise RuntimeError(f"nvJitLink failed for sm_{arch}")
        size = ctypes.c_size_t()
        self.cubin_size(handle, ctypes.byref(size))
        self.destroy(ctypes.byref(handle))
        return size.value


def ptxas_build(ptxas: Path, ptx_file: Path, arch: int, scratch: Path) -> int:
    cubin = scratch / "kernel.cubin"
    subprocess.run([str(ptxas), f"-arch=sm_{arch}", str(ptx_file), "-o", str(cubin)], check=True)
    return cubin.stat().st_size


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive", type=Path)
    parser.add_argument("--arch", default="90")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cuda", type=Path, default=Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")))
    args = parser.parse_args()
    arches = [int(arch) for arch in args.arch.split(",")]
    kernels = archived_ptx(args.archive)
    linker = NvJitLink(args.cuda)
    with tempfile.TemporaryDirectory(prefix="spreplay-sass-tools-") as scratch_dir:
        scratch = Path(scratch_dir)
        files = []
        for index, ptx in enumerate(kernels):
            files.append(scratch / f"{index}.ptx")
            files[-1].write_bytes(ptx)
        for round_number in range(1, args.rounds + 1):
            for tool in ("ptxas", "nvJitLink"):
                cpu, start, cubin_bytes = cpu_seconds(), time.perf_counter(), 0
                for ptx, ptx_file in zip(kernels, files):
                    for arch in arches:
                        cubin_bytes += (ptxas_build(args.cuda / "bin" / "ptxas", ptx_file, arch, scratch)
                                        if tool == "ptxas" else linker.build(ptx, arch))
                print(f"round {round_number} {tool}: {len(kernels)} kernels x sm_{','.join(map(str, arches))}: "
                      f"{time.perf_counter() - start:.2f} s wall, {cpu_seconds() - cpu:.2f} s CPU, "
                      f"{cubin_bytes} bytes of cubins", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
