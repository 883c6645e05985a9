"""End-to-end proof on a CUDA GPU, for every sample app.

Per sample, each step in a fresh process:
  stock     the app as is, fresh CUDA cache (cold)               -> reference outputs
  record    SLANGPY_RECORD=trace                                  -> the trace
  compile   spreplay compile trace -o archive (default arches)
  served    SLANGPY_KERNELS=archive, strict, driver JIT disabled  -> outputs must be identical,
            every kernel served, compilation reports show no Slang or downstream time;
            every module served as IR, strict (SLANGPY_KERNELS_STRICT_MODULES), local_modules'
            too, whose modules carry their source locations for its debug information
  moved     the app copied to another directory and slangpy installed in another
            place, same archive: every kernel and module must still be served (keys hold
            no paths)
  stale     the moved copy with a comment added to an imported .slang file: kernels
            and modules that import it must miss (and compile), the rest be served;
            outputs identical
  reordered (local_modules) its modules loaded in the other order, which renames
            slangpy's library in Slang, same archive: every kernel must be served
Every app runs from its own folder, as its users run it.
The driver-JIT check first fills a fresh CUDA cache with slang-rhi's own kernels
(it compiles them with NVRTC at device creation); every call-site kernel must
then load without JIT. Writes e2e.json and the traces under --out.

    python tests/gpu/e2e_samples.py --out DIR [--samples elementwise,...]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from app_output import SERVED, TIMING, clean_environment, outputs_identical, rhi_kernels_cuda_cache, sample_app  # noqa: E402

SAMPLES = ["elementwise", "generic_mlp", "autodiff", "local_modules"]
# Flags that load a sample's modules in another order than its default.
REORDERED = {"local_modules": ["--noise-first"]}
REPORT = re.compile(r"compilation-report: entry_points=(?P<entries>\d+) compiled=(?P<compiled>\d+) "
                    r"slang_s=(?P<slang>[\d.]+) downstream_s=(?P<downstream>[\d.]+)")


def run(argv: list[str], env: dict[str, str], check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, env=clean_environment(**env), capture_output=True, text=True, cwd=cwd)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def app_run(app: Path, out_npz: Path, env: dict[str, str], cache: str, flags: Sequence[str] = ()) -> dict:
    start = time.perf_counter()
    proc = run([sys.executable, str(app), *flags, "--out", str(out_npz)],
               {"SPREPLAY_SAMPLE_DEVICE": "cuda", "SPREPLAY_SAMPLE_REPORTS": "1", "CUDA_CACHE_PATH": cache, **env},
               cwd=app.parent)
    result = {"wall_s": time.perf_counter() - start}
    if match := TIMING.search(proc.stdout):
        result.update(setup_s=float(match["setup"]), first_pass_s=float(match["first"]))
    if match := REPORT.search(proc.stdout):
        result.update(entry_points=int(match["entries"]), compiled_entry_points=int(match["compiled"]),
                      slang_s=float(match["slang"]), downstream_s=float(match["downstream"]))
    if match := SERVED.search(proc.stderr):
        result.update(served=int(match["served"]), compiled=int(match["compiled"]))
        if match["modules_served"] is not None:
            result.update(modules_served=int(match["modules_served"]),
                          modules_compiled=int(match["modules_compiled"]))
    result["warnings"] = [line for line in proc.stderr.splitlines() if line.startswith("spreplay:")][:20]
    return result


def trace_kernels(trace: Path) -> int:
    inspected = run([sys.executable, "-m", "spreplay", "inspect", str(trace), "--json"], {})
    return len(json.loads(inspected.stdout)["kernels"])


def fresh_cache() -> str:
    return tempfile.mkdtemp(prefix="cuda-cache-")


def relocated_slangpy(work: Path) -> dict[str, str]:
    """slangpy installed a second time, elsewhere: a user's other virtualenv."""
    import slangpy

    target = work / "other-site"
    shutil.copytree(Path(slangpy.__file__).parent, target / "slangpy", symlinks=True)
    # With its installer's record, as pip leaves it: spreplay reads the
    # release from it, and refuses a slangpy that has none.
    record = Path(str(importlib.metadata.distribution("slangpy")._path))  # type: ignore[attr-defined]
    shutil.copytree(record, target / record.name)
    return {"PYTHONPATH": f"{target}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def stale_edit(app_dir: Path) -> str:
    """Adds a comment to the first imported .slang file of a sample: the code
    does not change, the content does, so its kernels must miss."""
    entry_modules = ("elementwise.slang", "mlp.slang", "train.slang", "shading.slang", "noise.slang")
    imported = sorted(p for p in app_dir.glob("*.slang") if p.name not in entry_modules)
    target = imported[0]
    target.write_text(target.read_text() + "\n// edited after the archive was built\n")
    return target.name


def check_sample(name: str, out: Path, work: Path, moved_env: dict[str, str]) -> dict:
    app = sample_app(name)
    trace = out / "traces" / f"{name}.capnp"
    archive = work / f"{name}.sprk"
    trace.unlink(missing_ok=True)
    result: dict = {}
    result["stock"] = app_run(app, work / f"{name}-stock.npz", {}, fresh_cache())
    result["record"] = app_run(app, work / f"{name}-record.npz", {"SLANGPY_RECORD": str(trace)}, fresh_cache())
    start = time.perf_counter()
    compiled = run([sys.executable, "-m", "spreplay", "compile", str(trace), "-o", str(archive), "--no-cache"], {})
    result["compile"] = {"wall_s": time.perf_counter() - start, "log_tail": compiled.stderr.splitlines()[-1]}
    serve = {"SLANGPY_KERNELS": str(archive), "SLANGPY_KERNELS_STRICT": "1", "SLANGPY_KERNELS_SUMMARY": "1",
             "CUDA_DISABLE_PTX_JIT": "1", "SLANGPY_KERNELS_STRICT_MODULES": "1"}
    result["served"] = app_run(app, work / f"{name}-served.npz", serve, rhi_kernels_cuda_cache())
    result["served"]["outputs_identical"] = outputs_identical(work / f"{name}-stock.npz", work / f"{name}-served.npz")

    moved_dir = work / "moved" / "samples"
    shutil.copytree(ROOT / "samples", moved_dir, dirs_exist_ok=True)
    moved_app = sample_app(name, moved_dir.parent)
    result["moved"] = app_run(moved_app, work / f"{name}-moved.npz", {**serve, **moved_env},
                              rhi_kernels_cuda_cache(**moved_env))
    result["moved"]["outputs_identical"] = outputs_identical(work / f"{name}-stock.npz", work / f"{name}-moved.npz")

    edited = stale_edit(moved_dir / name)
    lenient = {k: v for k, v in serve.items()
               if k not in ("SLANGPY_KERNELS_STRICT", "SLANGPY_KERNELS_STRICT_MODULES", "CUDA_DISABLE_PTX_JIT")}
    result["stale"] = app_run(moved_app, work / f"{name}-stale.npz", {**lenient, **moved_env}, fresh_cache())
    result["stale"]["edited"] = edited
    result["stale"]["outputs_identical"] = outputs_identical(work / f"{name}-stock.npz", work / f"{name}-stale.npz")
    shutil.rmtree(work / "moved")

    # slangpy before 0.43 has no compilation reports: the trace says how many
    # kernels there are, and the hooks' count of Slang codegen calls (strict,
    # so any would have failed the run) stands in for the reports'.
    reports = "entry_points" in result["served"]
    result["compilation_reports"] = reports
    kernels = result["served"]["entry_points"] if reports else trace_kernels(trace)
    codegen = "compiled_entry_points" if reports else "compiled"
    verdict_extra = {}
    if name in REORDERED:
        # Modules are not strict here: the step proves the kernels' keys.
        reordered = {k: v for k, v in serve.items() if k != "SLANGPY_KERNELS_STRICT_MODULES"}
        result["reordered"] = app_run(app, work / f"{name}-reordered.npz", reordered, rhi_kernels_cuda_cache(),
                                      REORDERED[name])
        result["reordered"]["outputs_identical"] = outputs_identical(work / f"{name}-stock.npz",
                                                                     work / f"{name}-reordered.npz")
        verdict_extra = {
            "reordered_all_served": result["reordered"].get("served") == kernels
            and result["reordered"].get("compiled") == 0
            and result["reordered"].get(codegen) == 0,
            "reordered_identical": result["reordered"]["outputs_identical"],
        }
    def modules_as_expected(step: str) -> bool:
        r = result[step]
        return r.get("modules_served", 0) > 0 and r.get("modules_compiled") == 0

    result["verdict"] = {
        "served_all": result["served"].get("served") == kernels and result["served"].get("compiled") == 0,
        "served_modules": modules_as_expected("served"),
        "moved_modules": modules_as_expected("moved"),
        "stale_modules_missed": result["stale"].get("modules_compiled", 0) > 0,
        "served_no_codegen": result["served"].get(codegen) == 0,
        "served_identical": result["served"]["outputs_identical"],
        "moved_all_served": result["moved"].get("served") == kernels and result["moved"].get("compiled") == 0,
        "moved_identical": result["moved"]["outputs_identical"],
        "stale_missed": result["stale"].get("compiled", 0) > 0,
        "stale_identical": result["stale"]["outputs_identical"],
        **verdict_extra,
    }
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", default=",".join(SAMPLES))
    args = parser.parse_args()
    args.out = args.out.resolve()  # the apps run in their own folders
    (args.out / "traces").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spreplay-e2e-"))
    moved_env = relocated_slangpy(work)
    results = {}
    for name in args.samples.split(","):
        try:
            results[name] = check_sample(name, args.out, work, moved_env)
        except RuntimeError as error:  # report it, and still check the other samples
            print(f"{name}: {error}", flush=True)
            results[name] = {"error": str(error)[-3000:], "verdict": {"completed": False}}
            shutil.rmtree(work / "moved", ignore_errors=True)
            continue
        print(name, json.dumps(results[name]["verdict"]), flush=True)
        for step in ("stock", "served", "moved", "stale", "reordered"):
            if step not in results[name]:
                continue
            r = results[name][step]
            print(f"  {step:<6} setup {r.get('setup_s')} s, first pass {r.get('first_pass_s')} s, "
                  f"served {r.get('served')}, compiled {r.get('compiled')}, codegen entry points "
                  f"{r.get('compiled_entry_points')}/{r.get('entry_points')}, modules served "
                  f"{r.get('modules_served')}, from source {r.get('modules_compiled')}", flush=True)
            for warning in r["warnings"][:4]:
                print(f"      {warning}", flush=True)
    (args.out / "e2e.json").write_text(json.dumps(results, indent=2))
    ok = all(all(r["verdict"].values()) for r in results.values())
    print("E2E:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
