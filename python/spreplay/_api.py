"""`spreplay.compile` and `spreplay.inspect`: the tool's commands for build
scripts and packaging hooks, with typed results. Both run the native tool
installed with this package, exactly as the `spreplay` command does."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Union

from ._tool import slangpy_for_tool, tool_environment, tool_for

PathLike = Union[str, "os.PathLike[str]"]


class SpreplayError(RuntimeError):
    """A spreplay command failed; the message is the tool's own."""


class CompileError(SpreplayError):
    """`compile` wrote no archive, or some kernels failed; `result` holds the
    report when the tool wrote one."""

    def __init__(self, message: str, result: CompileResult | None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class CompiledKernel:
    key: str
    label: str  # module.function (call kind)
    compiled: bool
    message: str  # why it failed ("" when compiled)
    replay_cached: bool
    ptx_renamed_registers: int  # 0: identical PTX; else the same program, registers renamed
    optix: bool
    front_end_seconds: float
    codegen_seconds: float
    sass_seconds: dict[str, float]  # by architecture, e.g. "sm_90"
    ptx_bytes: int
    fatbin_bytes: int


@dataclass(frozen=True)
class CompileResult:
    archive: Path
    sass_tool: str
    archive_bytes: int
    wall_seconds: float
    cpu_seconds: float  # the compile's and its compilers' (ptxas)
    critical_path_seconds: float  # the slowest kernel's replay plus its slowest SASS
    app_compile_seconds: float  # the app's own code generation of the same kernels, as recorded
    app_module_load_seconds: float  # the app's module loads in their sessions (Slang's front end)
    modules_archived: int
    modules_refused: int
    module_ir_bytes: int
    module_seconds: float
    kernels: tuple[CompiledKernel, ...]
    log: str  # the tool's progress lines

    @property
    def failed(self) -> tuple[CompiledKernel, ...]:
        return tuple(kernel for kernel in self.kernels if not kernel.compiled)


@dataclass(frozen=True)
class RecordedKernel:
    key: str
    entry_point: str
    toolchain: str
    module_names: tuple[str, ...]
    code_bytes: int
    compile_seconds: float


@dataclass(frozen=True)
class TraceInfo:
    path: Path
    records: int
    processes: int
    devices: int
    call_sites: int
    kernels: tuple[RecordedKernel, ...]
    damaged: bool  # a region could not be read (a recorder killed mid-write, say)
    json: dict[str, Any]  # everything `inspect --json` says (docs/json.md)


@dataclass(frozen=True)
class ArchivedKernel:
    key: str
    module: str
    function: str
    call_kind: str
    sass_arches: tuple[int, ...]
    optix: bool


@dataclass(frozen=True)
class ArchivedModule:
    key: str
    name: str
    from_string: bool
    ir_bytes: int


@dataclass(frozen=True)
class ArchiveInfo:
    path: Path
    toolchain: str
    spreplay_version: str
    kernels: tuple[ArchivedKernel, ...]
    modules: tuple[ArchivedModule, ...]
    unserved_modules: tuple[tuple[str, str], ...]  # (module name, why compile left it out)
    json: dict[str, Any]


def _run(arguments: list[str]) -> subprocess.CompletedProcess:
    install = slangpy_for_tool()
    return subprocess.run([str(tool_for(arguments[0], install)), *arguments],
                          env=tool_environment(install=install), capture_output=True, text=True)


def _compile_result(archive: Path, report: dict[str, Any], log: str) -> CompileResult:
    kernels = tuple(
        CompiledKernel(key=k["key"], label=k["label"], compiled=k["status"] == "compiled", message=k["message"],
                       replay_cached=k["replayCached"], ptx_renamed_registers=k["ptxRenamedRegisters"],
                       optix=k["optix"], front_end_seconds=k["frontEndSeconds"],
                       codegen_seconds=k["codegenSeconds"], sass_seconds=dict(k["sassSeconds"]),
                       ptx_bytes=k["ptxBytes"], fatbin_bytes=k["fatbinBytes"])
        for k in report["kernels"])
    return CompileResult(archive=archive, sass_tool=report["sassTool"], archive_bytes=report["archiveBytes"],
                         wall_seconds=report["wallSeconds"], cpu_seconds=report["cpuSeconds"],
                         critical_path_seconds=report["criticalPathSeconds"],
                         app_compile_seconds=report["appCompileSeconds"],
                         app_module_load_seconds=report["appModuleLoadSeconds"],
                         modules_archived=report["modulesArchived"],
                         modules_refused=report["modulesRefused"], module_ir_bytes=report["moduleIrBytes"],
                         module_seconds=report["moduleSeconds"], kernels=kernels, log=log)


def compile(  # noqa: A001 (the tool's own name for it)
    traces: PathLike | Iterable[PathLike],
    output: PathLike,
    *,
    arches: Iterable[int] | None = None,
    jobs: int | None = None,
    cache: PathLike | None = None,
    use_cache: bool = True,
    cache_max_size: int | str | None = None,
    sass: str | None = None,
    modules: bool = True,
    shard: tuple[int, int] | None = None,
) -> CompileResult:
    """`spreplay compile TRACES -o OUTPUT`. Raises CompileError when the tool
    fails or any kernel fails to compile (the archive then holds the others,
    and the error's `result` says which failed and why). `shard=(k, n)`
    builds only the kernels of shard k of n (`--shard K/N`); `merge` joins
    the n archives. `cache_max_size`: bytes, or "500M", "20G" (`--cache-max-size`)."""
    paths = [traces] if isinstance(traces, (str, os.PathLike)) else list(traces)
    output = Path(output)
    arguments = ["compile", *map(os.fspath, paths), "-o", os.fspath(output)]
    if arches is not None:
        arguments += ["--arch", ",".join(str(arch) for arch in arches)]
    if jobs is not None:
        arguments += ["--jobs", str(jobs)]
    if not use_cache:
        arguments.append("--no-cache")
    elif cache is not None:
        arguments += ["--cache", os.fspath(cache)]
    if cache_max_size is not None:
        arguments += ["--cache-max-size", str(cache_max_size)]
    if sass is not None:
        arguments += ["--sass", sass]
    if not modules:
        arguments.append("--no-modules")
    if shard is not None:
        arguments += ["--shard", f"{shard[0]}/{shard[1]}"]
    with tempfile.TemporaryDirectory(prefix="spreplay-report-") as scratch:
        report_path = Path(scratch) / "report.json"
        proc = _run([*arguments, "--report", str(report_path)])
        report = json.loads(report_path.read_text()) if report_path.exists() else None
    result = _compile_result(output, report, proc.stderr) if report is not None else None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise CompileError(lines[-1] if lines else f"spreplay compile exited {proc.returncode}", result)
    assert result is not None, "spreplay compile succeeded without writing its report"
    return result


def merge(archives: Iterable[PathLike], output: PathLike) -> Path:
    """`spreplay merge ARCHIVES -o OUTPUT`: the shards' archives as one, byte
    for byte what one compile of the same traces writes. Raises SpreplayError
    when the tool refuses them (another toolchain, a damaged archive)."""
    output = Path(output)
    proc = _run(["merge", *map(os.fspath, archives), "-o", os.fspath(output)])
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise SpreplayError(lines[-1] if lines else f"spreplay merge exited {proc.returncode}")
    return output


def _inspect_json(path: Path) -> dict[str, Any]:
    proc = _run(["inspect", os.fspath(path), "--json"])
    if proc.returncode != 0:
        raise SpreplayError(proc.stderr.strip() or f"spreplay inspect exited {proc.returncode}")
    return json.loads(proc.stdout)


def inspect(path: PathLike) -> TraceInfo | ArchiveInfo:
    """`spreplay inspect PATH --json`, typed: a TraceInfo or an ArchiveInfo.
    Raises SpreplayError for a file that is neither, or is damaged."""
    path = Path(path)
    document = _inspect_json(path)
    if "formatVersion" in document:
        return ArchiveInfo(
            path=path, toolchain=document["toolchain"], spreplay_version=document["spreplayVersion"],
            kernels=tuple(ArchivedKernel(key=k["key"], module=k["module"], function=k["function"],
                                         call_kind=k["callKind"], sass_arches=tuple(k["sassArches"]),
                                         optix=k["optix"]) for k in document["kernels"]),
            modules=tuple(ArchivedModule(key=m["key"], name=m["name"], from_string=m["fromString"],
                                         ir_bytes=m["irBytes"]) for m in document["modules"]),
            unserved_modules=tuple((m["name"], m["reason"]) for m in document["unservedModules"]),
            json=document)
    return TraceInfo(
        path=path, records=document["records"], processes=len(document["processes"]),
        devices=len(document["devices"]), call_sites=len(document["callSites"]),
        kernels=tuple(RecordedKernel(key=k["key"], entry_point=k["entryPoint"], toolchain=k["toolchain"],
                                     module_names=tuple(k["moduleNames"]), code_bytes=k["codeBytes"],
                                     compile_seconds=k["compileSeconds"]) for k in document["kernels"]),
        damaged=bool(document["damage"]), json=document)
