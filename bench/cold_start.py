# SPDX-License-Identifier: Apache-2.0
"""Cold start of slangpy apps on a CUDA GPU: stock, stock with its caches, and
spreplay, side by side in one run, broken down per phase.

Workloads: the three samples and bench/workloads/synthetic (30 call sites).
Every measurement is a fresh process running the app under
bench/phase_probe.py. Per workload, once:
  record    stock, fresh CUDA cache, SLANGPY_RECORD          -> trace, record overhead
  compile   spreplay compile trace -o archive (no compile cache; the tool's
            default arches, or those of --arch)
  prime     stock with empty caches that the warm configurations then use, once
            for each set of caches a measured configuration needs:
            a shader cache and a CUDA cache for warm; the same plus a module
            cache for warm_all (a session with a module cache has other
            options, so its shader-cache entries never match one without)
then, in rounds (configurations interleaved so that drift hits all alike):
  cold       stock, fresh CUDA_CACHE_PATH, no shader cache               (a)
  cuda_warm  stock, only the CUDA cache that warm's prime filled
  warm       stock, shader_cache_path and CUDA cache from its prime      (b)
  warm_all   shader, module_cache_path and CUDA caches from its prime    (b+)
  spreplay   SLANGPY_KERNELS=archive (strict, modules too), fresh CUDA cache (c)
  spreplay_module_cache  spreplay plus warm_all's module cache (not
             strict: it reports what it served)
Every run's outputs must be bit-identical to the cold run's.

    python bench/cold_start.py --out DIR [--rounds 3] [--repeat 5] [--budget-s 540] [--arch 90]
Writes DIR/cold_start.json; bench/render_report.py turns it into markdown and a plot.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_output import clean_environment, outputs_identical  # noqa: E402
from phases import summarize_run  # noqa: E402
from slangtorch_runs import measure_slangtorch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = {
    "elementwise": ROOT / "samples" / "elementwise" / "app.py",
    "generic_mlp": ROOT / "samples" / "generic_mlp" / "app.py",
    "autodiff": ROOT / "samples" / "autodiff" / "app.py",
    "synthetic": ROOT / "bench" / "workloads" / "synthetic" / "app.py",
}
CONFIGS = ["cold", "cuda_warm", "warm", "warm_all", "spreplay", "spreplay_module_cache"]
PROBE = ROOT / "bench" / "phase_probe.py"


class RunFailed(RuntimeError):
    pass


class Workspace:
    """Scratch directories of one benchmark run."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="spreplay-cold-start-"))

    def fresh(self, name: str) -> Path:
        path = self.root / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path


def probed_run(app: Path, env: dict[str, str], out_npz: Path, probe_json: Path, repeat: int) -> dict[str, Any]:
    # A run that dies before writing must not be read as the previous run's result.
    out_npz.unlink(missing_ok=True)
    probe_json.unlink(missing_ok=True)
    env = clean_environment(SPREPLAY_SAMPLE_DEVICE="cuda", SPREPLAY_BENCH_PROBE=str(probe_json), **env)
    env["SPREPLAY_BENCH_T0"] = repr(time.time())
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(PROBE), str(app), "--repeat", str(repeat), "--out", str(out_npz)],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RunFailed(f"{app.parent.name} exited with {proc.returncode}:\n{proc.stdout[-2500:]}\n{proc.stderr[-2500:]}")
    try:
        probe = json.loads(probe_json.read_text())
        result = summarize_run(probe, proc.stdout, proc.stderr)
    except (OSError, ValueError) as error:  # json.JSONDecodeError is a ValueError
        raise RunFailed(f"{app.parent.name}: no usable probe output ({error}):\n{proc.stderr[-2500:]}") from error
    result["wall_s"] = wall
    result["warnings"] = [line for line in proc.stderr.splitlines() if line.startswith("spreplay:")][:10]
    return result


# The configurations that run with each warm configuration's primed caches.
PRIMED_FOR = {"warm": {"warm", "cuda_warm"}, "warm_all": {"warm_all", "spreplay_module_cache"}}


class WorkloadBench:
    """The prepared state and the measurements of one workload."""

    def __init__(self, name: str, app: Path, space: Workspace, repeat: int, configs: list[str],
                 arches: str | None) -> None:
        self.name, self.app, self.space, self.repeat, self.configs = name, app, space, repeat, configs
        self.arches = arches
        self.dir = space.fresh(name)
        self.trace = self.dir / "trace.capnp"
        self.archive = self.dir / "kernels.sprk"
        # The caches each warm configuration runs with, filled by its own prime run.
        self.warm_caches = {
            "warm": {"shader": self.dir / "warm-shader-cache", "cuda": self.dir / "warm-cuda-cache"},
            "warm_all": {"shader": self.dir / "all-shader-cache", "module": self.dir / "all-module-cache",
                         "cuda": self.dir / "all-cuda-cache"},
        }
        self.result: dict[str, Any] = {"app": str(app.relative_to(ROOT)), "rounds": []}

    def run(self, label: str, env: dict[str, str]) -> dict[str, Any]:
        return probed_run(self.app, env, self.dir / f"{label}.npz", self.dir / f"{label}.probe.json", self.repeat)

    def prepare(self) -> None:
        cuda = self.space.fresh(f"{self.name}-record-cuda")
        self.result["record"] = self.run("record", {"CUDA_CACHE_PATH": str(cuda), "SLANGPY_RECORD": str(self.trace)})
        self.result["trace_bytes"] = self.trace.stat().st_size

        report = self.dir / "compile-report.json"
        start = time.perf_counter()
        # Serving reads only the running GPU's SASS from the archive, so fewer
        # arches shorten the preparation without changing what (c) measures.
        arch_args = ["--arch", self.arches] if self.arches else []
        proc = subprocess.run([sys.executable, "-m", "spreplay", "compile", str(self.trace), "-o", str(self.archive),
                               "--no-cache", "--report", str(report), *arch_args], env=clean_environment(),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RunFailed(f"spreplay compile failed:\n{proc.stderr[-3000:]}")
        kernels = json.loads(report.read_text())["kernels"]
        self.result["compile"] = {
            "wall_s": time.perf_counter() - start,
            "jobs": os.cpu_count(),
            "kernels": len(kernels),
            "archive_bytes": self.archive.stat().st_size,
            "front_end_s_total": sum(k["frontEndSeconds"] for k in kernels),
            "codegen_s_total": sum(k["codegenSeconds"] for k in kernels),
            "sass_s_total": sum(sum(k["sassSeconds"].values()) for k in kernels),
            "arches": sorted({arch for k in kernels for arch in k["sassSeconds"]}),
        }

        self.result["prime"] = {}
        for config, caches in self.warm_caches.items():
            if not set(self.configs) & PRIMED_FOR[config]:
                continue  # no configuration measured here runs with these caches
            for cache in caches.values():
                cache.mkdir(exist_ok=True)
            self.result["prime"][config] = self.run(f"prime-{config}", self.warm_env(config))

    def warm_env(self, config: str) -> dict[str, str]:
        caches = self.warm_caches[config]
        env = {"CUDA_CACHE_PATH": str(caches["cuda"]), "SPREPLAY_BENCH_SHADER_CACHE": str(caches["shader"])}
        if "module" in caches:
            env["SPREPLAY_BENCH_MODULE_CACHE"] = str(caches["module"])
        return env

    def config_env(self, config: str) -> dict[str, str]:
        fresh_cuda = {"CUDA_CACHE_PATH": str(self.space.fresh(f"{self.name}-{config}-cuda"))}
        if config == "cold":
            return fresh_cuda
        if config == "cuda_warm":
            return {"CUDA_CACHE_PATH": str(self.warm_caches["warm"]["cuda"])}
        if config in self.warm_caches:
            return self.warm_env(config)
        serve = {"SLANGPY_KERNELS": str(self.archive), "SLANGPY_KERNELS_SUMMARY": "1"}
        if config == "spreplay":
            return {**fresh_cuda, **serve, "SLANGPY_KERNELS_STRICT": "1", "SLANGPY_KERNELS_STRICT_MODULES": "1"}
        if config == "spreplay_module_cache":
            return {**fresh_cuda, **serve, "SPREPLAY_BENCH_MODULE_CACHE": str(self.warm_caches["warm_all"]["module"])}
        raise ValueError(config)

    def measure_round(self) -> None:
        measured: dict[str, Any] = {}
        for config in self.configs:
            measured[config] = self.run(config, self.config_env(config))
            measured[config]["outputs_identical_to_cold"] = outputs_identical(self.dir / "cold.npz", self.dir / f"{config}.npz")
        if not self.result["rounds"]:
            self.result["record"]["outputs_identical_to_cold"] = outputs_identical(self.dir / "cold.npz",
                                                                           self.dir / "record.npz")
            for config, prime in self.result["prime"].items():
                prime["outputs_identical_to_cold"] = outputs_identical(self.dir / "cold.npz", self.dir / f"prime-{config}.npz")
        self.result["rounds"].append(measured)


def system_info(commit: str | None) -> dict[str, Any]:
    import slangpy

    gpu, driver = "?", "?"
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        if smi.returncode == 0 and smi.stdout.strip():
            gpu, _, driver = smi.stdout.strip().splitlines()[0].partition(", ")
    spreplay_version = subprocess.run([sys.executable, "-m", "spreplay", "version"], env=clean_environment(),
                                      capture_output=True, text=True)
    return {
        "date": time.strftime("%Y-%m-%d"),
        "gpu": gpu,
        "driver": driver,
        # SPREPLAY_COMMIT names the code of a copy whose git history is absent
        # or stale, as a copied checkout's can be: it wins over git's answer.
        "commit": os.environ.get("SPREPLAY_COMMIT") or commit or "unknown",
        "slangpy": getattr(slangpy, "__version__", "?"),
        "spreplay": spreplay_version.stdout.strip(),
        "python": platform.python_version(),
        "os": platform.platform(),
        "cpus": os.cpu_count(),
    }


def git_commit() -> str | None:
    """HEAD, with "-dirty" when tracked files differ from it: such results
    were not measured with the code of the commit they would otherwise name."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return None
    changes = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if changes.returncode != 0 or changes.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--configs", default=",".join(CONFIGS), help="cold first; default: all")
    parser.add_argument("--slangtorch", action="store_true",
                        help="also time slangtorch on the synthetic workload's kernels (d)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="passes per run; passes after the first are steady state")
    parser.add_argument("--arch", help="compile for these arches (e.g. 90), not the tool's default ones")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="start no round that would likely end after this many seconds")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    space = Workspace()
    configs = args.configs.split(",")
    if configs[0] != "cold" or not set(configs) <= set(CONFIGS):
        parser.error(f"--configs: 'cold' first, then any of {', '.join(CONFIGS[1:])}")
    benches = [WorkloadBench(name, WORKLOADS[name], space, args.repeat, configs, args.arch)
               for name in args.workloads.split(",")]
    results: dict[str, Any] = {"system": system_info(git_commit()), "configs": configs, "repeat": args.repeat,
                               "workloads": {}}

    def save() -> None:
        results["workloads"] = {bench.name: bench.result for bench in benches}
        results["elapsed_s"] = time.perf_counter() - started
        (args.out / "cold_start.json").write_text(json.dumps(results, indent=1))

    failed = False
    for bench in benches:
        try:
            bench.prepare()
            print(f"{bench.name}: prepared ({bench.result['compile']['kernels']} kernels)", flush=True)
        except (RunFailed, ValueError) as error:
            print(f"{bench.name}: {error}", flush=True)
            bench.result["error"] = str(error)[-4000:]
            failed = True
        save()
    ready = [bench for bench in benches if "error" not in bench.result]
    round_s = 0.0
    for number in range(args.rounds):
        elapsed = time.perf_counter() - started
        if number > 0 and args.budget_s is not None and elapsed + round_s > args.budget_s:
            print(f"stopping after {number} round(s): budget", flush=True)
            break
        round_start = time.perf_counter()
        for bench in ready:
            try:
                bench.measure_round()
                last = bench.result["rounds"][-1]
                print(f"{bench.name} round {number + 1}: " + ", ".join(
                    f"{c} {last[c]['ready_to_all_first_results_s']:.2f}s" for c in configs), flush=True)
            except (RunFailed, ValueError) as error:
                print(f"{bench.name}: {error}", flush=True)
                bench.result.setdefault("round_errors", []).append(str(error)[-4000:])
                failed = True
            save()
        round_s = time.perf_counter() - round_start
    if args.slangtorch:
        results["slangtorch"] = measure_slangtorch(args.repeat, clean_environment())
        print(f"slangtorch: {json.dumps(results['slangtorch'])[:600]}", flush=True)
    save()
    all_identical = all(run["outputs_identical_to_cold"] for bench in ready for r in bench.result["rounds"]
                        for run in r.values())
    all_served = all(r["spreplay"].get("spreplay_compiled") == 0 and r["spreplay"].get("spreplay_modules_compiled") == 0
                     for bench in ready for r in bench.result["rounds"] if "spreplay" in r)
    print(f"outputs identical: {all_identical}; spreplay served every kernel and module: {all_served}")
    return 0 if all_identical and all_served and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
