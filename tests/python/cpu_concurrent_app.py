"""Builds call sites concurrently on slangpy's CPU device, for the recording
tests: from many threads of one process, or as one of many processes.

    python cpu_concurrent_app.py threads [--threads N]
    python cpu_concurrent_app.py worker --index I [--forever]

Like cpu_call_sites.py it builds call sites without dispatching them (the CPU
device dispatches nothing). The functions are tests/gpu/apps/hardening.slang's,
which the GPU checks run for real.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

import numpy as np
import slangpy as spy

MODULE = Path(__file__).resolve().parents[1] / "gpu" / "apps" / "hardening.slang"
FUNCTIONS = 12
INPUT = np.linspace(-2.0, 2.0, 64, dtype=np.float32)


def build(module: spy.Module, function: int, values: np.ndarray = INPUT) -> None:
    module[f"f{function}"].debug_build_call_data(values)


def threads(module: spy.Module, count: int) -> None:
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait()
            build(module, index % FUNCTIONS)
        except BaseException as error:  # re-raised by the main thread
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,), name=f"site-{i}") for i in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def worker(module: spy.Module, index: int, forever: bool) -> None:
    build(module, index % FUNCTIONS)
    build(module, (index + 5) % FUNCTIONS)
    if not forever:
        return
    print("ready", flush=True)
    for dimensions in range(2, 5):
        for function in range(FUNCTIONS):
            build(module, function, INPUT.reshape((2,) * (dimensions - 1) + (-1,)))
            print("built", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", choices=["threads", "worker"])
    parser.add_argument("--threads", type=int, default=FUNCTIONS)
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--forever", action="store_true")
    args = parser.parse_args()
    module = spy.Module.load_from_file(spy.create_device(spy.DeviceType.cpu), str(MODULE))
    if args.app == "threads":
        threads(module, args.threads)
    else:
        worker(module, args.index, args.forever)
    print("done", flush=True)


if __name__ == "__main__":
    main()
