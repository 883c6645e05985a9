"""How often Slang gives other PTX for the same trace: compiles each trace N
times with the compile cache off, and counts per kernel how many replays were
byte-identical to the recorded PTX, the same program with its registers
renamed (accepted, compiler/ptx_comparison.h), or different (refused). The
modules stage, which rebuilds every kernel over IR, is counted the same way:
a module refused because a kernel rebuilt over it differs is a refusal here.
Runs on any machine (no GPU).

    python bench/ptx_determinism.py --out DIR [--rounds 5] [--jobs 2] [--no-modules] [TRACE ...]

Writes DIR/ptx-determinism.json and DIR/ptx-determinism.md. Without traces,
the committed H200 fixtures.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import clean_environment, fixture_traces  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = fixture_traces(ROOT)


def compile_round(traces: list[Path], work: Path, jobs: int, round_index: int, modules: bool) -> dict:
    report = work / f"round{round_index}.json"
    argv = [sys.executable, "-m", "spreplay", "compile", *map(str, traces), "-o",
            str(work / f"round{round_index}.sprk"), "--no-cache", "--arch", "90", "--jobs", str(jobs),
            "--report", str(report), *([] if modules else ["--no-modules"])]
    start = time.perf_counter()
    proc = subprocess.run(argv, env=clean_environment(), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if not report.exists():
        raise SystemExit(f"spreplay compile wrote no report ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text())
    refused_modules = [line for line in proc.stderr.splitlines()
                       if "not archived as IR" in line and "PTX differs" in line]
    return {"seconds": seconds, "kernels": data["kernels"], "modules_refused_for_ptx": refused_modules}


def verdict(kernel: dict) -> str:
    if kernel["status"] != "compiled":
        return "different" if "PTX differs" in kernel["message"] else "failed"
    return "renamed" if kernel.get("ptxRenamedRegisters", 0) else "identical"


def summarize(rounds: list[dict]) -> dict:
    per_kernel: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    labels: dict[str, str] = {}
    for result in rounds:
        for kernel in result["kernels"]:
            per_kernel[kernel["key"]][verdict(kernel)] += 1
            labels[kernel["key"]] = kernel["label"]
    totals = collections.Counter()
    for counts in per_kernel.values():
        totals.update(counts)
    unstable = {labels[key]: dict(counts) for key, counts in per_kernel.items()
                if set(counts) != {"identical"}}
    return {
        "rounds": len(rounds),
        "kernels": len(per_kernel),
        "replays": sum(totals.values()),
        "totals": dict(totals),
        "kernels_ever_not_identical": unstable,
        "modules_refused_for_ptx": [len(r["modules_refused_for_ptx"]) for r in rounds],
        "round_seconds": [round(r["seconds"], 1) for r in rounds],
    }


def markdown(summary: dict, traces: list[Path]) -> str:
    totals = summary["totals"]
    lines = [
        "# Replayed PTX against the recording, the same traces compiled again and again",
        "",
        f"Traces: {', '.join(t.name for t in traces)}; {summary['rounds']} rounds of "
        f"`spreplay compile --no-cache --arch 90`.",
        "",
        "| replays | byte-identical | registers renamed (accepted) | different (refused) | failed otherwise |",
        "| --- | --- | --- | --- | --- |",
        f"| {summary['replays']} | {totals.get('identical', 0)} | {totals.get('renamed', 0)} | "
        f"{totals.get('different', 0)} | {totals.get('failed', 0)} |",
        "",
        f"Kernels: {summary['kernels']}; ever not byte-identical: "
        f"{len(summary['kernels_ever_not_identical'])}.",
        f"Modules refused because a kernel rebuilt over IR differed, per round: "
        f"{summary['modules_refused_for_ptx']}.",
        f"Seconds per round: {summary['round_seconds']}.",
    ]
    for label, counts in sorted(summary["kernels_ever_not_identical"].items()):
        lines.append(f"- {label}: {counts}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-modules", action="store_true", help="kernels only, no modules stage")
    parser.add_argument("traces", type=Path, nargs="*")
    args = parser.parse_args()
    traces = args.traces or FIXTURES
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spreplay-ptx-determinism-"))
    rounds = []
    for index in range(args.rounds):
        rounds.append(compile_round(traces, work, args.jobs, index, not args.no_modules))
        print(f"round {index + 1}/{args.rounds}: {rounds[-1]['seconds']:.1f} s", flush=True)
    summary = summarize(rounds)
    (args.out / "ptx-determinism.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "ptx-determinism.md").write_text(markdown(summary, traces))
    print(markdown(summary, traces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
