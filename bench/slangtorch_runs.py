# SPDX-License-Identifier: Apache-2.0
"""slangtorch on the synthetic workload's kernels: a cold build, then fresh
processes that find slangtorch's build cache warm, for each way of calling
`loadModule` in VARIANTS."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "bench" / "workloads" / "slangtorch" / "app.py"
KERNELS = APP.parent / "kernels.slang"


def _run(kernels: Path, repeat: int, base_env: dict[str, str], flags: list[str]) -> dict[str, Any]:
    env = {**base_env, "SPREPLAY_BENCH_T0": repr(time.time())}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(APP), str(kernels), "--repeat", str(repeat), *flags], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    timing = [line.split(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("slangtorch-timing: ")]
    if proc.returncode != 0 or len(timing) != 1:
        raise RuntimeError(f"exit {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    try:
        return {**json.loads(timing[0]), "wall_s": wall}
    except ValueError as error:
        raise RuntimeError(f"unreadable timing line {timing[0]!r}: {error}") from error


def _nvcc_found(env: dict[str, str]) -> bool:
    """Where torch's extension builder looks for nvcc: CUDA_HOME, else PATH."""
    cuda_home = env.get("CUDA_HOME")
    if cuda_home:
        return (Path(cuda_home) / "bin" / "nvcc").exists()
    return shutil.which("nvcc", path=env.get("PATH")) is not None


# How slangtorch is asked to load the module. slangc's CUDA output carries
# `#line 1 "token paste"` where Slang's core module generates code through a
# token-pasting macro (the derivatives of tanh, exp and log here); nvcc lists
# that name as a header, ninja finds no such file, and slangtorch's ninja check
# of its cache rebuilds the extension in every new process. Without line
# directives, or without that check, the cached extension is loaded.
VARIANTS = {
    "default": [],
    "no_line_directives": ["--no-line-directives"],
    "skip_ninja_check": ["--skip-ninja-check"],
}


def _measure_variant(flags: list[str], repeat: int, env: dict[str, str], warm_runs: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="spreplay-slangtorch-"))
    kernels = work / KERNELS.name
    shutil.copy(KERNELS, kernels)
    try:
        cold = _run(kernels, repeat, env, flags)
        warm = [_run(kernels, repeat, env, flags) for _ in range(warm_runs)]
        return {"flags": flags, "cold": cold, "warm": warm}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_slangtorch(repeat: int, env: dict[str, str] | None = None, warm_runs: int = 2,
                       variants: list[str] | None = None) -> dict[str, Any]:
    """{"available": False, "reason": ...} when slangtorch cannot run here.
    Per variant: a cold build on a fresh copy of the kernels, then `warm_runs`
    fresh processes on the same copy."""
    env = dict(os.environ) if env is None else env
    if importlib.util.find_spec("slangtorch") is None or importlib.util.find_spec("torch") is None:
        return {"available": False, "reason": "slangtorch or torch is not installed"}
    if not _nvcc_found(env):
        return {"available": False, "reason": "slangtorch builds with nvcc, which is not in CUDA_HOME or on PATH"}
    measured: dict[str, Any] = {}
    for name in variants or list(VARIANTS):
        try:
            measured[name] = _measure_variant(VARIANTS[name], repeat, env, warm_runs)
        except RuntimeError as error:
            measured[name] = {"flags": VARIANTS[name], "error": str(error)}
    if all("error" in variant for variant in measured.values()):
        return {"available": False, "reason": "slangtorch run failed: " + "; ".join(
            f"{name}: {variant['error']}" for name, variant in measured.items())}
    version = subprocess.run([sys.executable, "-c", "import importlib.metadata as m; print(m.version('slangtorch'),"
                              " m.version('torch'))"], capture_output=True, text=True).stdout.split()
    return {"available": True, "slangtorch": version[0] if version else "?", "torch": version[1] if len(version) > 1
            else "?", "variants": measured}


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description="slangtorch alone; bench/cold_start.py --slangtorch runs it too")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    from app_output import clean_environment
    from cold_start import git_commit, system_info

    result = {"system": system_info(git_commit()), **measure_slangtorch(args.repeat, clean_environment(),
                                                                        variants=variants)}
    (args.out / "slangtorch.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1)[-3000:])
    failed = [name for name, variant in result.get("variants", {}).items() if "error" in variant]
    return 0 if result["available"] and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
