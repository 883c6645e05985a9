# SPDX-License-Identifier: Apache-2.0
"""The app of the multi-GPU check (tests/gpu/multi_gpu.py): data-parallel
training with PyTorch's NCCL process group, whose forward pass is slangpy.

    torchrun --nproc-per-node N ddp_app.py --out OUT.npz [--steps K]
        [--cache-dir DIR] [--hold DIR [--victim RANK]]
    python ddp_app.py --device-only
        (LOCAL_RANK selects the GPU) create the rank's slangpy device and exit

Every rank (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT as
torchrun sets them; without WORLD_SIZE it trains alone, without NCCL) takes
GPU LOCAL_RANK, makes a slangpy device that shares PyTorch's CUDA context
there (create_torch_device) and trains a two-stage model of ddp.slang on its
own shard of one fixed data set for K steps: both stages are slangpy calls on
torch tensors that require gradients, so loss.backward() runs their backward
kernels through slangpy's autograd bridge; then the gradients are averaged
over the ranks with an NCCL all-reduce and applied by SGD. The first step's
gradients are checked against PyTorch's own autograd of the same model.

Each rank writes OUT with ".rank<R>" before the suffix (OUT.rank0.npz, ...):
its losses, the losses averaged over the ranks, the final parameters and the
trained model's predictions. It prints, after its first step,
"timing <json>": seconds from device creation to the end of the first step
(device_to_first_step_s; NCCL's set-up happens before, and is not counted),
from the start of the process (start_to_first_step_s), and the wall-clock end
of the step (first_step_end_unix); as its last line "summary <json>":
spreplay's summary of the process (its "active" is false when spreplay does
not serve) with the rank.

--cache-dir DIR gives the device slangpy's shader and module caches under
DIR/rank<R>. --hold DIR is for the killed-rank check: after the first step
each rank creates DIR/rank<R>.first-step; rank --victim then builds one new
call site after another (DIR/rank<R>.built<D> after each) until it is
killed, and the others wait for DIR/go, then finish alone (no further
collective: a peer is gone): the predictions, the outputs, the summary,
DIR/rank<R>.done; rank 0 exits once every other survivor is done.
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()  # before the imports: torch's alone take seconds

import argparse  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import slangpy as spy  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

HERE = Path(__file__).resolve().parent
# Samples per rank, whatever the number of ranks: every rank's call sites then
# have the same shapes, in every world size.
BATCH = 4096
EVAL_POINTS = 256
LEARNING_RATE = 0.1
INITIAL_W = (0.5, 0.0, -0.5, 0.1)
INITIAL_V = (0.3, -0.2, 0.0)
DATA_SEED = 20261202
POLL_S = 0.05
HOLD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Rank:
    rank: int
    world: int
    local: int


def rank_from_environment() -> Rank:
    """This process's place in the job, from what torchrun sets."""
    env = os.environ
    return Rank(int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1")), int(env.get("LOCAL_RANK", "0")))


def rank_output(out: Path, rank: int) -> Path:
    """Where rank `rank` writes its outputs (multi_gpu.py reads them there)."""
    return out.with_name(f"{out.stem}.rank{rank}{out.suffix}")


def select_gpu(rank: Rank) -> None:
    torch.cuda.set_device(rank.local)
    # A first allocation creates the GPU's primary context and makes it
    # current on this thread: that is the context create_torch_device shares.
    torch.zeros(1, device="cuda")
    # Backward passes on this thread, as slangpy's own torch tests run them
    # (slangpy/testing/helpers.py get_torch_device).
    torch.autograd.grad_mode.set_multithreading_enabled(False)


def init_distributed(rank: Rank) -> bool:
    """Joins the NCCL process group when launched as one of several ranks."""
    if "WORLD_SIZE" not in os.environ:
        return False
    options = {}
    if "device_id" in inspect.signature(dist.init_process_group).parameters:
        options["device_id"] = torch.device("cuda", rank.local)
    dist.init_process_group("nccl", **options)
    # NCCL finishes setting up its communicator at the first collective: done
    # here, so that the time to the first step is slangpy's and the step's.
    warm = torch.zeros(1, device="cuda")
    dist.all_reduce(warm)
    torch.cuda.synchronize()
    return True


def create_device(local_rank: int, cache_dir: Path | None, rank: int) -> spy.Device:
    if cache_dir is None:
        device = spy.create_torch_device(type=spy.DeviceType.cuda, torch_device=local_rank)
    else:
        device = device_with_caches(cache_dir / f"rank{rank}")
    check_device_ordinal(device, local_rank)
    return device


def device_with_caches(cache_dir: Path) -> spy.Device:
    """What create_torch_device builds (slangpy/core/utils.py: the current
    CUDA context's handles, slangpy's shader path), plus slangpy's shader and
    module caches, which it does not take."""
    shaders, modules = cache_dir / "shaders", cache_dir / "modules"
    for path in (shaders, modules):
        path.mkdir(parents=True, exist_ok=True)
    handles = spy.get_cuda_current_context_native_handles()
    return spy.Device(type=spy.DeviceType.cuda, compiler_options={"include_paths": [spy.SHADER_PATH]},
                      existing_device_handles=handles, shader_cache_path=str(shaders), module_cache_path=str(modules))


def check_device_ordinal(device: spy.Device, local_rank: int) -> None:
    """The device must be on this rank's GPU: a context taken from the wrong
    GPU would still run, through peer access, and measure something else."""
    ordinals = [handle.value for handle in device.native_handles if handle.type == spy.NativeHandleType.CUdevice]
    if ordinals and ordinals[0] != local_rank:
        raise RuntimeError(f"the slangpy device is on GPU {ordinals[0]}, not on LOCAL_RANK {local_rank}'s")


def shard(rank: Rank) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's BATCH samples of one fixed data set: y = 0.8 sin(2x) + 0.3x + noise."""
    rng = np.random.default_rng(DATA_SEED)
    total = BATCH * rank.world
    x = rng.uniform(-2.0, 2.0, total).astype(np.float32)
    y = (0.8 * np.sin(2.0 * x) + 0.3 * x + 0.05 * rng.standard_normal(total)).astype(np.float32)
    part = slice(rank.rank * BATCH, (rank.rank + 1) * BATCH)
    return torch.from_numpy(x[part]).cuda(), torch.from_numpy(y[part]).cuda()


def initial_parameters(distributed: bool) -> list[torch.Tensor]:
    w = torch.tensor(INITIAL_W, dtype=torch.float32, device="cuda", requires_grad=True)
    v = torch.tensor(INITIAL_V, dtype=torch.float32, device="cuda", requires_grad=True)
    if distributed:
        # As DistributedDataParallel starts: every rank from rank 0's parameters.
        with torch.no_grad():
            for parameter in (w, v):
                dist.broadcast(parameter, src=0)
    return [w, v]


def slangpy_loss(module: spy.Module, w: torch.Tensor, v: torch.Tensor, x: torch.Tensor,
                 y: torch.Tensor) -> torch.Tensor:
    """Mean squared error of the batch, both stages in Slang."""
    # One row of parameters per sample: every thread of the backward kernels
    # then writes a gradient of its own and torch sums them in a fixed order,
    # where a broadcast parameter would gather them with atomics in whatever
    # order the threads run, which is not reproducible bit for bit.
    w_rows = w.expand(len(x), 4).contiguous()
    v_rows = v.expand(len(x), 3).contiguous()
    h = module.hidden(w_rows, x)
    return module.sample_loss(v_rows, h, y).mean()


def torch_loss(w: torch.Tensor, v: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The same loss in PyTorch alone, the reference for slangpy's gradients."""
    h0 = torch.tanh(w[0] * x + w[1])
    h1 = torch.tanh(w[2] * x + w[3])
    return ((v[0] * h0 + v[1] * h1 + v[2] - y) ** 2).mean()


def check_against_torch(parameters: list[torch.Tensor], gradients: list[torch.Tensor], loss: torch.Tensor,
                        x: torch.Tensor, y: torch.Tensor) -> None:
    leaves = [p.detach().clone().requires_grad_(True) for p in parameters]
    reference = torch_loss(*leaves, x, y)
    expected = torch.autograd.grad(reference, leaves)
    pairs = [("loss", loss.detach(), reference.detach()), ("dw", gradients[0], expected[0]),
             ("dv", gradients[1], expected[1])]
    for name, got, want in pairs:
        if not torch.allclose(got, want, rtol=1e-3, atol=1e-5):
            raise RuntimeError(f"slangpy's {name} {got.tolist()} differs from PyTorch's {want.tolist()}")


def average_gradients(parameters: list[torch.Tensor], world: int) -> None:
    flat = torch.cat([p.grad for p in parameters])
    dist.all_reduce(flat)
    flat /= world
    offset = 0
    for p in parameters:
        p.grad.copy_(flat[offset:offset + p.numel()])
        offset += p.numel()


def sgd_step(parameters: list[torch.Tensor]) -> None:
    with torch.no_grad():
        for p in parameters:
            p -= LEARNING_RATE * p.grad
            p.grad = None


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + HOLD_TIMEOUT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {HOLD_TIMEOUT_S:.0f} s")
        time.sleep(POLL_S)


def record_until_killed(module: spy.Module, x: torch.Tensor, hold: Path, rank: int) -> None:
    """The victim of the killed-rank check: new call sites (one more
    dimension each) one after another, so that the kill lands while it records."""
    for dimensions in range(2, 7):
        module.probe(x.reshape((2,) * (dimensions - 1) + (-1,)))
        torch.cuda.synchronize()
        (hold / f"rank{rank}.built{dimensions}").touch()
    time.sleep(HOLD_TIMEOUT_S)
    print(f"rank {rank} was not killed within {HOLD_TIMEOUT_S:.0f} s", file=sys.stderr, flush=True)
    os._exit(3)


def leave_held_job(hold: Path, rank: Rank, victim: int) -> None:
    """Ends a rank of a held job without NCCL's teardown, which could wait for
    the killed peer forever. Rank 0 leaves last: it serves the job's store,
    which the others' process groups may still poll."""
    (hold / f"rank{rank.rank}.done").touch()
    if rank.rank == 0:
        for other in range(1, rank.world):
            if other != victim:
                wait_for(hold / f"rank{other}.done")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def spreplay_summary() -> dict:
    try:
        import spreplay
    except ImportError:
        return {"active": False}
    return spreplay.summary()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--hold", type=Path)
    parser.add_argument("--victim", type=int, default=-1)
    parser.add_argument("--device-only", action="store_true")
    args = parser.parse_args()
    if not args.device_only and args.out is None:
        parser.error("--out is required")
    if args.steps < 1:
        parser.error("--steps must be 1 or more")
    return args


def training_step(module: spy.Module, parameters: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                  rank: Rank, distributed: bool) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """One step of data-parallel SGD: this rank's loss, the loss averaged over
    the ranks, and this rank's gradients before they were averaged."""
    loss = slangpy_loss(module, *parameters, x, y)
    loss.backward()
    local_gradients = [p.grad.clone() for p in parameters]
    global_loss = loss.detach().clone()
    if distributed:
        average_gradients(parameters, rank.world)
        dist.all_reduce(global_loss)
        global_loss /= rank.world
    sgd_step(parameters)
    return loss.detach(), global_loss, local_gradients


def print_first_step(rank: Rank, device_start: float) -> None:
    torch.cuda.synchronize()
    end = time.perf_counter()
    print("timing " + json.dumps({
        "rank": rank.rank, "world": rank.world,
        "device_to_first_step_s": round(end - device_start, 6),
        "start_to_first_step_s": round(end - PROCESS_START, 6),
        "start_to_device_s": round(device_start - PROCESS_START, 6),
        "first_step_end_unix": time.time()}), flush=True)


def hold_after_first_step(args: argparse.Namespace, module: spy.Module, x: torch.Tensor, rank: Rank) -> None:
    (args.hold / f"rank{rank.rank}.first-step").touch()
    if rank.rank == args.victim:
        record_until_killed(module, x, args.hold, rank.rank)
    wait_for(args.hold / "go")


def train(args: argparse.Namespace, rank: Rank, distributed: bool) -> bool:
    """The job's training and outputs; True when it was held (a peer may be gone)."""
    device_start = time.perf_counter()
    device = create_device(rank.local, args.cache_dir, rank.rank)
    module = spy.Module.load_from_file(device, str(HERE / "ddp.slang"))
    x, y = shard(rank)
    parameters = initial_parameters(distributed)
    losses, global_losses = [], []
    for step in range(args.steps):
        before = [p.detach().clone() for p in parameters]
        loss, global_loss, gradients = training_step(module, parameters, x, y, rank, distributed)
        losses.append(loss)
        global_losses.append(global_loss)
        if step == 0:
            print_first_step(rank, device_start)
            check_against_torch(before, gradients, loss, x, y)
            if args.hold is not None:
                hold_after_first_step(args, module, x, rank)
                break
    x_eval = torch.linspace(-2.0, 2.0, EVAL_POINTS, device="cuda")
    w, v = (p.detach() for p in parameters)
    predictions = module.predict(w, v, x_eval)
    np.savez(rank_output(args.out, rank.rank), losses=torch.stack(losses).cpu().numpy(),
             global_losses=torch.stack(global_losses).cpu().numpy(), w=w.cpu().numpy(), v=v.cpu().numpy(),
             predictions=predictions.cpu().numpy())
    return args.hold is not None


def main() -> int:
    args = parse_args()
    rank = rank_from_environment()
    select_gpu(rank)
    if args.device_only:
        create_device(rank.local, args.cache_dir, rank.rank).close()
        return 0
    distributed = init_distributed(rank)
    held = train(args, rank, distributed)
    print("summary " + json.dumps({**spreplay_summary(), "rank": rank.rank}), flush=True)
    if held:
        leave_held_job(args.hold, rank, args.victim)
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
