"""A trace as an app that made one call site fewer would have recorded it: the
trace cut before the frame that records its last kernel. A trace is an
append-only log of frames (recorder/trace_log.h), so any prefix that ends on a
frame is a whole trace of what was recorded until then.
"""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

FILE_HEADER_BYTES = 16
FRAME_HEADER = struct.Struct("<IIII")  # magic, payload length, payload CRC, header CRC
FRAME_MAGIC = 0x46525053
FRAME_ALIGNMENT = 8


def frame_ends(trace: bytes) -> list[int]:
    """The offset just past each whole frame of `trace`, in order."""
    ends, offset = [], FILE_HEADER_BYTES
    while offset + FRAME_HEADER.size <= len(trace):
        magic, length, _, _ = FRAME_HEADER.unpack_from(trace, offset)
        end = offset + FRAME_HEADER.size + length
        if magic != FRAME_MAGIC or end > len(trace):
            break
        offset = -(-end // FRAME_ALIGNMENT) * FRAME_ALIGNMENT
        ends.append(min(offset, len(trace)))
    return ends


def kernel_keys(spreplay: Sequence[str], trace: Path) -> set[str]:
    """The keys of the kernels `trace` records. `spreplay`: the command that
    runs the tool."""
    listed = subprocess.run([*spreplay, "inspect", str(trace), "--json"], check=True, capture_output=True, text=True)
    return {kernel["key"] for kernel in json.loads(listed.stdout)["kernels"]}


def kernel_count(spreplay: Sequence[str], trace: Path) -> int:
    return len(kernel_keys(spreplay, trace))


def without_last_kernel(spreplay: Sequence[str], trace: Path, out: Path) -> str:
    """Writes to `out` the longest prefix of `trace` that records one kernel
    fewer than it, and returns the key of the kernel it leaves out."""
    data = trace.read_bytes()
    ends = frame_ends(data)
    keys = kernel_keys(spreplay, trace)
    wanted = len(keys) - 1
    if wanted < 1 or not ends:
        raise ValueError(f"{trace} records fewer than two kernels")

    def kernels_before(end: int) -> int:
        out.write_bytes(data[:end])
        return kernel_count(spreplay, out)

    # Each frame adds at most one kernel: the last frame end whose prefix
    # holds `wanted` kernels cuts just before the last kernel's frame.
    low, high = 0, len(ends) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if kernels_before(ends[middle]) <= wanted:
            low = middle
        else:
            high = middle - 1
    out.write_bytes(data[:ends[low]])
    left_out = keys - kernel_keys(spreplay, out)
    if len(left_out) != 1:
        raise ValueError(f"no prefix of {trace} records all its kernels but one")
    return left_out.pop()
