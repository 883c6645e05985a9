# SPDX-License-Identifier: Apache-2.0
"""The apps of the GPU hardening checks (tests/gpu/hardening.py): plain slangpy
programs that run unmodified under spreplay, each in one of the ways
production apps stress it.

    python hardening_app.py devices [--torch] --out OUT.npz
        two CUDA devices in one process (with --torch, the first one shares
        PyTorch's context through create_torch_device), four call sites each
    python hardening_app.py threads [--threads N] --out OUT.npz
        N call sites (default 12) built at once from N threads on one device
    python hardening_app.py reload --dir DIR --edit-to FACTOR --out OUT.npz
        a module copied to DIR is called, edited to scale by FACTOR, hot
        reloaded with Device.reload_all_programs, and called again
    python hardening_app.py worker --index I [--forever] --out OUT.npz
        one of several processes recording into one trace: two call sites;
        with --forever it then keeps building new call sites until killed

Every app prints "ready" once its first results are in, and as its last line
"summary <json>": spreplay's summary of the process (its "active" is false
when spreplay does not serve).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import slangpy as spy

HERE = Path(__file__).resolve().parent
FUNCTIONS = 12  # f0 ... f11 in hardening.slang
INPUT = np.linspace(-2.0, 2.0, 1024, dtype=np.float32)
RELOADED_SOURCE = "float scaled(float x) {{ return x * {factor} + 1.0; }}\n"


def load(device: spy.Device) -> spy.Module:
    return spy.Module.load_from_file(device, str(HERE / "hardening.slang"))


def call(module: spy.Module, function: str, values: np.ndarray = INPUT) -> np.ndarray:
    return module[function](values, _result="numpy")


def run_devices(args: argparse.Namespace) -> dict[str, np.ndarray]:
    first = (spy.create_torch_device(type=spy.DeviceType.cuda) if args.torch
             else spy.create_device(spy.DeviceType.cuda))
    devices = [first, spy.create_device(spy.DeviceType.cuda)]
    outputs = {}
    for index, device in enumerate(devices):
        module = load(device)
        for function in ("f0", "f1", "f2", "f3"):
            outputs[f"device{index}_{function}"] = call(module, function)
    return outputs


def make_context_current(device: spy.Device) -> None:
    """slang-rhi allocates through the CUDA driver on the calling thread, which
    needs the device's context current there: an app's own threads set it,
    with slangpy as without spreplay."""
    import ctypes

    context = next(handle.value for handle in device.native_handles
                   if str(handle.type).endswith("CUcontext"))
    result = ctypes.CDLL("libcuda.so.1").cuCtxSetCurrent(ctypes.c_void_p(context))
    if result != 0:
        raise RuntimeError(f"cuCtxSetCurrent failed with CUDA error {result}")


def run_threads(args: argparse.Namespace) -> dict[str, np.ndarray]:
    device = spy.create_device(spy.DeviceType.cuda)
    module = load(device)
    start = threading.Barrier(args.threads)
    outputs: dict[str, np.ndarray] = {}
    errors: list[BaseException] = []

    def build(index: int) -> None:
        try:
            make_context_current(device)
            start.wait()  # every thread asks for its call site at once
            outputs[f"f{index}"] = call(module, f"f{index % FUNCTIONS}")
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=build, args=(i,), name=f"site-{i}") for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return outputs


def run_reload(args: argparse.Namespace) -> dict[str, np.ndarray]:
    source = Path(args.dir) / "reloaded.slang"
    source.write_text(RELOADED_SOURCE.format(factor="2.0"))
    device = spy.create_device(spy.DeviceType.cuda, enable_hot_reload=True)
    module = spy.Module.load_from_file(device, str(source))
    before = call(module, "scaled")
    source.write_text(RELOADED_SOURCE.format(factor=args.edit_to))
    device.reload_all_programs()
    after = call(module, "scaled")
    return {"before": before, "after": after}


def run_worker(args: argparse.Namespace) -> dict[str, np.ndarray]:
    module = load(spy.create_device(spy.DeviceType.cuda))
    outputs = {f"f{i}": call(module, f"f{i}") for i in (args.index % FUNCTIONS, (args.index + 5) % FUNCTIONS)}
    if args.forever:
        print("ready", flush=True)
        # New call sites, one after another, until the process is killed:
        # every dimensionality of every function is another kernel.
        for dimensions in range(2, 5):
            for function in range(FUNCTIONS):
                call(module, f"f{function}", INPUT.reshape((4,) * (dimensions - 1) + (-1,)))
                print("built", flush=True)
    return outputs


def summary() -> dict:
    import spreplay

    return spreplay.summary()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", choices=["devices", "threads", "reload", "worker"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--threads", type=int, default=FUNCTIONS)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--edit-to", default="3.0")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--forever", action="store_true")
    args = parser.parse_args()
    apps: dict[str, Callable[[argparse.Namespace], dict[str, np.ndarray]]] = {
        "devices": run_devices, "threads": run_threads, "reload": run_reload, "worker": run_worker}
    outputs = apps[args.app](args)
    if not args.forever:
        print("ready", flush=True)
    np.savez(args.out, **outputs)
    print("summary " + json.dumps(summary()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
