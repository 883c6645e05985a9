# SPDX-License-Identifier: Apache-2.0
"""Splits a sampled profile of one sample app's first pass into the work behind it.

    py-spy record --native -f raw -o stacks.txt -- python bench/phase_probe.py samples/APP/app.py
    python bench/first_pass_profile.py stacks.txt [--top 8]

The phase probe times slangpy's Python-visible steps; this says what runs
inside them and inside "everything else", down to the native frames of sgl,
slang-rhi and Slang. Only the samples of the app's main() after device
creation count, the window the cold-start benchmark measures (the passes
after the first cost about 1 ms each and hardly show). Sampling with native
stacks slows the process, so shares matter here, not seconds.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

PYTHON_FRAME = re.compile(r"\.py:\d+\)$")

# The first rule a stack matches names its bucket; order matters.
BUCKETS = [
    ("app's module loads", ("Module.load_from_file", "SlangSession.load_module ("), ("CallData.build",)),
    ("call-data build: link_program", ("link_program",), ()),
    ("call-data build: wrapper front end", ("load_module_from_source",), ()),
    ("call-data build: entry point layout", ("sgl::SlangModule::entry_point",), ()),
    ("call-data build: type lookups", ("sgl::refl::Type::derivative", "find_type_by_name",
                                       "find_function_by_name"), ()),
    ("call-data build: other", ("CallData.build",), ()),
    ("first dispatch: shader objects", ("rhi::RootShaderObject::create",), ()),
    ("first dispatch: pipeline (served code, module load)", ("getConcretePipeline",), ()),
    ("tensor uploads (first staging heap)", ("tensor_from_numpy", "upload_buffer_data"), ()),
    ("app's numpy work and checks", ("numpy/", "Checker.check", "checksum ("), ()),
]


def frame_name(frame: str) -> str:
    return frame.split(" (")[0]


def read_stacks(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            stacks.append((stack.split(";"), int(count)))
    return stacks


def in_first_pass_window(frames: list[str]) -> bool:
    joined = ";".join(frames)
    return "main (" in joined and "app.py" in joined and "create_device" not in joined


def bucket_of(frames: list[str]) -> str:
    joined = ";".join(frames)
    for name, needles, excluded in BUCKETS:
        if any(needle in joined for needle in needles) and not any(e in joined for e in excluded):
            return name
    return "other"


def deepest_native_frames(frames: list[str], count: int) -> str:
    """The named native frames of sgl, slang-rhi and Slang, outermost first."""
    last_python = max((i for i, frame in enumerate(frames) if PYTHON_FRAME.search(frame)), default=-1)
    native = [frame_name(f) for f in frames[last_python + 1:] if not f.startswith("0x")]
    ours = [name for name in native if name.startswith(("sgl::", "rhi::", "Slang::", "sp"))]
    return " > ".join(ours[:count]) if ours else "(Python, numpy, libc)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", type=Path, help="py-spy record -f raw output")
    parser.add_argument("--top", type=int, default=6, help="native call chains listed per bucket")
    parser.add_argument("--depth", type=int, default=5, help="native frames per call chain")
    args = parser.parse_args()

    stacks = read_stacks(args.stacks)
    window = [(frames, n) for frames, n in stacks if in_first_pass_window(frames)]
    total = sum(n for _, n in window)
    if not total:
        raise SystemExit(f"{args.stacks}: no samples in an app's main() after device creation")
    buckets: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for frames, n in window:
        buckets[bucket_of(frames)][deepest_native_frames(frames, args.depth)] += n

    print(f"{total} samples from device ready to the end of the passes, "
          f"of {sum(n for _, n in stacks)} in the process\n")
    print("| where | share |\n| --- | --- |")
    for name, chains in sorted(buckets.items(), key=lambda item: -sum(item[1].values())):
        print(f"| {name} | {100 * sum(chains.values()) / total:.0f}% |")
    for name, chains in sorted(buckets.items(), key=lambda item: -sum(item[1].values())):
        print(f"\n{name}:")
        for chain, n in chains.most_common(args.top):
            print(f"  {100 * n / total:4.1f}%  {chain}")


if __name__ == "__main__":
    main()
