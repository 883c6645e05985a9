# SPDX-License-Identifier: Apache-2.0
"""Production hardening on a CUDA GPU: several devices in one process, call
sites built from many threads at once, slangpy's hot reload, and many
processes recording into one trace while one of them is killed.

Each check runs real slangpy apps (tests/gpu/apps/hardening_app.py) in fresh
processes: stock for the reference outputs, recorded, compiled with
`spreplay compile`, then served. Served runs must give outputs bit-identical
to stock and exactly the served and compiled counts stated below.

  devices        two plain CUDA devices, 4 call sites each: 8 served, 0 compiled
  torch-devices  the same with the first device from create_torch_device
  threads        12 call sites built at once from 12 threads: the trace holds
                 all 12 with their thread names, 12 served, 0 compiled
  reload         a module edited and hot reloaded mid-run, recorded so; served
                 as recorded: 2 served, 0 compiled (strict); edited otherwise:
                 the edited kernel misses naming the file and compiles (1 + 1)
  recorders      8 processes record into one trace at once; one is SIGKILLed
                 while it is still recording; every call site the 7 survivors
                 recorded is then served in strict mode
  damaged-module one byte of slangpy's library IR flipped in the archive:
                 `spreplay verify` says so, the library loads from source
                 with that reason, and all 8 kernels are still served
  compute-cache  `spreplay compile` adds nothing to the CUDA compute cache,
                 which NVRTC fills when the user turns it on
                 (CUDA_CACHE_DISABLE=0); both archives are byte-identical

    python tests/gpu/hardening.py --out DIR [--checks devices,threads,...]

Writes DIR/hardening.json; exits non-zero if any check fails.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from app_output import clean_environment, outputs_identical  # noqa: E402

APP = ROOT / "tests" / "gpu" / "apps" / "hardening_app.py"
RECORDERS = 8


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Runner:
    """Runs the app and the tool, each in a fresh process with a fresh CUDA cache."""

    def __init__(self, out: Path):
        self.out = out

    def app(self, name: str, args: list[str], out_npz: Path, env: dict[str, str] | None = None,
            check: bool = True) -> dict:
        cache = tempfile.mkdtemp(prefix="cuda-cache-")
        proc = subprocess.run([sys.executable, str(APP), name, *args, "--out", str(out_npz)],
                              env=clean_environment(CUDA_CACHE_PATH=cache, **(env or {})),
                              capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            raise CheckFailed(f"{name} {' '.join(args)} failed ({proc.returncode}):\n"
                              f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        summary = {}
        for line in proc.stdout.splitlines():
            if line.startswith("summary "):
                summary = json.loads(line[len("summary "):])
        warnings = [line for line in proc.stderr.splitlines() if line.startswith("spreplay:")]
        return {"returncode": proc.returncode, "summary": summary, "warnings": warnings[:20]}

    def spreplay(self, *args: str, check: bool = True, env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "spreplay", *args], env=clean_environment(**(env or {})),
                              capture_output=True, text=True, timeout=600)
        if check and proc.returncode != 0:
            raise CheckFailed(f"spreplay {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc

    def inspect(self, trace: Path) -> dict:
        return json.loads(self.spreplay("inspect", str(trace), "--json").stdout)

    def compile(self, trace: Path, archive: Path, check: bool = True, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess:
        return self.spreplay("compile", str(trace), "-o", str(archive), "--arch", "90", check=check, env=env)


def strict(archive: Path) -> dict[str, str]:
    # The driver's JIT is left on: tests/gpu/e2e_samples.py proves, with the
    # CUDA cache it needs prepared, that served kernels never reach it.
    return {"SLANGPY_KERNELS": str(archive), "SLANGPY_KERNELS_STRICT": "1", "SLANGPY_KERNELS_STRICT_MODULES": "1"}


def expect_counts(run: dict, served: int, compiled: int, what: str) -> None:
    summary = run["summary"]
    expect(summary.get("active") is True, f"{what}: spreplay was not serving: {run['warnings']}")
    got = (summary.get("served"), summary.get("compiled"), summary.get("refused"), summary.get("notKeyable"))
    expect(got == (served, compiled, 0, 0),
           f"{what}: served/compiled/refused/notKeyable {got}, expected ({served}, {compiled}, 0, 0); "
           f"misses {summary.get('misses')}")
    expect(summary.get("modulesRefused") == 0, f"{what}: modules refused: {summary.get('moduleMisses')}")


def record_compile_serve(runner: Runner, work: Path, name: str, args: list[str], served: int) -> dict:
    """The common flow: stock, recorded, compiled, served strict."""
    stock = runner.app(name, args, work / "stock.npz")
    recorded = runner.app(name, args, work / "record.npz", {"SLANGPY_RECORD": str(work / "trace.capnp")})
    expect(outputs_identical(work / "stock.npz", work / "record.npz"), "recording changed the outputs")
    trace = runner.inspect(work / "trace.capnp")
    expect(trace["damage"] == [] and trace["undecodableRecords"] == 0, f"damaged trace: {trace['damage']}")
    runner.compile(work / "trace.capnp", work / "kernels.sprk")
    served_run = runner.app(name, args, work / "served.npz", strict(work / "kernels.sprk"))
    expect_counts(served_run, served, 0, name)
    expect(outputs_identical(work / "stock.npz", work / "served.npz"), "served outputs differ from stock")
    return {"stock": stock, "record": recorded, "served": served_run, "trace_call_sites": len(trace["callSites"]),
            "trace_kernels": len(trace["kernels"]), "trace": trace}


def check_devices(runner: Runner, work: Path) -> dict:
    result = record_compile_serve(runner, work, "devices", [], served=8)
    expect(result["trace_call_sites"] == 4, f"{result['trace_call_sites']} call sites recorded, expected 4")
    result.pop("trace")
    return result


def check_torch_devices(runner: Runner, work: Path) -> dict:
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode != 0:
        return {"skipped": "PyTorch with CUDA is not installed"}
    result = record_compile_serve(runner, work, "devices", ["--torch"], served=8)
    result.pop("trace")
    return result


def check_threads(runner: Runner, work: Path) -> dict:
    result = record_compile_serve(runner, work, "threads", [], served=12)
    trace = result.pop("trace")
    threads = sorted(site["threadName"] for site in trace["callSites"])
    expect(threads == sorted(f"site-{i}" for i in range(12)),
           f"call sites recorded from threads {threads}, expected site-0 ... site-11")
    expect(result["trace_kernels"] == 12, f"{result['trace_kernels']} kernels recorded, expected 12")
    return result


def check_reload(runner: Runner, work: Path) -> dict:
    import numpy as np

    source_dir = work / "app"
    source_dir.mkdir(exist_ok=True)
    args = ["--dir", str(source_dir)]
    result = record_compile_serve(runner, work, "reload", [*args, "--edit-to", "3.0"], served=2)
    result.pop("trace")
    with np.load(work / "stock.npz") as stock:
        x = np.linspace(-2.0, 2.0, 1024, dtype=np.float32)
        expect(np.allclose(stock["before"], x * 2.0 + 1.0), "stock: wrong result before the reload")
        expect(np.allclose(stock["after"], x * 3.0 + 1.0), "stock: the reload did not take effect")

    # Edited to what the recording never saw: that kernel must miss, name the
    # file, compile, and give stock's result.
    edited = [*args, "--edit-to", "4.0"]
    stock_edited = runner.app("reload", edited, work / "stock-edited.npz")
    served = runner.app("reload", edited, work / "served-edited.npz",
                        {"SLANGPY_KERNELS": str(work / "kernels.sprk")})
    expect_counts(served, 1, 1, "reload edited")
    misses = served["summary"].get("misses", [])
    expect(len(misses) == 1 and "reloaded.slang" in misses[0]["reason"],
           f"the edited kernel's miss does not name reloaded.slang: {misses}")
    module_misses = served["summary"].get("moduleMisses", [])
    expect(any("reloaded.slang" in miss["reason"] for miss in module_misses),
           f"the edited module's miss does not name reloaded.slang: {module_misses}")
    expect(outputs_identical(work / "stock-edited.npz", work / "served-edited.npz"),
           "edited and reloaded: served outputs differ from stock")
    result.update(stock_edited=stock_edited, served_edited=served)
    return result


def check_recorders(runner: Runner, work: Path) -> dict:
    trace = work / "trace.capnp"
    env = clean_environment(SLANGPY_RECORD=str(trace), CUDA_CACHE_PATH=tempfile.mkdtemp(prefix="cuda-cache-"))
    victim = RECORDERS - 1
    processes = []
    for index in range(RECORDERS):
        extra = ["--forever"] if index == victim else []
        processes.append(subprocess.Popen(
            [sys.executable, str(APP), "worker", "--index", str(index), *extra, "--out", str(work / f"w{index}.npz")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    # Killed while it records: after its first new call site, while it builds more.
    built = 0
    for line in processes[victim].stdout:
        built += line.strip() == "built"
        if built >= 2:
            break
    processes[victim].send_signal(signal.SIGKILL)
    processes[victim].wait()
    expect(built >= 2, f"the recorder to kill stopped after {built} new call sites, before it was killed")
    codes = [p.wait(timeout=300) for i, p in enumerate(processes) if i != victim]
    expect(all(code == 0 for code in codes), f"a surviving recorder failed: exit codes {codes}")
    contents = runner.inspect(trace)
    expect(contents["undecodableRecords"] == 0, f"undecodable records: {contents['undecodableRecords']}")
    expect(len(contents["processes"]) == RECORDERS, f"{len(contents['processes'])} processes in the trace")
    compiled = runner.compile(trace, work / "kernels.sprk", check=False)
    served = {}
    for index in range(RECORDERS):
        if index == victim:
            continue
        run = runner.app("worker", ["--index", str(index)], work / f"served{index}.npz", strict(work / "kernels.sprk"))
        expect_counts(run, 2, 0, f"recorder {index}")
        expect(outputs_identical(work / f"w{index}.npz", work / f"served{index}.npz"),
               f"recorder {index}: served outputs differ from recorded")
        served[index] = run["summary"]
    return {"trace_call_sites": len(contents["callSites"]), "trace_kernels": len(contents["kernels"]),
            "damage": contents["damage"], "victim_call_sites_built": built,
            "compile_exit": compiled.returncode, "compile_tail": compiled.stderr[-1500:], "served": served}


def check_damaged_module(runner: Runner, work: Path) -> dict:
    result = record_compile_serve(runner, work, "devices", [], served=8)
    result.pop("trace")
    archive = runner.spreplay("inspect", str(work / "kernels.sprk"), "--json")
    archived = json.loads(archive.stdout)["modules"]
    modules = [m for m in archived if m["name"] == "slangpy" or m["requestedName"] in ("slangpy", "slangpy.slang")]
    expect(modules, f"the archive holds no IR of slangpy's library: {[m['name'] for m in archived]}")
    data = bytearray((work / "kernels.sprk").read_bytes())
    for module in modules:
        data[module["irOffset"] + module["irBytes"] // 2] ^= 0xFF
    damaged = work / "damaged.sprk"
    damaged.write_bytes(bytes(data))
    verify = runner.spreplay("verify", str(damaged), check=False)
    # The library is named as the app first asked for it ("slangpy" or "slangpy.slang").
    named = any(f"the IR of module '{module['name']}'" in verify.stderr for module in modules)
    expect(verify.returncode == 1 and named,
           f"spreplay verify did not report the damage ({verify.returncode}): {verify.stderr[-800:]}")
    # Kernels strict, modules not: the damaged library loads from source, and
    # every kernel, whose blobs are intact, is still served under its key.
    run = runner.app("devices", [], work / "damaged.npz",
                     {"SLANGPY_KERNELS": str(damaged), "SLANGPY_KERNELS_STRICT": "1"})
    expect_counts(run, 8, 0, "damaged slangpy IR")
    module_misses = run["summary"].get("moduleMisses", [])
    expect(any("fails its checksum" in miss["reason"] for miss in module_misses),
           f"no module miss names the damage: {module_misses}")
    expect(outputs_identical(work / "stock.npz", work / "damaged.npz"), "served outputs differ from stock")
    result["damaged"] = run
    return result


def check_compute_cache(runner: Runner, work: Path) -> dict:
    runner.app("devices", [], work / "record.npz", {"SLANGPY_RECORD": str(work / "trace.capnp")})
    cache_bytes = {}
    for name, env in (("default", {}), ("user-enabled", {"CUDA_CACHE_DISABLE": "0"})):
        cache = Path(tempfile.mkdtemp(prefix="cuda-cache-"))
        runner.compile(work / "trace.capnp", work / f"{name}.sprk",
                       env={"CUDA_CACHE_PATH": str(cache), "XDG_CACHE_HOME": tempfile.mkdtemp(), **env})
        cache_bytes[name] = sum(path.stat().st_size for path in cache.rglob("*") if path.is_file())
    expect(cache_bytes["default"] == 0, f"spreplay compile wrote {cache_bytes['default']} bytes into the CUDA cache")
    # Else the check above proves nothing: NVRTC did not use the cache anyway.
    expect(cache_bytes["user-enabled"] > 0, "with CUDA_CACHE_DISABLE=0 NVRTC wrote nothing into the CUDA cache")
    expect((work / "default.sprk").read_bytes() == (work / "user-enabled.sprk").read_bytes(),
           "the archive changed with the CUDA cache turned on")
    return {"cuda_cache_bytes": cache_bytes}


CHECKS: dict[str, Callable[[Runner, Path], dict]] = {
    "devices": check_devices,
    "torch-devices": check_torch_devices,
    "threads": check_threads,
    "reload": check_reload,
    "recorders": check_recorders,
    "damaged-module": check_damaged_module,
    "compute-cache": check_compute_cache,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checks", default=",".join(CHECKS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runner = Runner(args.out)
    results = {}
    for name in args.checks.split(","):
        work = args.out / name
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        try:
            result = CHECKS[name](runner, work)
            result["passed"] = True
        except CheckFailed as failure:
            result = {"passed": False, "failure": str(failure)}
        result["seconds"] = round(time.perf_counter() - start, 1)
        results[name] = result
        verdict = "skipped" if "skipped" in result else ("PASS" if result["passed"] else "FAIL")
        print(f"{name}: {verdict} ({result['seconds']} s){'' if result['passed'] else ': ' + result['failure']}",
              flush=True)
    (args.out / "hardening.json").write_text(json.dumps(results, indent=2))
    return 0 if all(r["passed"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
