"""`spreplay compile` of recorded traces, next to the JIT the app spent on the
same kernels: wall and CPU time, the critical path (the slowest kernel's
chain, the least any number of jobs could take), peak memory, the recompile
of an unchanged trace from the cache, and the recompile of a trace that adds
one call site (its last kernel) to one compiled into the cache. Needs no GPU;
on a machine with one it also measures the driver's JIT of each kernel's PTX
(bench/driver_jit.py), the rest of the JIT the archive takes off the app.

    python bench/compile_bench.py --out DIR [--jobs N] [--arch 90|default]
                                  [--traces demo synthetic slangpy-suite] [--record-synthetic]

The traces, recorded on an H200 under the slangpy installed here:
  demo           tests/fixtures/h200/slangpy-VERSION/*.capnp, together, as make demo compiles them
  synthetic      bench/traces/synthetic-slangpy-VERSION.capnp (bench/workloads/synthetic)
  slangpy-suite  bench/traces/slangpy-suite-slangpy-VERSION.capnp.xz (slangpy's own tests)
One not recorded under this slangpy is skipped, and said so.
--record-synthetic records the synthetic workload on this machine first (a
CUDA GPU), so that its kernels' JIT, which the compile is weighed against,
ran on the same CPU as the compile. The recording and every compile start
from a CUDA cache of their own, empty (app_output.empty_cuda_cache): on a
machine with a GPU, NVRTC would otherwise serve code it generated in an
earlier run, and the numbers would say what ran before. Writes
DIR/compile_bench.json, DIR/compile-bench.md and every compile's log and
report under DIR/compile-bench/.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import clean_environment, empty_cuda_cache, fixture_traces  # noqa: E402
from driver_jit import driver_jit_seconds  # noqa: E402
from trace_prefix import kernel_keys, without_last_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACE_NAMES = ("demo", "synthetic", "slangpy-suite")


def recorded_here(scratch: Path) -> Path:
    """The synthetic workload's trace, recorded by running it on this machine."""
    trace = scratch / "synthetic-recorded-here.capnp"
    app = ROOT / "bench" / "workloads" / "synthetic" / "app.py"
    with empty_cuda_cache() as cuda_cache:
        run = subprocess.run([sys.executable, str(app)],
                             env=clean_environment(SLANGPY_RECORD=str(trace), CUDA_CACHE_PATH=cuda_cache),
                             capture_output=True, text=True)
    if run.returncode != 0 or not trace.exists():
        raise SystemExit(f"compile_bench: recording the synthetic workload failed ({run.returncode}):\n{run.stderr}")
    return trace


def traces_of(name: str, version: str, scratch: Path, record_synthetic: bool) -> list[Path]:
    if name == "demo":
        return fixture_traces(ROOT)
    if name == "synthetic" and record_synthetic:
        return [recorded_here(scratch)]
    stored = ROOT / "bench" / "traces" / f"{name}-slangpy-{version}.capnp"
    if stored.exists():
        return [stored]
    packed = stored.with_name(stored.name + ".xz")
    if not packed.exists():
        return []
    unpacked = scratch / stored.name
    unpacked.write_bytes(lzma.decompress(packed.read_bytes()))
    return [unpacked]


def proportional_bytes(pid: int) -> int:
    """The memory `pid` holds, with each page it shares counted in proportion
    (PSS): forked workers share most of their parent's pages, which a sum of
    resident sizes would count once per process."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def tree_proportional_bytes(root: int) -> int:
    """The memory of `root` and every process below it, now."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(proportional_bytes(pid) for pid in tree)


@dataclass
class CompileRun:
    wall_s: float
    cpu_s: float
    peak_process_bytes: int  # the largest single process, from the kernel's accounting
    peak_total_bytes: int  # every process of the compile at once (PSS), sampled
    report: dict


def run_compile(name: str, traces: list[Path], logs: Path, jobs: int, arch: str, cache: Path | None,
                keep_archive: bool = False) -> CompileRun:
    archive, report, log = logs / f"{name}.sprk", logs / f"{name}.json", logs / f"{name}.log"
    argv = [sys.executable, "-m", "spreplay", "compile", *map(str, traces), "-o", str(archive),
            "--jobs", str(jobs), "--report", str(report)]
    argv += [] if arch == "default" else ["--arch", arch]
    argv += ["--cache", str(cache)] if cache else ["--no-cache"]
    with log.open("w") as log_file, empty_cuda_cache() as cuda_cache:
        start = time.perf_counter()
        process = subprocess.Popen(argv, env=clean_environment(CUDA_CACHE_PATH=cuda_cache), stdout=log_file,
                                   stderr=subprocess.STDOUT)
        peak_total = 0
        finished = threading.Event()

        def sample() -> None:
            nonlocal peak_total
            while not finished.wait(0.25):
                peak_total = max(peak_total, tree_proportional_bytes(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # wait4 rather than wait: its accounting covers the compile's own
        # children (workers, ptxas), which it waited for.
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        finished.set()
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if not keep_archive:
        archive.unlink(missing_ok=True)
    if process.returncode != 0:
        raise SystemExit(f"compile_bench: the compile of {name} failed ({process.returncode}); see {log}")
    return CompileRun(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime,
                      peak_process_bytes=usage.ru_maxrss * 1024, peak_total_bytes=peak_total,
                      report=json.loads(report.read_text()))


def one_call_site_added(name: str, traces: list[Path], logs: Path, jobs: int, arch: str) -> dict:
    """The compile of `traces` into a cache that holds the compile of the same
    traces less one trace's last kernel, one no other trace records."""
    spreplay = [sys.executable, "-m", "spreplay"]
    fewer = logs / "without-its-last-kernel.capnp"
    for cut in reversed(range(len(traces))):
        left_out = without_last_kernel(spreplay, traces[cut], fewer)
        if not any(left_out in kernel_keys(spreplay, other) for other in traces if other != traces[cut]):
            break
    else:
        raise SystemExit(f"compile_bench: every last kernel of {name}'s traces is another trace's too")
    cache = Path(tempfile.mkdtemp(prefix="spreplay-compile-bench-cache-"))
    try:
        before = run_compile(f"{name}-without-its-last-call-site",
                             [*traces[:cut], fewer, *traces[cut + 1:]], logs, jobs, arch, cache)
        added = run_compile(f"{name}-one-call-site-added", traces, logs, jobs, arch, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        fewer.unlink(missing_ok=True)
    compiled_before = {kernel["key"] for kernel in before.report["kernels"]}
    new = [kernel for kernel in added.report["kernels"] if kernel["key"] not in compiled_before]
    return {"wall_s": added.wall_s, "cpu_s": added.cpu_s, "kernels": [kernel["label"] for kernel in new],
            "app_recorded_jit_s": sum(kernel["recordedCompileSeconds"] for kernel in new)}


def measure(name: str, traces: list[Path], logs: Path, jobs: int, arch: str) -> dict:
    cold = run_compile(f"{name}-cold", traces, logs, jobs, arch, cache=None, keep_archive=True)
    cold_archive = logs / f"{name}-cold.sprk"
    compiled = [kernel for kernel in cold.report["kernels"] if kernel["status"] == "compiled" and not kernel["optix"]]
    try:
        driver_jit = driver_jit_seconds(cold_archive, [kernel["key"] for kernel in compiled])
    finally:
        cold_archive.unlink(missing_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="spreplay-compile-bench-cache-"))
    try:
        into_empty_cache = run_compile(f"{name}-into-empty-cache", traces, logs, jobs, arch, cache)
        unchanged = run_compile(f"{name}-unchanged", traces, logs, jobs, arch, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    added = one_call_site_added(name, traces, logs, jobs, arch)
    report = cold.report
    app = report["appCompileSeconds"]
    # Slang's front end in the app's sessions; 0 in traces recorded before it was.
    loads = report.get("appModuleLoadSeconds", 0.0)
    slowest = max((kernel["recordedCompileSeconds"] for kernel in report["kernels"]), default=0)
    # With the driver's JIT, which the archive's SASS also takes off the app.
    whole: dict = {}
    if driver_jit is not None:
        jit = sum(driver_jit.values())
        whole_jit = app + loads + jit
        per_kernel = {kernel["key"]: kernel["recordedCompileSeconds"] + driver_jit[kernel["key"]]
                      for kernel in compiled}
        slowest_key = max(per_kernel, key=per_kernel.get, default="")
        whole = {
            "app_driver_jit_s": jit,
            "app_whole_jit_s": whole_jit,
            "app_slowest_kernel_with_driver_jit": next(
                (kernel["label"] for kernel in compiled if kernel["key"] == slowest_key), ""),
            "app_slowest_kernel_with_driver_jit_s": per_kernel.get(slowest_key, 0.0),
            "wall_over_app_slowest_kernel_with_driver_jit":
                cold.wall_s / per_kernel[slowest_key] if slowest_key else None,
            "cpu_over_app_whole_jit": cold.cpu_s / whole_jit if whole_jit else None,
        }
    return {
        "traces": [str(trace.relative_to(ROOT)) if trace.is_relative_to(ROOT) else trace.name for trace in traces],
        "kernels": len(report["kernels"]),
        "failed": sum(kernel["status"] != "compiled" for kernel in report["kernels"]),
        "modules_archived": report["modulesArchived"],
        "app_recorded_jit_s": app,
        "app_recorded_module_loads_s": loads,
        "app_slowest_kernel_s": slowest,
        "wall_over_app_slowest_kernel": cold.wall_s / slowest if slowest else None,
        "wall_s": cold.wall_s,
        "cpu_s": cold.cpu_s,
        "critical_path_s": report["criticalPathSeconds"],
        "critical_path_kernel": report["criticalPathKernel"],
        "wall_over_critical_path": cold.wall_s / report["criticalPathSeconds"],
        "wall_over_app_jit": cold.wall_s / app if app else None,
        "cpu_over_app_jit": cold.cpu_s / app if app else None,
        "cpu_over_app_jit_and_module_loads": cold.cpu_s / (app + loads) if loads else None,
        "peak_rss_one_process_bytes": cold.peak_process_bytes,
        "peak_pss_all_processes_bytes": cold.peak_total_bytes,
        "into_empty_cache_wall_s": into_empty_cache.wall_s,
        "unchanged_recompile_wall_s": unchanged.wall_s,
        "one_call_site_added": added,
        **whole,
    }


def markdown(results: dict) -> str:
    lines = [
        f"`spreplay compile --jobs {results['jobs']} --arch {results['arch']}`, slangpy {results['slangpy']}, "
        f"{results['cpus']} CPUs, {results['date']}"
        + ("; the synthetic workload recorded on this machine" if results["synthetic_recorded_here"] else "")
        + "; every recording and compile with a CUDA cache of its own, empty.",
        "",
        "| trace | kernels | the app's recorded JIT: code generation (+ module loads) "
        "| compile wall (÷ the app's slowest kernel) | CPU (÷ the app's code generation; ÷ with its module loads) "
        "| critical path (wall ÷ it) | peak memory: largest process (RSS) / all (PSS) | unchanged trace "
        "| one call site added (its app JIT) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in results["traces"].items():
        if "skipped" in row:
            lines.append(f"| {name} | skipped: {row['skipped']} | | | | | | | |")
            continue
        loads = row["app_recorded_module_loads_s"]
        app = f"{row['app_recorded_jit_s']:.1f} s " + (f"(+ {loads:.1f} s)" if loads else "(loads not recorded)")
        cpu = f"{row['cpu_s']:.1f} s ({row['cpu_over_app_jit']:.2f}×" + (
            f"; {row['cpu_over_app_jit_and_module_loads']:.2f}×)" if loads else ")")
        lines.append(
            f"| {name} | {row['kernels']} ({row['failed']} failed) | {app} "
            f"| {row['wall_s']:.1f} s ({row['wall_over_app_slowest_kernel']:.2f}× {row['app_slowest_kernel_s']:.1f} s) "
            f"| {cpu} "
            f"| {row['critical_path_s']:.1f} s ({row['wall_over_critical_path']:.2f}×) "
            f"| {row['peak_rss_one_process_bytes'] / 1e9:.2f} / {row['peak_pss_all_processes_bytes'] / 1e9:.2f} GB "
            f"| {row['unchanged_recompile_wall_s']:.1f} s "
            f"| {row['one_call_site_added']['wall_s']:.1f} s ({row['one_call_site_added']['app_recorded_jit_s']:.1f} s) |")
    with_jit = {name: row for name, row in results["traces"].items() if "app_driver_jit_s" in row}
    if with_jit:
        lines += [
            "",
            "With the driver's JIT of each kernel's PTX, which an app without spreplay also pays and the archive's "
            "SASS takes off it (bench/driver_jit.py: a fresh process, CUDA_FORCE_PTX_JIT=1, CUDA_CACHE_DISABLE=1):",
            "",
            "| trace | the app's driver JIT | the app's whole JIT: code generation, module loads, driver JIT "
            "| CPU ÷ it | the app's slowest kernel with its driver JIT | compile wall ÷ it |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for name, row in with_jit.items():
            lines.append(
                f"| {name} | {row['app_driver_jit_s']:.1f} s | {row['app_whole_jit_s']:.1f} s | {row['cpu_over_app_whole_jit']:.2f}× "
                f"| {row['app_slowest_kernel_with_driver_jit']}: {row['app_slowest_kernel_with_driver_jit_s']:.1f} s "
                f"| {row['wall_over_app_slowest_kernel_with_driver_jit']:.2f}× |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--arch", default="90", help="as spreplay compile's --arch, or 'default' for its own set")
    parser.add_argument("--traces", nargs="+", choices=TRACE_NAMES, default=list(TRACE_NAMES))
    parser.add_argument("--record-synthetic", action="store_true",
                        help="record the synthetic workload on this machine (needs a CUDA GPU) and compile that trace")
    args = parser.parse_args()
    logs = args.out / "compile-bench"
    logs.mkdir(parents=True, exist_ok=True)
    version = importlib.metadata.version("slangpy")
    results: dict = {"slangpy": version, "jobs": args.jobs, "arch": args.arch, "cpus": os.cpu_count(),
                     "date": time.strftime("%Y-%m-%d"), "synthetic_recorded_here": args.record_synthetic,
                     "traces": {}}
    scratch = Path(tempfile.mkdtemp(prefix="spreplay-compile-bench-"))
    try:
        for name in args.traces:
            traces = traces_of(name, version, scratch, args.record_synthetic)
            if not traces:
                print(f"compile_bench: {name}: no trace recorded under slangpy {version}; skipped", file=sys.stderr)
                results["traces"][name] = {"skipped": f"no trace recorded under slangpy {version}"}
                continue
            print(f"compile_bench: {name} ...", file=sys.stderr, flush=True)
            results["traces"][name] = measure(name, traces, logs, args.jobs, args.arch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (args.out / "compile_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    table = markdown(results)
    (args.out / "compile-bench.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
