# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training on several GPUs of one host: recorded by every rank
into one trace, compiled once, served to every rank.

The job is tests/gpu/apps/ddp_app.py: N ranks, one GPU each, an NCCL process
group, slangpy's forward and backward kernels (through its PyTorch autograd
bridge) in every training step. Every rank is a fresh process; unless said
otherwise the harness starts them itself, with the variables torchrun sets,
so that each gets its own environment and one can be killed alone.

  stock    the job stock, twice, a fresh CUDA cache for every process: the
           reference outputs, and how far two stock runs differ
  record   the job under torchrun, every rank recording into one trace at
           once, and one rank alone into another: the trace holds all N
           ranks' processes and devices and each call site and kernel once,
           the same call sites and kernels as one rank alone (none keyed
           apart by the GPU it ran on); outputs as stock's
  compile  `spreplay compile` of that trace for the GPUs' architectures
  served   the job served from the archive, strict for kernels and modules,
           the driver's JIT disabled: every rank serves every kernel and
           compiles none; outputs as stock's
  killed   every rank recording into a new trace; after every rank's first
           step, rank N-1 records call sites of its own and is SIGKILLed
           while it does, and the others then finish; that trace compiles
           (all but, at most, the killed rank's own kernels) and serves the
           whole job strict, as in served
  timing   time to the first step, per rank and for the job (its slowest
           rank): stock with no caches, stock with every cache warm (the same
           CUDA caches and slangpy's module and shader caches again), and
           spreplay served, in one run

"As stock's": bit-identical to the first stock run wherever the two stock
runs are bit-identical; elsewhere no further from the nearer stock run than
the two stock runs are from each other.

    python tests/gpu/multi_gpu.py --out DIR [--nproc N] [--steps K] [--checks stock,record,...]

N defaults to every GPU here. With fewer than 2 GPUs it says so in one line
and exits 0. Writes DIR/multi_gpu.json and DIR/multi-gpu.md; exits non-zero
if any check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from app_output import clean_environment  # noqa: E402

APP = ROOT / "tests" / "gpu" / "apps" / "ddp_app.py"
CHECK_ORDER = ["stock", "record", "compile", "served", "killed", "timing"]
SKIP_LINE = "multi-gpu: skipped: {count} GPU(s) here, this check needs 2 or more (nvidia-h200-x2 or larger)"
# The call sites every rank builds: both stages forward and backward, and the
# trained model's predictions.
EXPECTED_CALL_SITES = {("hidden", "call"), ("hidden", "backwardCall"), ("sample_loss", "call"),
                       ("sample_loss", "backwardCall"), ("predict", "call")}
PARAMETERS = ("w", "v")
JOB_TIMEOUT_S = 420.0
# After one rank fails, the others wait for it inside a collective: this long,
# then they are stopped.
PEER_GRACE_S = 30.0
MARKER_TIMEOUT_S = 300.0
STOP_GRACE_S = 10.0
# NVLink multicast stays off unless the caller's environment says otherwise:
# the check needs none of it, and hosts that share their GPUs require it off.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


# --- How many GPUs -------------------------------------------------------------------------------


def visible_gpus(count: int, cuda_visible_devices: str | None) -> int:
    """How many of `count` GPUs CUDA_VISIBLE_DEVICES leaves a process: CUDA
    stops at the first entry that is empty or negative."""
    if cuda_visible_devices is None:
        return count
    visible = 0
    for entry in cuda_visible_devices.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break
        visible += 1
    return min(count, visible)


def nvidia_smi_gpus() -> int:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if listing.returncode != 0:
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def torch_importable() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def gpu_count() -> int:
    """The GPUs the ranks would see: PyTorch's count, else nvidia-smi's."""
    if torch_importable():
        import torch

        return torch.cuda.device_count()
    return visible_gpus(nvidia_smi_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES"))


def gpu_description(count: int) -> tuple[list[str], list[int]]:
    """The GPUs' names, and their architectures for `spreplay compile --arch`."""
    import torch

    names = [torch.cuda.get_device_name(i) for i in range(count)]
    arches = sorted({major * 10 + minor for major, minor in (torch.cuda.get_device_capability(i)
                                                             for i in range(count))})
    return names, arches


# --- Outputs ---------------------------------------------------------------------------------------


def load_outputs(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element: the same bytes (-0.0 is not 0.0; a NaN is the same NaN)."""
    if a.size == 0:
        return np.zeros(a.shape, dtype=bool)
    left = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, a.itemsize)
    right = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(b.size, b.itemsize)
    return (left == right).all(axis=1).reshape(a.shape)


def distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| per element, in float64: 0 where the bits are the same, inf
    where the difference is not a number (a NaN, or infinities apart)."""
    with np.errstate(invalid="ignore", over="ignore"):
        difference = np.abs(a.astype(np.float64) - b.astype(np.float64))
    difference = np.where(np.isnan(difference), np.inf, difference)
    return np.where(same_bits(a, b), 0.0, difference)


def arrays_identical(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def spread(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> dict[str, dict]:
    """How two stock runs' outputs differ, per array."""
    result = {}
    for key in sorted(first):
        a, b = first[key], second.get(key)
        if b is None or a.shape != b.shape or a.dtype != b.dtype:
            result[key] = {"identical": False, "max_abs_difference": float("inf")}
            continue
        result[key] = {"identical": arrays_identical(a, b),
                       "max_abs_difference": float(distance(a, b).max(initial=0.0))}
    return result


def compare_with_stock(first: dict[str, np.ndarray], second: dict[str, np.ndarray],
                       candidate: dict[str, np.ndarray]) -> list[str]:
    """Where `candidate` is not as stock's: bit-identical to `first` where the
    two stock runs are; elsewhere no further from the nearer stock run, per
    element, than the stock runs are from each other anywhere in the array."""
    problems = []
    if sorted(candidate) != sorted(first):
        problems.append(f"arrays {sorted(candidate)}, stock has {sorted(first)}")
    for key in sorted(set(first) & set(candidate)):
        a, b, c = first[key], second[key], candidate[key]
        if c.shape != a.shape or c.dtype != a.dtype:
            problems.append(f"{key}: {c.dtype}{list(c.shape)}, stock has {a.dtype}{list(a.shape)}")
            continue
        if arrays_identical(a, b):
            if not arrays_identical(a, c):
                problems.append(f"{key}: differs from stock, which is bit-identical run to run "
                                f"(max |difference| {distance(a, c).max(initial=0.0):.3g})")
            continue
        tolerance = distance(a, b).max(initial=0.0)
        nearer = np.minimum(distance(c, a), distance(c, b)).max(initial=0.0)
        if nearer > tolerance:
            problems.append(f"{key}: {nearer:.3g} from the nearer stock run, beyond the "
                            f"{tolerance:.3g} stock runs differ by")
    return problems


# --- What a trace holds ------------------------------------------------------------------------


# What makes a call site the call site it is, without what names it (slangpy's
# hash, the wrapper's digest) or how it came about (thread, build time).
SIGNATURE_FIELDS = ("module", "function", "kind", "callMode", "arguments", "typeConformances",
                    "linkedModules", "entryPoints", "deviceType", "callDataMode",
                    "deferTargetCompilation", "useEntrypointArgs")


def call_site_signature(site: dict) -> str:
    return json.dumps({name: site.get(name) for name in SIGNATURE_FIELDS}, sort_keys=True)


def duplicate_call_sites(call_sites: list[dict]) -> list[list[str]]:
    """Call sites recorded under more than one name: the slangpy hashes of each
    signature that has several. A hash that took in the GPU, or anything else
    of one process, shows up here once a second rank records."""
    names: dict[str, set[str]] = {}
    for site in call_sites:
        names.setdefault(call_site_signature(site), set()).add(site["slangpyHash"])
    return sorted(sorted(hashes) for hashes in names.values() if len(hashes) > 1)


def duplicate_kernels(trace: dict) -> list[list[str]]:
    """Kernel keys of one call site (by signature) and entry point, where
    there are several."""
    signatures: dict[str, set[str]] = {}
    for site in trace["callSites"]:
        signatures.setdefault(site["slangpyHash"], set()).add(call_site_signature(site))
    keys: dict[tuple[str, str], set[str]] = {}
    for kernel in trace["kernels"]:
        for name in dict.fromkeys(kernel["moduleNames"]):
            for signature in signatures.get(name, ()):
                keys.setdefault((signature, kernel["entryPoint"]), set()).add(kernel["key"])
    return sorted(sorted(group) for group in keys.values() if len(group) > 1)


def call_site_ids(trace: dict) -> set[tuple[str, str]]:
    return {(site["slangpyHash"], site["kind"]) for site in trace["callSites"]}


def call_site_names(trace: dict) -> set[tuple[str, str]]:
    return {(site["function"], site["kind"]) for site in trace["callSites"]}


def kernel_keys(trace: dict) -> set[str]:
    return {kernel["key"] for kernel in trace["kernels"]}


def app_processes(trace: dict) -> list[dict]:
    """The trace's processes that ran the app (torchrun's own process records too)."""
    # By the script each ran: torchrun's process names the app among its arguments.
    return [p for p in trace["processes"] if Path((p.get("commandLine") or [""])[0]).name == APP.name]


# --- Running the job -----------------------------------------------------------------------------


def rank_output(out: Path, rank: int) -> Path:
    """Where rank `rank` of a job given --out `out` writes (ddp_app.rank_output)."""
    return out.with_name(f"{out.stem}.rank{rank}{out.suffix}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def job_environment(**overrides: str) -> dict[str, str]:
    env = clean_environment(**overrides)
    for name, value in MULTICAST_OFF.items():
        env.setdefault(name, value)
    return env


# A launcher may put its own prefix before a worker's line, e.g. "[default0]:".
TAGGED = re.compile(r"(?:^|[\s:\]])(summary|timing) (\{.*\})\s*$")


def tagged_lines(text: str) -> dict[str, dict[int, dict]]:
    """The app's "summary" and "timing" lines, by rank (torchrun mixes every rank's output)."""
    found: dict[str, dict[int, dict]] = {"summary": {}, "timing": {}}
    for line in text.splitlines():
        if match := TAGGED.search(line):
            try:
                data = json.loads(match[2])
            except json.JSONDecodeError:
                continue
            found[match[1]][int(data.get("rank", 0))] = data
    return found


@dataclass
class Job:
    """One finished run of the job."""
    name: str
    world: int
    out: Path
    launched_unix: float
    wall_s: float
    returncodes: list[int | None]
    logs: list[tuple[Path, Path]]
    summaries: dict[int, dict] = field(default_factory=dict)
    timings: dict[int, dict] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def output(self, rank: int) -> dict[str, np.ndarray]:
        return load_outputs(rank_output(self.out, rank))

    def failures(self, processes: Iterable[int] | None = None) -> list[str]:
        indices = range(len(self.returncodes)) if processes is None else processes
        failed = []
        for index in indices:
            if self.returncodes[index] != 0:
                stdout, stderr = (path.read_text(errors="replace") for path in self.logs[index])
                failed.append(f"{self.name} process {index} exited with {self.returncodes[index]}:\n"
                              f"{stdout[-1500:]}\n{stderr[-3000:]}")
        return failed

    def to_json(self) -> dict:
        return {"launched_unix": self.launched_unix, "wall_s": round(self.wall_s, 2),
                "returncodes": self.returncodes, "summaries": self.summaries, "timings": self.timings,
                "warnings": self.warnings[:20]}


class RunningJob:
    """A job's processes, each in a session of its own so that a launcher's
    workers go with it."""

    def __init__(self, name: str, world: int, out: Path, processes: list[subprocess.Popen],
                 logs: list[tuple[Path, Path]], launched_unix: float):
        self.name, self.world, self.out = name, world, out
        self.processes, self.logs = processes, logs
        self.launched_unix = launched_unix
        self.started = time.perf_counter()

    def exited(self) -> dict[int, int]:
        return {i: code for i, p in enumerate(self.processes) if (code := p.poll()) is not None}

    def signal(self, index: int, number: int) -> None:
        """`number` to process `index` and its session's processes."""
        if self.processes[index].poll() is None:
            try:
                os.killpg(self.processes[index].pid, number)
            except ProcessLookupError:  # it exited just now
                pass

    def kill(self, index: int) -> None:
        self.signal(index, signal.SIGKILL)
        self.processes[index].wait()

    def stop(self) -> None:
        """Ends what still runs: SIGTERM first, which torchrun passes on to its
        workers, then SIGKILL."""
        running = [i for i, p in enumerate(self.processes) if p.poll() is None]
        for index in running:
            self.signal(index, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for index in running:
            try:
                self.processes[index].wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(index)

    def wait(self, timeout_s: float = JOB_TIMEOUT_S, processes: Iterable[int] | None = None) -> None:
        """Until every process of `processes` (default all) exits; a job that
        fails or hangs is stopped."""
        waiting = list(range(len(self.processes)) if processes is None else processes)
        deadline = time.monotonic() + timeout_s
        first_failure = None
        while True:
            codes = {i: code for i, code in self.exited().items() if i in waiting}
            if len(codes) == len(waiting):
                return
            if first_failure is None and any(code != 0 for code in codes.values()):
                first_failure = time.monotonic()
            now = time.monotonic()
            if now > deadline or (first_failure is not None and now - first_failure > PEER_GRACE_S):
                self.stop()
                return
            time.sleep(0.2)

    def finish(self) -> Job:
        self.stop()  # anything still running was not waited for
        job = Job(self.name, self.world, self.out, self.launched_unix, time.perf_counter() - self.started,
                  [p.returncode for p in self.processes], self.logs)
        for stdout, stderr in self.logs:
            tagged = tagged_lines(stdout.read_text(errors="replace"))
            job.summaries.update(tagged["summary"])
            job.timings.update(tagged["timing"])
            job.warnings += [line for line in stderr.read_text(errors="replace").splitlines()
                             if line.startswith("spreplay:")]
        return job


class Launcher:
    """Starts the job, its ranks as separate processes or under torchrun."""

    def __init__(self, scratch: Path, nproc: int, steps: int):
        self.scratch, self.nproc, self.steps = scratch, nproc, steps

    def fresh_caches(self, count: int) -> list[str]:
        return [tempfile.mkdtemp(dir=self.scratch, prefix="cuda-cache-") for _ in range(count)]

    def fresh_dir(self, prefix: str) -> Path:
        return Path(tempfile.mkdtemp(dir=self.scratch, prefix=prefix))

    def app_command(self, out: Path, args: Iterable[str]) -> list[str]:
        return [str(APP), "--out", str(out), "--steps", str(self.steps), *map(str, args)]

    def start(self, name: str, work: Path, env: dict[str, str] | None = None, args: Iterable[str] = (),
              world: int | None = None, cuda_caches: list[str] | None = None) -> RunningJob:
        """The ranks as torchrun would start them, each with a CUDA cache of its own."""
        world = world or self.nproc
        caches = cuda_caches or self.fresh_caches(world)
        work.mkdir(parents=True, exist_ok=True)
        out = self._clean_outputs(work, world)
        port = str(free_port())
        command = [sys.executable, *self.app_command(out, args)]
        launched = time.time()
        processes, logs = [], []
        for rank in range(world):
            rank_env = job_environment(**{
                "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "CUDA_CACHE_PATH": caches[rank], **(env or {})})
            log = (work / f"rank{rank}.out", work / f"rank{rank}.err")
            processes.append(self._spawn(command, rank_env, log))
            logs.append(log)
        return RunningJob(name, world, out, processes, logs, launched)

    def run(self, name: str, work: Path, env: dict[str, str] | None = None, args: Iterable[str] = (),
            world: int | None = None, cuda_caches: list[str] | None = None) -> Job:
        running = self.start(name, work, env, args, world, cuda_caches)
        running.wait()
        return self.succeeded(running.finish())

    def torchrun(self, name: str, work: Path, env: dict[str, str]) -> Job:
        """The job as users launch it: torchrun, one environment for every rank."""
        work.mkdir(parents=True, exist_ok=True)
        out = self._clean_outputs(work, self.nproc)
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", str(self.nproc), *self.app_command(out, ())]
        launcher_env = job_environment(**{"CUDA_CACHE_PATH": self.fresh_caches(1)[0], **env})
        log = (work / "torchrun.out", work / "torchrun.err")
        launched = time.time()
        running = RunningJob(name, self.nproc, out, [self._spawn(command, launcher_env, log)], [log], launched)
        running.wait()
        return self.succeeded(running.finish())

    def device_caches(self, work: Path) -> list[str]:
        """A CUDA cache per rank that holds what creating its device JIT-compiles
        (slang-rhi's own kernels, which it builds with NVRTC) and nothing else:
        with the driver's JIT disabled, served kernels must load without it."""
        caches = self.fresh_caches(self.nproc)
        work.mkdir(parents=True, exist_ok=True)
        processes, logs = [], []
        for rank in range(self.nproc):
            log = (work / f"device{rank}.out", work / f"device{rank}.err")
            env = job_environment(LOCAL_RANK=str(rank), CUDA_CACHE_PATH=caches[rank])
            processes.append(self._spawn([sys.executable, str(APP), "--device-only"], env, log))
            logs.append(log)
        running = RunningJob("device creation", self.nproc, work / "unused.npz", processes, logs, time.time())
        running.wait()
        self.succeeded(running.finish())
        return caches

    @staticmethod
    def succeeded(job: Job) -> Job:
        failures = job.failures()
        expect(not failures, "\n".join(failures))
        return job

    @staticmethod
    def _clean_outputs(work: Path, world: int) -> Path:
        # A rank that dies before writing must not be read as an earlier run's.
        out = work / "out.npz"
        for rank in range(world):
            rank_output(out, rank).unlink(missing_ok=True)
        return out

    @staticmethod
    def _spawn(command: list[str], env: dict[str, str], log: tuple[Path, Path]) -> subprocess.Popen:
        with open(log[0], "w") as stdout, open(log[1], "w") as stderr:
            return subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, start_new_session=True)


# --- The spreplay tool ---------------------------------------------------------------------------


def spreplay(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "spreplay", *args], env=clean_environment(),
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise CheckFailed(f"spreplay {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc


def inspect_trace(trace: Path) -> dict:
    return json.loads(spreplay("inspect", str(trace), "--json").stdout)


def compile_trace(trace: Path, archive: Path, arches: list[int], check: bool = True) -> tuple[int, dict]:
    """`spreplay compile` with a report; its exit status and the report."""
    report = archive.with_suffix(".report.json")
    report.unlink(missing_ok=True)
    arch = ["--arch", ",".join(map(str, arches))] if arches else []
    proc = spreplay("compile", str(trace), "-o", str(archive), *arch, "--report", str(report), check=check)
    return proc.returncode, (json.loads(report.read_text()) if report.exists() else {"kernels": []})


def served_environment(archive: Path, jit: bool) -> dict[str, str]:
    env = {"SLANGPY_KERNELS": str(archive), "SLANGPY_KERNELS_STRICT": "1", "SLANGPY_KERNELS_STRICT_MODULES": "1",
           "SLANGPY_KERNELS_SUMMARY": "1"}
    if not jit:
        env["CUDA_DISABLE_PTX_JIT"] = "1"
    return env


# --- The checks ----------------------------------------------------------------------------------


class Context:
    """What the checks share: the launcher, and what earlier checks made. A
    check that needs another's result runs it first, once."""

    def __init__(self, out: Path, launcher: Launcher, arches: list[int]):
        self.out, self.launcher, self.arches = out, launcher, arches
        self.nproc = launcher.nproc
        self.results: dict[str, dict] = {}
        self.stock: tuple[Job, Job] | None = None
        self.trace: Path | None = None
        self.kernels_per_rank: int | None = None
        self.archive: Path | None = None

    def work(self, name: str) -> Path:
        path = self.out / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def run(self, name: str) -> dict:
        if name in self.results:
            return self.results[name]
        start = time.perf_counter()
        try:
            result = CHECKS[name](self)
            result["passed"] = True
        except CheckFailed as failure:
            result = {"passed": False, "failure": str(failure)}
        except Exception as error:  # a broken run (an output missing, a tool's JSON): report it, go on
            result = {"passed": False, "failure": f"{type(error).__name__}: {error}",
                      "traceback": traceback.format_exc()[-4000:]}
        result["seconds"] = round(time.perf_counter() - start, 1)
        self.results[name] = result
        verdict = "PASS" if result["passed"] else "FAIL"
        print(f"{name}: {verdict} ({result['seconds']} s){'' if result['passed'] else ': ' + result['failure']}",
              flush=True)
        return result

    def require(self, name: str) -> None:
        expect(self.run(name)["passed"], f"needs the {name} check, which failed")

    def as_stock(self, job: Job) -> list[str]:
        """Every rank's outputs against stock's, and the ranks against each other."""
        assert self.stock is not None
        first, second = self.stock
        problems = []
        for rank in range(job.world):
            problems += [f"rank {rank}: {p}" for p in
                         compare_with_stock(first.output(rank), second.output(rank), job.output(rank))]
        return problems + ranks_disagree(job)


def ranks_disagree(job: Job) -> list[str]:
    """Data parallelism's invariant: every rank ends with rank 0's parameters, bit for bit."""
    reference = job.output(0)
    problems = []
    for rank in range(1, job.world):
        outputs = job.output(rank)
        problems += [f"rank {rank}: {key} is not rank 0's" for key in PARAMETERS
                     if not arrays_identical(reference[key], outputs[key])]
    return problems


def expect_served(job: Job, kernels: int | None, what: str) -> None:
    """Every rank served every kernel and module it asked for and compiled none."""
    for rank in range(job.world):
        summary = job.summaries.get(rank, {})
        expect(summary.get("active") is True, f"{what}: rank {rank}: spreplay was not serving: {job.warnings[:5]}")
        got = (summary.get("compiled"), summary.get("refused"), summary.get("notKeyable"))
        expect(got == (0, 0, 0) and summary.get("served", 0) > 0,
               f"{what}: rank {rank}: served {summary.get('served')}, compiled/refused/notKeyable {got}; "
               f"misses {summary.get('misses')}")
        expect(kernels is None or summary["served"] == kernels,
               f"{what}: rank {rank}: {summary['served']} kernels served, one rank records {kernels}")
        expect(summary.get("modulesServed", 0) > 0 and summary.get("modulesCompiled") == 0
               and summary.get("modulesRefused") == 0,
               f"{what}: rank {rank}: modules served/from source/refused {summary.get('modulesServed')}/"
               f"{summary.get('modulesCompiled')}/{summary.get('modulesRefused')}: {summary.get('moduleMisses')}")


def check_stock(ctx: Context) -> dict:
    work = ctx.work("stock")
    first = ctx.launcher.run("stock-1", work / "run1")
    second = ctx.launcher.run("stock-2", work / "run2")
    ctx.stock = (first, second)
    spreads = {rank: spread(first.output(rank), second.output(rank)) for rank in range(ctx.nproc)}
    disagreements = ranks_disagree(first) + ranks_disagree(second)
    expect(not disagreements, f"stock: {disagreements}")
    losses = first.output(0)["global_losses"]
    expect(bool(losses[-1] < losses[0]), f"stock: training did not lower the loss: {losses.tolist()}")
    return {"identical_run_to_run": all(s["identical"] for r in spreads.values() for s in r.values()),
            "spread": spreads, "global_losses": losses.tolist(), "runs": [first.to_json(), second.to_json()]}


def check_record(ctx: Context) -> dict:
    ctx.require("stock")
    work = ctx.work("record")
    alone, together = work / "one-rank.capnp", work / "trace.capnp"
    for trace in (alone, together):
        trace.unlink(missing_ok=True)
    ctx.launcher.run("record one rank", work / "one-rank", {"SLANGPY_RECORD": str(alone)}, world=1)
    job = ctx.launcher.torchrun("record", work / "job", {"SLANGPY_RECORD": str(together)})
    one, every = inspect_trace(alone), inspect_trace(together)
    for name, contents in (("one rank", one), ("every rank", every)):
        expect(contents["damage"] == [] and contents["undecodableRecords"] == 0,
               f"{name}: damaged trace: {contents['damage']}, {contents['undecodableRecords']} undecodable")
    expect(len(app_processes(every)) == ctx.nproc,
           f"{len(app_processes(every))} of {ctx.nproc} ranks' processes in the trace")
    expect(len(every["devices"]) == ctx.nproc, f"{len(every['devices'])} devices in the trace, one per rank expected")
    missing = EXPECTED_CALL_SITES - call_site_names(one)
    expect(not missing, f"one rank recorded no {sorted(missing)}: {sorted(call_site_names(one))}")
    duplicates = duplicate_call_sites(every["callSites"])
    expect(not duplicates, f"call sites recorded under several names: {duplicates}")
    duplicated_kernels = duplicate_kernels(every)
    expect(not duplicated_kernels, f"kernels recorded under several keys: {duplicated_kernels}")
    expect(call_site_ids(every) == call_site_ids(one),
           f"{len(call_site_ids(every))} call sites from {ctx.nproc} ranks, {len(call_site_ids(one))} from one; "
           f"only with every rank: {sorted(call_site_ids(every) - call_site_ids(one))}")
    expect(kernel_keys(every) == kernel_keys(one),
           f"{len(kernel_keys(every))} kernels from {ctx.nproc} ranks, {len(kernel_keys(one))} from one")
    problems = ctx.as_stock(job)
    expect(not problems, f"recording changed the outputs: {problems}")
    ctx.trace, ctx.kernels_per_rank = together, len(kernel_keys(one))
    return {"call_sites": len(every["callSites"]), "kernels": len(every["kernels"]),
            "processes": len(every["processes"]), "devices": len(every["devices"]),
            "call_site_names": sorted(map(list, call_site_names(every))), "run": job.to_json()}


def check_compile(ctx: Context) -> dict:
    ctx.require("record")
    assert ctx.trace is not None
    archive = ctx.work("compile") / "kernels.sprk"
    start = time.perf_counter()
    _, report = compile_trace(ctx.trace, archive, ctx.arches)
    failed = [kernel["label"] for kernel in report["kernels"] if kernel["status"] != "compiled"]
    expect(not failed, f"kernels that did not compile: {failed}")
    expect(len(report["kernels"]) == ctx.kernels_per_rank,
           f"{len(report['kernels'])} kernels compiled, the trace holds {ctx.kernels_per_rank}")
    ctx.archive = archive
    return {"kernels": len(report["kernels"]), "modules_archived": report.get("modulesArchived"),
            "archive_bytes": report.get("archiveBytes"), "arches": ctx.arches,
            "wall_s": round(time.perf_counter() - start, 1)}


def serve_strict(ctx: Context, archive: Path, work: Path, name: str) -> Job:
    """The whole job served from `archive`, strict, the driver's JIT disabled;
    every rank must serve everything and give stock's outputs."""
    caches = ctx.launcher.device_caches(work / "device-caches")
    job = ctx.launcher.run(name, work / "job", served_environment(archive, jit=False), cuda_caches=caches)
    expect_served(job, ctx.kernels_per_rank, name)
    problems = ctx.as_stock(job)
    expect(not problems, f"{name}: outputs are not stock's: {problems}")
    return job


def check_served(ctx: Context) -> dict:
    ctx.require("compile")
    assert ctx.archive is not None
    job = serve_strict(ctx, ctx.archive, ctx.work("served"), "served")
    return {"run": job.to_json()}


def wait_for_markers(running: RunningJob, markers: list[Path]) -> None:
    deadline = time.monotonic() + MARKER_TIMEOUT_S
    while not all(marker.exists() for marker in markers):
        if exited := running.exited():
            raise CheckFailed(f"ranks exited before the kill: {exited}\n" + "\n".join(running.finish().failures()))
        expect(time.monotonic() < deadline, f"after {MARKER_TIMEOUT_S:.0f} s, still no "
                                            f"{[m.name for m in markers if not m.exists()]}")
        time.sleep(0.1)


def check_killed(ctx: Context) -> dict:
    ctx.require("stock")
    work = ctx.work("killed")
    trace, hold = work / "trace.capnp", work / "hold"
    trace.unlink(missing_ok=True)
    shutil.rmtree(hold, ignore_errors=True)
    hold.mkdir()
    victim = ctx.nproc - 1
    survivors = [rank for rank in range(ctx.nproc) if rank != victim]
    running = ctx.launcher.start("killed", work / "job", {"SLANGPY_RECORD": str(trace)},
                                 ["--hold", str(hold), "--victim", str(victim)])
    try:
        # Every rank has recorded its first step, and the victim at least one
        # call site of its own: it is killed while it builds the next.
        wait_for_markers(running, [hold / f"rank{r}.first-step" for r in range(ctx.nproc)]
                         + [hold / f"rank{victim}.built2"])
        running.kill(victim)
        (hold / "go").touch()
        running.wait(processes=survivors)
    finally:
        job = running.finish()
    expect(job.returncodes[victim] == -signal.SIGKILL, f"rank {victim} exited with {job.returncodes[victim]}, "
                                                       "not by the kill")
    failures = job.failures(survivors)
    expect(not failures, "\n".join(failures))
    built = len(list(hold.glob(f"rank{victim}.built*")))
    contents = inspect_trace(trace)
    expect(contents["undecodableRecords"] == 0, f"undecodable records: {contents['undecodableRecords']}")
    expect(len(app_processes(contents)) == ctx.nproc,
           f"{len(app_processes(contents))} of {ctx.nproc} ranks' processes in the trace")
    missing = EXPECTED_CALL_SITES - call_site_names(contents)
    expect(not missing, f"the survivors recorded no {sorted(missing)}")
    archive = work / "kernels.sprk"
    code, report = compile_trace(trace, archive, ctx.arches, check=False)
    failed = [kernel["label"] for kernel in report["kernels"] if kernel["status"] != "compiled"]
    # Only the killed rank's own call sites (probe) may be cut short.
    expect(all(".probe (" in label for label in failed), f"kernels that did not compile: {failed}")
    expect(archive.exists(), f"spreplay compile wrote no archive (exit {code})")
    served = serve_strict(ctx, archive, work / "served", "served from the killed job's trace")
    return {"victim": victim, "victim_call_sites_built": built, "trace_call_sites": len(contents["callSites"]),
            "trace_kernels": len(contents["kernels"]), "damage": contents["damage"], "compile_exit": code,
            "compile_failed": failed, "run": job.to_json(), "served": served.to_json()}


def first_step_row(job: Job) -> dict:
    per_rank = [job.timings[rank]["device_to_first_step_s"] for rank in range(job.world)]
    ends = [job.timings[rank]["first_step_end_unix"] for rank in range(job.world)]
    return {"ranks_s": per_rank, "job_s": max(per_rank), "job_from_launch_s": round(max(ends) - job.launched_unix, 3),
            "ranks_from_start_s": [job.timings[rank]["start_to_first_step_s"] for rank in range(job.world)]}


def check_timing(ctx: Context) -> dict:
    ctx.require("compile")
    assert ctx.archive is not None
    work = ctx.work("timing")
    cuda_caches = ctx.launcher.fresh_caches(ctx.nproc)
    slangpy_caches = ["--cache-dir", str(ctx.launcher.fresh_dir("slangpy-caches-"))]
    cold = ctx.launcher.run("stock, cold (caches empty)", work / "cold", args=slangpy_caches, cuda_caches=cuda_caches)
    warm = ctx.launcher.run("stock, every cache warm", work / "warm", args=slangpy_caches, cuda_caches=cuda_caches)
    served = ctx.launcher.run("spreplay", work / "spreplay", served_environment(ctx.archive, jit=True))
    expect_served(served, ctx.kernels_per_rank, "spreplay")
    rows = {}
    for key, job in (("stock_cold", cold), ("stock_warm", warm), ("spreplay", served)):
        problems = ctx.as_stock(job)
        expect(not problems, f"{job.name}: outputs are not stock's: {problems}")
        missing = [rank for rank in range(job.world) if rank not in job.timings]
        expect(not missing, f"{job.name}: no timing line from ranks {missing}")
        rows[key] = {"label": job.name, **first_step_row(job)}
    return {"first_step": rows, "runs": {key: job.to_json() for key, job in
                                         (("stock_cold", cold), ("stock_warm", warm), ("spreplay", served))}}


CHECKS: dict[str, Callable[[Context], dict]] = {
    "stock": check_stock,
    "record": check_record,
    "compile": check_compile,
    "served": check_served,
    "killed": check_killed,
    "timing": check_timing,
}


# --- Report --------------------------------------------------------------------------------------


def markdown(report: dict) -> str:
    lines = ["# Multi-GPU data-parallel check", "",
             f"{report['nproc']} ranks, one GPU each ({', '.join(report['gpu_names'][:report['nproc']])}), "
             f"{report['steps']} training steps of tests/gpu/apps/ddp_app.py; kernels compiled for "
             f"{', '.join(f'sm_{a}' for a in report['arches'])}."
             + (" A rehearsal on one GPU (--rehearse): the job and the harness, not several GPUs."
                if report.get("rehearsal") else ""), "",
             "| check | verdict | seconds |", "| --- | --- | --- |"]
    stock = report["checks"].get("stock", {})
    if "identical_run_to_run" in stock:
        lines[-3:-3] = [f"Two stock runs are {'' if stock['identical_run_to_run'] else 'not '}bit-identical; "
                        "every other run is held to them (see the module's docstring).", ""]
    for name, result in report["checks"].items():
        first_line = (result.get("failure", "").splitlines() or [""])[0][:200].replace("|", "\\|")
        verdict = "PASS" if result["passed"] else f"FAIL: {first_line}"
        lines.append(f"| {name} | {verdict} | {result['seconds']} |")
    timing = report["checks"].get("timing", {}).get("first_step")
    if timing:
        ranks = len(next(iter(timing.values()))["ranks_s"])
        lines += ["", "## Time to the first step", "",
                  "Seconds from device creation to the end of the first training step (NCCL's set-up, "
                  "before it, not counted); the job's is its slowest rank's. From launch: from starting "
                  "the processes to the last rank's first step, imports and NCCL included.", "",
                  "| configuration | " + " | ".join(f"rank {r}" for r in range(ranks)) + " | job | job, from launch |",
                  "| --- |" + " --- |" * (ranks + 2)]
        for row in timing.values():
            cells = " | ".join(f"{seconds:.2f}" for seconds in row["ranks_s"])
            lines.append(f"| {row['label']} | {cells} | **{row['job_s']:.2f}** | {row['job_from_launch_s']:.2f} |")
    return "\n".join(lines) + "\n"


def skip(out: Path, line: str, count: int) -> int:
    print(line, flush=True)
    (out / "multi_gpu.json").write_text(json.dumps({"skipped": line, "gpus": count}, indent=2))
    (out / "multi-gpu.md").write_text(f"# Multi-GPU data-parallel check\n\n{line}\n")
    return 0


def parse_checks(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown checks {unknown}; the checks are {','.join(CHECK_ORDER)}")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--nproc", type=int, help="ranks, one GPU each (default: every GPU)")
    parser.add_argument("--steps", type=int, default=8, help="training steps (default 8)")
    parser.add_argument("--checks", type=parse_checks, default=CHECK_ORDER, help=",".join(CHECK_ORDER))
    parser.add_argument("--rehearse", action="store_true",
                        help="one rank on one GPU, every check but killed: proves the job and the harness "
                             "on a single-GPU machine, and says nothing of several GPUs")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    count = gpu_count()
    if args.rehearse and count >= 1:
        args.nproc = 1
        # A killed rank needs a survivor: with one rank there is none.
        args.checks = [name for name in args.checks if name != "killed"]
    elif count < 2:
        return skip(args.out, SKIP_LINE.format(count=count), count)
    if not torch_importable():
        return skip(args.out, f"multi-gpu: skipped: {count} GPUs here, but {sys.executable} cannot import "
                              "PyTorch, which the job needs", count)
    nproc = args.nproc or count
    if not (2 if not args.rehearse else 1) <= nproc <= count:
        parser.error(f"--nproc {nproc}: this check runs 2 to {count} ranks here, one GPU each")
    if args.steps < 1:
        parser.error("--steps must be 1 or more")
    names, arches = gpu_description(nproc)
    scratch = Path(tempfile.mkdtemp(prefix="spreplay-multi-gpu-"))
    ctx = Context(args.out, Launcher(scratch, nproc, args.steps), arches)
    try:
        for name in args.checks:
            ctx.run(name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    checks = {name: ctx.results[name] for name in CHECK_ORDER if name in ctx.results}
    report = {"gpus": count, "gpu_names": names, "nproc": nproc, "steps": args.steps, "arches": arches,
              "rehearsal": args.rehearse, "checks": checks}
    (args.out / "multi_gpu.json").write_text(json.dumps(report, indent=2))
    (args.out / "multi-gpu.md").write_text(markdown(report))
    passed = all(result["passed"] for result in checks.values())
    print(f"multi-gpu: {'PASS' if passed else 'FAIL'} ({args.out / 'multi-gpu.md'})", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
