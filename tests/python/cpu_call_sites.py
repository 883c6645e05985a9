"""Builds real slangpy call sites on the CPU device without dispatching them.

slangpy 0.43.1's CPU device reports zero dispatch groups, so no vectorized call
can run on it; building a call site (`debug_build_call_data`) runs everything
up to the dispatch: wrapper generation, the Slang front end, link and the
recorder's hooks. Used by the tests as the app to record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import slangpy as spy

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RAW_DISPATCH_SOURCE = """
void fill(uint3 dispatchThreadID, RWStructuredBuffer<float> values) {
    values[dispatchThreadID.x] = float(dispatchThreadID.x);
}
"""


def main() -> None:
    device = spy.create_device(spy.DeviceType.cpu, include_paths=[str(SAMPLES / "generic_mlp"),
                                                                  str(SAMPLES / "autodiff")])
    elementwise = spy.Module.load_from_file(device, str(SAMPLES / "elementwise" / "elementwise.slang"))
    a = np.ones(64, np.float32)
    elementwise.add.debug_build_call_data(a, a)
    elementwise.poly3.debug_build_call_data(a, spy.float4(1, 2, 3, 4))

    mlp = spy.Module.load_from_module(device, device.load_module("mlp"))
    mlp["outer<3>"].debug_build_call_data(spy.float3(1, 2, 3), spy.float3(4, 5, 6))

    train = spy.Module.load_from_file(device, "train.slang")
    train.model_at.debug_build_call_data(spy.float4(1, 2, 3, 4), 0.5)
    train.model_at.bwds.debug_build_call_data(spy.float4(1, 2, 3, 4), spy.diffPair(0.5, 0.0), 1.0)

    # A raw dispatch (`function.dispatch(...)`) builds a DispatchData.
    from slangpy.core.dispatchdata import DispatchData

    raw = spy.Module(device.load_module_from_source("rawdispatch", RAW_DISPATCH_SOURCE))
    values = device.create_buffer(element_count=64, struct_size=4,
                                  usage=spy.BufferUsage.unordered_access | spy.BufferUsage.shader_resource)
    DispatchData(raw.fill, values=values)
    print("built", flush=True)
    if len(sys.argv) > 1 and sys.argv[1] == "--hang":  # for the kill test
        import time

        time.sleep(600)


if __name__ == "__main__":
    main()
