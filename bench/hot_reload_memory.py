# SPDX-License-Identifier: Apache-2.0
"""Resident memory of a process that hot-reloads a slangpy module N times.

    python bench/hot_reload_memory.py [--reloads 20]
    SLANGPY_RECORD=trace.capnp python bench/hot_reload_memory.py

Each reload edits the module and calls Device.reload_all_programs, which makes
a new Slang session, then builds the call site again. Runs on slangpy's CPU
device: no GPU needed, since only the Slang work matters here. Compare the
growth with spreplay active (SLANGPY_RECORD or SLANGPY_KERNELS) against stock.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import slangpy as spy


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reloads", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "reloaded.slang"
        source.write_text("float scale(float x) { return x * 2.0 + 1.0; }\n")
        device = spy.create_device(spy.DeviceType.cpu, enable_hot_reload=True, include_paths=[directory])
        module = spy.Module.load_from_file(device, str(source))
        values = np.arange(64, dtype=np.float32)
        module.scale.debug_build_call_data(values)
        before = resident_mib()
        start = time.perf_counter()
        for number in range(args.reloads):
            source.write_text(f"float scale(float x) {{ return x * {number + 3}.0 + 1.0; }}\n")
            device.reload_all_programs()
            module.scale.debug_build_call_data(values)
        after = resident_mib()
    print(f"{args.reloads} reloads: resident {before:.0f} -> {after:.0f} MiB (+{after - before:.0f} MiB), "
          f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
