"""slangpy's own CUDA test suite, shipped in the slangpy wheel, as spreplay's conformance suite.

Steps, each in fresh processes, the pytest runs over the suite's CUDA tests
(`--device-types cuda`, `-n JOBS`) with tests/gpu/suite_accounting.py loaded:
  stock     stock slangpy, recording every kernel it compiles (SLANGPY_RECORD)
  compile   `spreplay compile` of that trace, from another directory than the
            suite's, writing a compile report
  served    SLANGPY_KERNELS=archive
  strict    also SLANGPY_KERNELS_STRICT=1 and CUDA_DISABLE_PTX_JIT=1, with a CUDA
            cache that holds slang-rhi's own kernels and nothing else
The other steps each start from an empty CUDA cache of their own, as on a
machine that never ran the suite: NVRTC keeps what it compiles there, and a
step would otherwise reuse what an earlier run on the machine compiled.
--archive serves an archive compiled elsewhere (on a machine with no GPU, say)
instead of compiling one here; --trace compiles an earlier run's trace; and
--stock-results compares with an earlier run's stock outcomes (its suite.json).
The exit status is 1 when compile failed, or when a test's outcome differs
from stock or a test is missing from a run, except for the tests in
EXPECTED_CHANGES, which check a side effect spreplay replaces on purpose.

Writes to --out: suite.json (every test's outcome and kernel requests per run,
and the per-file summary), suite.md (the same as tables), compile-report.json,
trace.capnp.xz (the recorded trace, to compile elsewhere) and misses.capnp.xz
(the served run's misses).

    python tests/gpu/slangpy_suite.py --out DIR [--jobs 14] [--arch 90] [--steps stock,compile,served,strict]
                                      [--archive PATH] [--trace PATH] [--stock-results suite.json]
                                      [--files test_a.py,...]
"""

from __future__ import annotations

import argparse
import collections
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "bench"))
from app_output import clean_environment, empty_cuda_cache, rhi_kernels_cuda_cache  # noqa: E402

STEPS = ("stock", "compile", "served", "strict")
RUNS = ("stock", "served", "strict")
COUNTS = ("served", "compiled", "notKeyable", "refused")
MODULE_COUNTS = ("modulesServed", "modulesCompiled", "modulesRefused")
# Tests that check a side effect spreplay replaces on purpose, with why. A
# change of such a test's outcome is reported, and does not fail the run.
EXPECTED_CHANGES: dict[str, str] = {}
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "unreported")


def suite_directory() -> Path:
    import slangpy

    return Path(slangpy.__file__).resolve().parent / "tests"


def final_outcome(reports: list[dict[str, str]]) -> str:
    """One outcome per test, from all its reports, as pytest would count it first."""
    outcomes = {(r["when"], r["outcome"]) for r in reports}
    for kind in ("xfailed", "xpassed"):
        if any(outcome == kind for _, outcome in outcomes):
            return kind
    if any(outcome == "failed" and when not in ("setup", "teardown", "collect") for when, outcome in outcomes):
        return "failed"  # the call, or a crashed worker's report
    if any(outcome == "failed" for _, outcome in outcomes):
        return "error"
    if any(outcome == "skipped" for _, outcome in outcomes):
        return "skipped"
    return "passed"


def read_logs(log_dir: Path) -> list[dict[str, Any]]:
    """Per test: its outcome (from the reports) and its kernel requests (from where it ran)."""
    reports: dict[str, list[dict[str, str]]] = {}
    outcomes_file = log_dir / "outcomes.jsonl"
    if outcomes_file.exists():
        for line in outcomes_file.read_text().splitlines():
            report = json.loads(line)
            reports.setdefault(report["test"], []).append(report)
    requests = {}
    for f in sorted(log_dir.glob("requests-*.jsonl")):
        for line in f.read_text().splitlines():
            entry = json.loads(line)
            requests[entry["test"]] = entry
    tests = []
    for test in sorted(set(reports) | set(requests)):
        counts = requests.get(test, {})
        tests.append({"test": test, "file": test.split("::")[0],
                      "outcome": final_outcome(reports[test]) if test in reports else "unreported",
                      **{count: counts.get(count, 0) for count in COUNTS + MODULE_COUNTS},
                      "misses": counts.get("misses", []), "moduleMisses": counts.get("moduleMisses", [])})
    return tests


def run_suite(name: str, out: Path, work: Path, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One pytest run of the suite; returns its per-test entries."""
    log_dir = work / f"log-{name}"
    shutil.rmtree(log_dir, ignore_errors=True)
    suite = suite_directory()
    targets = [str(suite / f) for f in args.files.split(",")] if args.files else [str(suite)]
    argv = [sys.executable, "-m", "pytest", *targets, "--device-types", "cuda", "-p", "suite_accounting",
            "-p", "no:cacheprovider", "-q", "--rootdir", str(suite), "-o", "addopts="]
    if args.jobs > 1:
        # A file's tests on one worker, in order: sgl names the module each
        # load_program(additional_source=...) makes by a counter per process
        # (additional_source_<n>), and kernel keys name their modules. Spread
        # over workers as they come free, a test_link_time.py test gets
        # another n from run to run: another program, which stock compiles
        # too, and no recording can hold.
        argv += ["-n", str(args.jobs), "--dist", "loadfile"]
    pythonpath = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")]))
    with empty_cuda_cache() as cuda_cache:
        # A run that brings a CUDA cache of its own (strict) keeps it.
        environment = clean_environment(SPREPLAY_SUITE_LOG=str(log_dir), PYTHONPATH=pythonpath,
                                        **{"CUDA_CACHE_PATH": cuda_cache, **env})
        start = time.perf_counter()
        proc = subprocess.run(argv, env=environment, cwd=work, capture_output=True, text=True)
        wall = time.perf_counter() - start
    (out / f"pytest-{name}.log").write_text(proc.stdout[-200_000:] + "\n--- stderr ---\n" + proc.stderr[-200_000:])
    tests = read_logs(log_dir)
    last_line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print(f"{name}: {len(tests)} tests in {wall:.0f} s, pytest says: {last_line}", flush=True)
    return {"wall_s": wall, "exit_code": proc.returncode, "pytest_summary": last_line, "tests": tests}


def compile_trace(trace: Path, archive: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`spreplay compile` in a directory of its own, not the suite's."""
    elsewhere = Path(tempfile.mkdtemp(prefix="spreplay-compile-elsewhere-"))
    report = out / "compile-report.json"
    argv = [sys.executable, "-m", "spreplay", "compile", str(trace), "-o", str(archive), "--arch", args.arch,
            "--jobs", str(args.jobs), "--no-cache", "--report", str(report)]
    with empty_cuda_cache() as cuda_cache:
        start = time.perf_counter()
        proc = subprocess.run(argv, env=clean_environment(CUDA_CACHE_PATH=cuda_cache), cwd=elsewhere,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
    (out / "compile.log").write_text(proc.stdout + proc.stderr)
    shutil.rmtree(elsewhere, ignore_errors=True)
    lines = proc.stderr.splitlines()
    print(f"compile: exit {proc.returncode} in {wall:.0f} s: {lines[-1] if lines else ''}", flush=True)
    content = json.loads(report.read_text()) if report.exists() else {}
    statuses = [k["status"] for k in content.get("kernels", [])]
    return {"wall_s": wall, "exit_code": proc.returncode, "compiled": statuses.count("compiled"),
            "failed": len(statuses) - statuses.count("compiled"),
            "modules_archived": content.get("modulesArchived", 0), "modules_refused": content.get("modulesRefused", 0),
            "module_seconds": content.get("moduleSeconds", 0.0), "archive_bytes": content.get("archiveBytes", 0)}


def reason_group(reason: str) -> str:
    """A miss reason without the names and numbers that make each one unique."""
    reason = reason.split("\n")[0]
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\b[0-9a-f]{12,}\b", "…", reason)
    return reason[:160].replace("|", "\\|")


def expected_change(test: str) -> str | None:
    """Why the test's outcome may differ under spreplay, if it is one that may."""
    return next((why for prefix, why in EXPECTED_CHANGES.items() if test.split("[")[0].endswith(prefix)), None)


def summarize(runs: dict[str, Any], stock: dict[str, str] | None) -> dict[str, Any]:
    files: dict[str, dict[str, Any]] = collections.defaultdict(dict)
    totals: dict[str, Any] = {}
    for name, run in runs.items():
        total = collections.Counter()
        reasons = collections.Counter()
        module_reasons = collections.Counter()
        for test in run["tests"]:
            row = files[test["file"]].setdefault(name, collections.Counter())
            row[test["outcome"]] += 1
            for count in COUNTS + MODULE_COUNTS:
                row[count] += test.get(count, 0)
                total[count] += test.get(count, 0)
            total[test["outcome"]] += 1
            for reason in test["misses"]:
                reasons[reason_group(reason)] += 1
            for reason in test.get("moduleMisses", []):
                module_reasons[reason_group(reason)] += 1
        requests = sum(total[c] for c in COUNTS)
        module_loads = sum(total[c] for c in MODULE_COUNTS)
        totals[name] = {**total, "requests": requests, "served_share": total["served"] / requests if requests else None,
                        "module_loads": module_loads,
                        "modules_served_share": total["modulesServed"] / module_loads if module_loads else None,
                        "miss_reasons": reasons.most_common(), "module_miss_reasons": module_reasons.most_common()}
    changed = []
    if stock is not None:
        for name in ("served", "strict"):
            if name not in runs:
                continue
            now = {t["test"]: t for t in runs[name]["tests"]}
            for test, outcome in sorted(stock.items()):
                current = now.get(test, {"outcome": "missing", "misses": []})
                if current["outcome"] != outcome:
                    changed.append({"run": name, "test": test, "stock": outcome, "now": current["outcome"],
                                    "misses": current["misses"][:3], "expected": expected_change(test)})
    return {"files": {f: {k: dict(v) for k, v in r.items()} for f, r in sorted(files.items())}, "totals": totals,
            "compared_with_stock": stock is not None, "changed_outcomes": changed,
            "pytest_summaries": {name: run["pytest_summary"] for name, run in runs.items()}}


def markdown(summary: dict[str, Any], compile_result: dict[str, Any] | None) -> str:
    lines = ["# slangpy's CUDA test suite under spreplay", ""]
    names = [n for n in RUNS if n in summary["totals"]]
    lines += ["| run | passed | failed | errors | skipped | kernel requests | served | compiled | not keyable | refused |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in names:
        t = summary["totals"][n]
        share = f" ({100 * t['served_share']:.1f}%)" if t["served_share"] is not None else ""
        lines.append(f"| {n} | {t.get('passed', 0)} | {t.get('failed', 0)} | {t.get('error', 0)} | "
                     f"{t.get('skipped', 0)} | {t['requests']} | {t.get('served', 0)}{share} | "
                     f"{t.get('compiled', 0)} | {t.get('notKeyable', 0)} | {t.get('refused', 0)} |")
    lines += ["", "| run | module loads | served as IR | loaded from source | refused |", "| --- | --- | --- | --- | --- |"]
    for n in names:
        t = summary["totals"][n]
        share = f" ({100 * t['modules_served_share']:.1f}%)" if t.get("modules_served_share") is not None else ""
        lines.append(f"| {n} | {t.get('module_loads', 0)} | {t.get('modulesServed', 0)}{share} | "
                     f"{t.get('modulesCompiled', 0)} | {t.get('modulesRefused', 0)} |")
    lines += ["", "pytest's own counts (collection errors and module-level skips included):", ""]
    lines += [f"- {n}: {summary['pytest_summaries'][n]}" for n in names]
    if compile_result:
        lines += ["", f"Compile: {compile_result['compiled']} kernels compiled, {compile_result['failed']} failed, "
                      f"in {compile_result['wall_s']:.0f} s; {compile_result.get('modules_archived', 0)} modules "
                      f"archived as IR, {compile_result.get('modules_refused', 0)} refused "
                      f"({compile_result.get('module_seconds', 0):.0f} s of it); archive "
                      f"{compile_result.get('archive_bytes', 0) / 1e6:.1f} MB."]
    changed = len(summary["changed_outcomes"]) if summary["compared_with_stock"] else "n/a (no stock outcomes)"
    lines += ["", f"Tests whose outcome differs from stock, or that are missing: {changed}", ""]
    for change in summary["changed_outcomes"][:40]:
        why = f" (expected: {change['expected']})" if change.get("expected") else ""
        lines.append(f"- {change['run']}: `{change['test']}` {change['stock']} -> {change['now']}{why}")
    for n in names:
        reasons = summary["totals"][n]["miss_reasons"]
        if reasons:
            lines += ["", f"## Miss reasons, {n}", "", "| count | reason |", "| --- | --- |"]
            lines += [f"| {count} | {reason} |" for reason, count in reasons]
        module_reasons = summary["totals"][n].get("module_miss_reasons", [])
        if module_reasons:
            lines += ["", f"## Modules not served, {n}", "", "| count | reason |", "| --- | --- |"]
            lines += [f"| {count} | {reason} |" for reason, count in module_reasons]
    lines += ["", "## Per test file", "", "| file | " + " | ".join(f"{n} passed | {n} served/compiled/not keyable/refused"
                                                          for n in names) + " |",
              "| --- |" + " --- | --- |" * len(names)]
    for file, row in summary["files"].items():
        cells = []
        for n in names:
            r = row.get(n, {})
            cells += [f"{r.get('passed', 0)}/{sum(r.get(o, 0) for o in OUTCOMES)}",
                      "/".join(str(r.get(c, 0)) for c in COUNTS)]
        lines.append(f"| {file} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def torch_bridge_missing() -> str | None:
    """Why the suite's PyTorch tests would not compare, or None. With torch
    installed and slangpy-torch not, slangpy refuses torch tensors unless a
    test opted into its fallback earlier in the same pytest worker, so those
    tests pass or fail by where xdist happens to run them."""
    try:
        import torch  # noqa: F401  (slangpy_torch needs it imported first)
    except ImportError:
        return None
    try:
        import slangpy_torch  # noqa: F401
    except ImportError:
        return ("torch is installed but slangpy-torch is not: its tests' outcomes would depend on "
                "the pytest worker running them. Install slangpy-torch (pip install slangpy-torch; "
                "from its sdist: pip install --no-build-isolation DIR) or uninstall torch.")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    parser.add_argument("--arch", default="90", help="architectures to compile SASS for (default 90)")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--archive", type=Path, help="serve this archive instead of compiling one here")
    parser.add_argument("--trace", type=Path, help="compile this trace instead of recording one here")
    parser.add_argument("--stock-results", type=Path, help="an earlier run's suite.json to compare with")
    parser.add_argument("--files", default="", help="test files relative to slangpy/tests (default: all)")
    args = parser.parse_args()
    steps = args.steps.split(",")
    if unknown := set(steps) - set(STEPS):
        parser.error(f"unknown steps {sorted(unknown)}; the steps are {','.join(STEPS)}")
    if "compile" in steps and "stock" not in steps and not args.trace and not args.archive:
        parser.error("compile needs the stock step or --trace")
    if {"served", "strict"} & set(steps) and "compile" not in steps and not args.archive:
        parser.error("served and strict need the compile step or --archive")
    if {"stock", "served", "strict"} & set(steps) and (why := torch_bridge_missing()):
        print(f"slangpy_suite: {why}", file=sys.stderr)
        return 2
    # Absolute: the suite and compile run in directories of their own.
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spreplay-suite-"))
    trace = args.trace.resolve() if args.trace else work / "trace.capnp"
    archive = args.archive.resolve() if args.archive else work / "kernels.sprk"
    stock = None
    if args.stock_results:
        stock = {t["test"]: t["outcome"] for t in json.loads(args.stock_results.read_text())["runs"]["stock"]["tests"]}
    runs: dict[str, Any] = {}
    compile_result = None

    def write_results() -> None:  # after every step, so that a run cut short still reports
        summary = summarize(runs, stock)
        result = {"runs": runs, "compile": compile_result, "summary": summary, "archive": str(archive)}
        (args.out / "suite.json").write_text(json.dumps(result, indent=1))
        (args.out / "suite.md").write_text(markdown(summary, compile_result))

    if "stock" in steps:
        runs["stock"] = run_suite("stock", args.out, work, args, {"SLANGPY_RECORD": str(trace)})
        stock = {t["test"]: t["outcome"] for t in runs["stock"]["tests"]}
        write_results()
        if trace.exists():
            with trace.open("rb") as raw, lzma.open(args.out / "trace.capnp.xz", "wb", preset=6) as packed:
                shutil.copyfileobj(raw, packed)
    if "compile" in steps and not args.archive:
        compile_result = compile_trace(trace, archive, args.out, args)
        write_results()
    serving = {"SLANGPY_KERNELS": str(archive), "SLANGPY_KERNELS_MISSES": str(work / "misses.capnp")}
    if "served" in steps:
        runs["served"] = run_suite("served", args.out, work, args, serving)
        misses = work / "misses.capnp"
        if misses.exists():  # what `spreplay explain` reads, on any machine
            with misses.open("rb") as raw, lzma.open(args.out / "misses.capnp.xz", "wb", preset=6) as packed:
                shutil.copyfileobj(raw, packed)
        write_results()
    if "strict" in steps:
        strict = {**serving, "SLANGPY_KERNELS_STRICT": "1", "CUDA_DISABLE_PTX_JIT": "1",
                  "CUDA_CACHE_PATH": rhi_kernels_cuda_cache(work / "cuda-cache-rhi")}
        strict.pop("SLANGPY_KERNELS_MISSES")
        runs["strict"] = run_suite("strict", args.out, work, args, strict)
        write_results()
    shutil.rmtree(work, ignore_errors=True)
    print((args.out / "suite.md").read_text()[:6000], flush=True)
    summary = summarize(runs, stock)
    compile_failed = compile_result is not None and compile_result["exit_code"] != 0
    unexpected = [change for change in summary["changed_outcomes"] if not change["expected"]]
    return 1 if compile_failed or unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
