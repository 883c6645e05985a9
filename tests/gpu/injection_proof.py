"""Proves that an unmodified slangpy loads a kernel compiled outside the process.

One real call site runs four times, each in a fresh process:
  stock     hooks installed, nothing served: slangpy compiles; we keep the PTX
            Slang produced and the kernel key the hooks computed.
  (offline) ptxas and fatbinary turn that PTX into a fatbin with SASS for the
            GPU plus the PTX, exactly as `spreplay compile` packs kernels.
  warm-rhi  a throwaway device fills a fresh CUDA cache with slang-rhi's own
            kernels, which slang-rhi compiles with NVRTC at device creation.
  served    the fatbin is registered under the key and the call site runs with
            CUDA_DISABLE_PTX_JIT=1: any PTX JIT would fail the load.
  control   the same, with nothing served: must fail, which shows that the
            served run could not have JIT-compiled.
Results must be bit-identical to stock, and the compilation report must show no
Slang or downstream compile time for the served kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = """
float fused(float a, float b, float scale) { return a * scale + sin(b) * b; }
"""


def run_call_site(out_dir: Path, serve: bool) -> dict:
    import spreplay

    compiled: list[dict] = []
    native = spreplay.install_hooks(verbose=True)

    from spreplay._native import CompileCallback

    def on_compile(key, entry_point, code, size, seconds):  # noqa: ANN001
        import ctypes

        data = ctypes.string_at(code, size)
        compiled.append({"key": key.decode(), "size": size, "seconds": seconds})
        (out_dir / f"{key.decode() or 'unkeyed'}.ptx").write_bytes(data)

    callback = CompileCallback(on_compile)
    native.on_compile(callback)
    if serve:
        manifest = json.loads((out_dir / "stock.json").read_text())
        native.add_kernel(manifest["key"], (out_dir / "kernel.fatbin").read_bytes())

    import numpy as np
    import slangpy as spy

    t0 = time.perf_counter()
    device = spy.create_device(spy.DeviceType.cuda, enable_compilation_reports=True)
    t1 = time.perf_counter()
    module = spy.Module(device.load_module_from_source("injection_proof", SOURCE))
    rng = np.random.default_rng(7)
    a = rng.standard_normal(100_000, dtype=np.float32)
    b = rng.standard_normal(100_000, dtype=np.float32)
    result = module.fused(a, b, 0.5, _result="numpy")
    t2 = time.perf_counter()
    # slangpy 0.42 has no compilation reports: the hooks' own count of Slang
    # codegen calls, and the control below, stand in for them.
    reports = [
        {k: ep[k] for k in ("name", "compile_time", "compile_slang_time", "compile_downstream_time", "is_cached")}
        for report in device.get_compilation_reports()
        for ep in report["entry_point_reports"]
    ] if hasattr(device, "get_compilation_reports") else None
    np.save(out_dir / ("served.npy" if serve else "stock.npy"), result)
    summary = {
        "device": device.info.adapter_name,
        "device_ready_s": t1 - t0,
        "first_result_s": t2 - t1,
        "compiled": compiled,
        "counts": spreplay.summary(),
        "reports": reports,
    }
    if not serve and compiled:
        summary["key"] = compiled[-1]["key"]
    (out_dir / ("served.json" if serve else "stock.json")).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return summary


def warm_rhi() -> None:
    import slangpy as spy

    spy.create_device(spy.DeviceType.cuda).close()


def build_fatbin(out_dir: Path, key: str, arch: str) -> None:
    # Slang's PTX blob ends with a NUL terminator, which ptxas rejects.
    ptx = out_dir / "kernel.ptx"
    ptx.write_bytes((out_dir / f"{key}.ptx").read_bytes().rstrip(b"\0"))
    cubin = out_dir / "kernel.cubin"
    subprocess.run(["ptxas", f"-arch=sm_{arch}", str(ptx), "-o", str(cubin)], check=True)
    subprocess.run(
        [
            "fatbinary",
            "--create", str(out_dir / "kernel.fatbin"),
            f"--image3=kind=elf,sm={arch},file={cubin}",
            f"--image3=kind=ptx,sm=75,file={ptx}",
        ],
        check=True,
    )


def phase(name: str, out_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    print(f"--- {name}", flush=True)
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--out", str(out_dir)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    print(proc.stdout[-6000:], proc.stderr[-3000:], sep="\n", flush=True)
    return proc


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="spreplay-proof-")))
    parser.add_argument("--arch", default="90")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.phase == "stock":
        run_call_site(args.out, serve=False)
        return 0
    if args.phase == "served":
        run_call_site(args.out, serve=True)
        return 0
    if args.phase == "warm-rhi":
        warm_rhi()
        return 0

    stock_cache = tempfile.mkdtemp(prefix="cuda-cache-stock-")
    served_cache = tempfile.mkdtemp(prefix="cuda-cache-served-")
    assert phase("stock", args.out, {"CUDA_CACHE_PATH": stock_cache}).returncode == 0
    stock = json.loads((args.out / "stock.json").read_text())
    assert stock["counts"]["compiled"] == 1 and stock["key"], stock
    build_fatbin(args.out, stock["key"], args.arch)
    assert phase("warm-rhi", args.out, {"CUDA_CACHE_PATH": served_cache}).returncode == 0
    no_jit = {"CUDA_CACHE_PATH": served_cache, "CUDA_DISABLE_PTX_JIT": "1"}
    served_proc = phase("served", args.out, no_jit)
    assert served_proc.returncode == 0, "served run failed"
    served = json.loads((args.out / "served.json").read_text())

    import numpy as np

    identical = np.array_equal(np.load(args.out / "stock.npy"), np.load(args.out / "served.npy"))
    control = subprocess.run(
        [sys.executable, "-c", "import slangpy as spy, numpy as np\n"
         "d = spy.create_device(spy.DeviceType.cuda)\n"
         f"m = spy.Module(d.load_module_from_source('injection_proof', '''{SOURCE}'''))\n"
         "m.fused(np.ones(8, np.float32), np.ones(8, np.float32), 0.5, _result='numpy')\n"],
        env={**os.environ, **no_jit}, capture_output=True, text=True)
    verdict = {
        "results_identical": bool(identical),
        "served_counts": served["counts"],
        "served_reports": served["reports"],
        "stock_reports": stock["reports"],
        "stock_first_result_s": stock["first_result_s"],
        "served_first_result_s": served["first_result_s"],
        "control_without_kernel_failed": control.returncode != 0,
        "control_error_tail": control.stderr.strip().splitlines()[-3:] if control.stderr else [],
    }
    print(json.dumps(verdict, indent=2))
    (args.out / "verdict.json").write_text(json.dumps(verdict, indent=2))
    ok = (
        identical
        and served["counts"]["served"] == 1
        and served["counts"]["compiled"] == 0
        and (served["reports"] is None
             or all(r["compile_slang_time"] == 0 and r["compile_downstream_time"] == 0 for r in served["reports"]))
        and verdict["control_without_kernel_failed"]
    )
    print("INJECTION PROOF:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
