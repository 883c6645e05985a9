"""Records every sample on a CUDA GPU and measures what recording costs.

For each sample, in fresh processes with fresh CUDA caches:
  stock   the app as is;
  record  the same app with SLANGPY_RECORD set.
Both run every call site `--repeat` times, so the first pass shows the cold
cost (kernel compiles included) and later passes the steady-state dispatch
cost. Outputs must be bit-identical between the two. Writes the traces (the
test fixtures the compiler's CI tests use) and a JSON summary.

    python bench/record_overhead.py --out DIR [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from app_output import SAMPLE_RUNS, TIMING, clean_environment, outputs_identical, sample_app  # noqa: E402


def run_sample(name: str, out_npz: Path, repeat: int, env: dict[str, str]) -> dict:
    folder, flags = SAMPLE_RUNS[name]
    app = sample_app(folder)
    cache = tempfile.mkdtemp(prefix="cuda-cache-")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(app), *flags, "--repeat", str(repeat), "--out", str(out_npz)],
        env=clean_environment(CUDA_CACHE_PATH=cache, SPREPLAY_SAMPLE_DEVICE="cuda", **env),
        cwd=app.parent,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    match = TIMING.search(proc.stdout)
    return {
        "wall_s": wall,
        "setup_s": float(match["setup"]) if match else None,
        "first_pass_s": float(match["first"]) if match else None,
        "steady_ms_per_pass": float(match["steady"]) if match and match["steady"] else None,
        "stderr_tail": proc.stderr[-600:],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    args.out = args.out.resolve()  # the apps run in their own folders
    traces = args.out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spreplay-record-"))
    results = {}
    for name in SAMPLE_RUNS:
        trace = traces / f"{name}.capnp"
        trace.unlink(missing_ok=True)
        stock = run_sample(name, work / f"{name}-stock.npz", args.repeat, {})
        recorded = run_sample(name, work / f"{name}-record.npz", args.repeat, {"SLANGPY_RECORD": str(trace)})
        inspect = subprocess.run([sys.executable, "-m", "spreplay", "inspect", str(trace), "--json"],
                                 env=clean_environment(), capture_output=True, text=True, check=True)
        kernels = len(json.loads(inspect.stdout)["kernels"])
        results[name] = {
            "stock": stock,
            "record": recorded,
            "outputs_identical": outputs_identical(work / f"{name}-stock.npz", work / f"{name}-record.npz"),
            "trace_bytes": trace.stat().st_size,
            "kernels": kernels,
            "trace_bytes_per_kernel": trace.stat().st_size / max(kernels, 1),
            "inspect": inspect.stdout + inspect.stderr,
        }
        print(json.dumps({k: v for k, v in results[name].items() if k != "inspect"}, indent=2), flush=True)
        print(results[name]["inspect"], flush=True)
    (args.out / "record_overhead.json").write_text(json.dumps(results, indent=2))
    return 0 if all(r["outputs_identical"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
