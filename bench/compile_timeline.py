"""Where a `spreplay compile` spends its wall time, from the timeline in its
JSON report (`--report FILE.json`): per stage, when it ran, how many
CPU-seconds of jobs it held, how busy it kept the workers, and its longest
jobs; then how busy the workers were over the whole compile.

    python bench/compile_timeline.py REPORT.json [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

STAGES = ("replay", "sass", "pack", "serialize", "rebuild")


def workers_of(spans: list[dict[str, Any]]) -> int:
    return max((span["worker"] for span in spans), default=-1) + 1


def summarize(report: dict[str, Any]) -> str:
    spans = report.get("timeline", [])
    wall = report["wallSeconds"]
    workers = max(workers_of(spans), 1)
    lines = [
        f"wall {wall:.1f} s, CPU {report['cpuSeconds']:.1f} s, {workers} worker(s); "
        f"the app's own code generation {report['appCompileSeconds']:.1f} s, "
        f"module loads {report.get('appModuleLoadSeconds', 0.0):.1f} s; "
        f"critical path {report['criticalPathSeconds']:.1f} s ({report['criticalPathKernel']})",
        "",
        "| stage | from (s) | to (s) | jobs | job-seconds | workers busy while it ran | longest job |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    by_stage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        by_stage[span["stage"]].append(span)
    for stage in STAGES:
        jobs = by_stage.get(stage)
        if not jobs:
            continue
        first = min(span["start"] for span in jobs)
        last = max(span["end"] for span in jobs)
        busy = sum(span["end"] - span["start"] for span in jobs)
        longest = max(jobs, key=lambda span: span["end"] - span["start"])
        utilization = busy / max(last - first, 1e-9) / workers
        lines.append(
            f"| {stage} | {first:.1f} | {last:.1f} | {len(jobs)} | {busy:.1f} | {utilization:.0%} | "
            f"{longest['end'] - longest['start']:.1f} s, {longest['label']} |")
    busy = sum(span["end"] - span["start"] for span in spans)
    lines += ["", f"workers busy over the whole compile: {busy / max(wall * workers, 1e-9):.0%} "
                  f"({busy:.1f} job-seconds of {wall * workers:.1f})"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    text = summarize(json.loads(args.report.read_text()))
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
