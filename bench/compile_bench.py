"""Times `spreplay compile` on the committed H200 traces: per-kernel Slang
front end and codegen, SASS per arch, --jobs 1 vs 2, an incremental rebuild,
and archive size per kernel. Runs on any machine (no GPU).

    python bench/compile_bench.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import clean_environment, fixture_traces  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = fixture_traces(ROOT)


def compile_once(out: Path, jobs: int, cache: Path | None, report: Path, sass: str = "ptxas") -> float:
    argv = [sys.executable, "-m", "spreplay", "compile", *map(str, TRACES), "-o", str(out),
            "--jobs", str(jobs), "--report", str(report), "--sass", sass]
    argv += ["--cache", str(cache)] if cache else ["--no-cache"]
    start = time.perf_counter()
    subprocess.run(argv, env=clean_environment(), check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spreplay-compile-bench-"))
    results: dict = {}
    for jobs in (1, 2):
        results[f"cold_jobs{jobs}_s"] = compile_once(work / f"j{jobs}.sprk", jobs, None, work / f"j{jobs}.json",
                                                     "ptxas")
    results["cold_jobs2_nvjitlink_s"] = compile_once(work / "nv.sprk", 2, None, work / "nv.json", "nvjitlink")
    cache = work / "cache"
    results["first_with_cache_s"] = compile_once(work / "c1.sprk", 2, cache, work / "c1.json", "ptxas")
    results["incremental_s"] = compile_once(work / "c2.sprk", 2, cache, work / "c2.json", "ptxas")
    report = json.loads((work / "j1.json").read_text())
    kernels = report["kernels"]
    sass = {}
    for kernel in kernels:
        for arch, seconds in kernel["sassSeconds"].items():
            sass.setdefault(arch, []).append(seconds)
    results["kernels"] = len(kernels)
    results["front_end_s_median"] = statistics.median(k["frontEndSeconds"] for k in kernels)
    results["front_end_s_max"] = max(k["frontEndSeconds"] for k in kernels)
    results["codegen_s_median"] = statistics.median(k["codegenSeconds"] for k in kernels)
    results["codegen_s_max"] = max(k["codegenSeconds"] for k in kernels)
    results["ptxas_s_median_by_arch"] = {arch: statistics.median(v) for arch, v in sorted(sass.items())}
    results["ptxas_s_total_by_arch"] = {arch: sum(v) for arch, v in sorted(sass.items())}
    nv = json.loads((work / "nv.json").read_text())["kernels"]
    results["nvjitlink_s_total"] = sum(sum(k["sassSeconds"].values()) for k in nv)
    results["ptxas_s_total"] = sum(sum(k["sassSeconds"].values()) for k in kernels)
    results["archive_bytes"] = report["archiveBytes"]
    results["archive_bytes_per_kernel"] = report["archiveBytes"] / len(kernels)
    results["per_kernel"] = [
        {"label": k["label"], "front_end_s": k["frontEndSeconds"], "codegen_s": k["codegenSeconds"],
         "sass_s": k["sassSeconds"], "fatbin_bytes": k["fatbinBytes"]} for k in kernels
    ]
    (args.out / "compile_bench.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: v for k, v in results.items() if k != "per_kernel"}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
