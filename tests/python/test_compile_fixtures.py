"""`spreplay compile` on traces recorded on an H200, on this machine with no GPU:
PTX byte-identical to what slangpy compiled, SASS for every arch, archives that
round-trip, incremental rebuilds, and clear errors on bad input.

The traces were recorded in the H200's checkout, with its CUDA toolkit's
layout (NVRTC's headers under targets/x86_64-linux/include); they compile here
from a directory of their own, with whatever CUDA this machine has, and once
more with that CUDA laid out as NVIDIA's PyPI wheels lay it out. local_modules
was recorded with debug information, which writes those paths into the PTX,
and in both of its module load orders.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, SLANGPY_VERSION, clean_env, inspect_json, run_spreplay, spreplay_command

TRACES = sorted(FIXTURES.glob("*.capnp"))
ARCHES = [75, 80, 86, 89, 90, 100, 120]


def test_this_slangpy_release_has_its_own_fixtures() -> None:
    """Every supported release is tested on traces recorded with it: these
    tests hold replays to their PTX, and would pass vacuously on none."""
    assert {trace.name for trace in TRACES} == {"autodiff.capnp", "elementwise.capnp", "generic_mlp.capnp",
                                                "local_modules.capnp", "local_modules-noise-first.capnp"}, FIXTURES
    for trace in TRACES:
        toolchains = {kernel["toolchain"] for kernel in inspect_json(trace)["kernels"]}
        assert len(toolchains) == 1 and toolchains.pop().startswith(f"slangpy {SLANGPY_VERSION} slang "), trace


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compile") / "kernels.sprk"
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    proc = run_spreplay("compile", *map(str, TRACES), "-o", str(out), "--no-cache",
                        "--report", str(out.with_suffix(".json")), cwd=elsewhere)
    # Kernels recorded in several traces (both load orders) compile once.
    kernels = len({k["key"] for t in TRACES for k in inspect_json(t)["kernels"]})
    assert proc.stderr.count("PTX identical") == kernels, proc.stderr
    assert_one_progress_line_per_kernel(proc.stderr)
    return out


def served_by(archive: Path) -> dict:
    """What an archive serves, but its modules' IR bytes (Slang's serializer
    is not byte-reproducible) and where they lie in it."""
    index = inspect_json(archive)
    modules = [{k: v for k, v in m.items() if k not in ("irOffset", "irBytes")} for m in index["modules"]]
    return {"kernels": sorted(index["kernels"], key=lambda kernel: kernel["key"]),
            "modules": sorted(modules, key=lambda module: module["key"]),
            "unserved": sorted(index["unservedModules"], key=lambda module: json.dumps(module, sort_keys=True))}


def test_configurations_split_into_parts_serve_what_one_session_each_serves(archive: Path, tmp_path: Path) -> None:
    """One program a part: each configuration's parts are serialized in
    copies of one process that loaded the modules they share (slangpy's
    library, loaded by the wrappers' import) once. There are as many such
    processes as Slang workers at most: 4 jobs hold 4, if memory allows."""
    out = tmp_path / "parts.sprk"
    run_spreplay("compile", *map(str, TRACES), "-o", str(out), "--no-cache", "--programs-per-session", "1",
                 "--jobs", "4", "--report", str(out.with_suffix(".json")))
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["moduleSessions"] == 4 and report["moduleSessionsWarm"] >= 1, report
    assert served_by(out) == served_by(archive)


def test_every_recorded_kernel_is_rebuilt_byte_identically(archive: Path) -> None:
    index = inspect_json(archive)
    recorded = {k["key"] for t in TRACES for k in inspect_json(t)["kernels"]}
    assert {e["key"] for e in index["kernels"]} == recorded


def test_every_module_is_archived_as_verified_ir(archive: Path) -> None:
    described = inspect_json(archive)
    modules = described["modules"]
    # slangpy's library, the apps' modules and every wrapper, each proven to
    # rebuild its kernels byte for byte.
    wrappers = [m for m in modules if m["fromString"]]
    files = {m["name"] for m in modules if not m["fromString"]}
    assert "slangpy" in files or "slangpy.slang" in files
    # Each kernel's wrapper (the string module it is named after); slangpy
    # 0.42.0 also loads a string module of its own, slangpy_layout, with no kernel.
    kernels = [k for t in TRACES for k in inspect_json(t)["kernels"]]
    kernel_wrappers = {k["moduleNames"][0] for k in kernels}
    assert len(kernel_wrappers) == len({k["key"] for k in kernels})
    assert kernel_wrappers <= {m["name"] for m in wrappers}
    assert {m["name"] for m in wrappers} - kernel_wrappers <= {"slangpy_layout"}
    assert all(m["irBytes"] > 0 and m["files"] > 0 for m in modules)
    # local_modules was recorded with debug information: its modules carry
    # their source locations, so its PTX line tables rebuild byte for byte.
    assert {"shading.slang", "noise.slang"} <= files
    assert described["unservedModules"] == []


def test_debug_information_names_the_recording_machines_paths() -> None:
    # What makes this fixture hard: line information names the wrapper by the
    # H200's working directory, and CUDA's headers where its toolkit has them.
    data = (FIXTURES / "local_modules.capnp").read_bytes()
    assert b'.file\t1 "/work/main/samples/local_modules/' in data
    assert b'"/usr/local/cuda/targets/x86_64-linux/include/cuda_fp16.h"' in data


def test_module_load_order_changes_no_key(tmp_path: Path) -> None:
    # Loading noise.slang first names slangpy's library "slangpy.slang" instead
    # of "slangpy"; the kernels are the same, and so are their keys and code.
    first = inspect_json(FIXTURES / "local_modules.capnp")["kernels"]
    swapped = inspect_json(FIXTURES / "local_modules-noise-first.capnp")["kernels"]
    assert {k["key"] for k in first} == {k["key"] for k in swapped} and len(first) == 5
    names = {name for k in first + swapped for name in k["moduleNames"] if name.startswith("slangpy")}
    assert names == {"slangpy", "slangpy.slang"}
    archives = []
    for trace in ("local_modules.capnp", "local_modules-noise-first.capnp"):
        out = tmp_path / f"{trace}.sprk"
        run_spreplay("compile", str(FIXTURES / trace), "-o", str(out), "--no-cache", "--arch", "90", cwd=tmp_path)
        archives.append({k["key"]: [b["sha256"] for b in k["blobs"]] for k in inspect_json(out)["kernels"]})
    assert archives[0] == archives[1]


def test_every_kernel_has_sass_for_every_default_arch(archive: Path, tmp_path: Path) -> None:
    cuobjdump = _cuobjdump()
    index = inspect_json(archive)
    for entry in index["kernels"]:
        assert entry["sassArches"] == ARCHES
        fatbin = tmp_path / f"{entry['key'][:16]}.fatbin"
        run_spreplay("extract", str(archive), entry["key"][:16], "-o", str(fatbin))
        listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(fatbin)], capture_output=True,
                                 text=True, check=True).stdout
        for arch in ARCHES:
            assert f"sm_{arch}" in listing, listing
        assert ".ptx" in listing


def _cuobjdump() -> str:
    """The CUDA toolkit's (CUDA_HOME, which the Makefile sets, else /usr/local/cuda), else the wheel's."""
    toolkit = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "bin" / "cuobjdump"
    if toolkit.exists():
        return str(toolkit)
    import nvidia

    for base in nvidia.__path__:
        candidate = Path(base) / "cu13" / "bin" / "cuobjdump"
        if candidate.exists():
            return str(candidate)
    pytest.fail("cuobjdump is missing: run `make setup`")


def test_recompiling_an_unchanged_trace_does_no_slang_ptxas_or_modules_work(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    trace = str(FIXTURES / "autodiff.capnp")
    first = run_spreplay("compile", trace, "-o", str(tmp_path / "a.sprk"), "--cache", str(cache), "--arch", "90")
    second = run_spreplay("compile", trace, "-o", str(tmp_path / "b.sprk"), "--cache", str(cache), "--arch", "90")
    assert "(cached)" not in first.stderr
    assert second.stderr.count("PTX identical (cached)") == len(inspect_json(FIXTURES / "autodiff.capnp")["kernels"])
    # Nor any modules work: every session configuration's outcome is remembered.
    assert re.search(r"; 0 of [1-9]\d* session configuration\(s\) unchanged", first.stderr), first.stderr[-600:]
    sessions = re.search(r"; (\d+) of (\d+) session configuration\(s\) unchanged", second.stderr)
    assert sessions and sessions[1] == sessions[2] != "0", second.stderr[-600:]
    assert (tmp_path / "a.sprk").read_bytes() == (tmp_path / "b.sprk").read_bytes()


def test_a_damaged_trace_record_fails_only_its_kernels(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / "elementwise.capnp").read_bytes())
    # Flip a byte inside a source file's bytes: that record fails its checksum.
    at = data.find(b"import ew_util;")
    data[at + 3] ^= 0x20
    damaged = tmp_path / "damaged.capnp"
    damaged.write_bytes(bytes(data))
    archive = tmp_path / "k.sprk"
    # With an intact trace beside it, so that there is an archive to write.
    proc = run_spreplay("compile", str(damaged), str(FIXTURES / "local_modules.capnp"), "-o", str(archive),
                        "--no-cache", "--arch", "90", check=False)
    assert proc.returncode == 1
    assert "FAILED" in proc.stderr and "damaged region" in proc.stderr
    assert proc.stderr.count("PTX identical") == len(inspect_json(FIXTURES / "local_modules.capnp")["kernels"])
    assert_one_progress_line_per_kernel(proc.stderr)
    # The archive remembers why, so the app's process (and `explain`) can say it.
    failed = proc.stderr.count("] FAILED ")
    explained = run_spreplay("explain", str(damaged), str(archive), check=False)
    assert explained.returncode == 1
    assert explained.stdout.count("could not build it") == failed > 0, explained.stdout


def test_explain_says_which_kernels_an_archive_serves(tmp_path: Path) -> None:
    archive = tmp_path / "k.sprk"
    run_spreplay("compile", str(FIXTURES / "elementwise.capnp"), "-o", str(archive), "--no-cache", "--arch", "90")
    kernels = len(inspect_json(FIXTURES / "elementwise.capnp")["kernels"])
    served = run_spreplay("explain", str(FIXTURES / "elementwise.capnp"), str(archive))
    assert served.stdout.count("served  ") == kernels
    assert f"{kernels} of {kernels} kernel(s)" in served.stdout
    other = run_spreplay("explain", str(FIXTURES / "local_modules.capnp"), str(archive), check=False)
    assert other.returncode == 1
    assert other.stdout.count("not recorded: no trace the archive was built from holds this call site") == 5
    assert "0 of 5 kernel(s)" in other.stdout


def assert_one_progress_line_per_kernel(stderr: str) -> None:
    """`[n/total]` once for every kernel, compiled or failed, n counting up to total."""
    progress = [re.match(r"\[(\d+)/(\d+)\] ", line) for line in stderr.splitlines()]
    counts = [(int(m[1]), int(m[2])) for m in progress if m]
    assert counts, stderr
    total = counts[0][1]
    assert counts == [(n, total) for n in range(1, total + 1)], stderr


def test_inspect_verifies_every_blob(archive: Path, tmp_path: Path) -> None:
    index = inspect_json(archive)
    blob = index["kernels"][3]["blobs"][0]
    data = bytearray(archive.read_bytes())
    data[blob["offset"] + blob["size"] // 2] ^= 0xFF
    damaged = tmp_path / "damaged.sprk"
    damaged.write_bytes(bytes(data))
    proc = run_spreplay("inspect", str(damaged), check=False)
    assert proc.returncode == 1
    assert "fails its checksum" in proc.stderr and "1 of" in proc.stderr and "are damaged" in proc.stderr
    assert run_spreplay("inspect", str(archive)).returncode == 0


def test_inspect_and_verify_check_module_ir_too(archive: Path, tmp_path: Path) -> None:
    module = inspect_json(archive)["modules"][0]
    data = bytearray(archive.read_bytes())
    data[module["irOffset"] + module["irBytes"] // 2] ^= 0xFF
    damaged = tmp_path / "damaged.sprk"
    damaged.write_bytes(bytes(data))
    for command in ("inspect", "verify"):
        proc = run_spreplay(command, str(damaged), check=False)
        assert proc.returncode == 1, (command, proc.stderr)
        assert f"the IR of module '{module['name']}'" in proc.stderr, (command, proc.stderr)
        assert "1 of" in proc.stderr and "are damaged" in proc.stderr, (command, proc.stderr)
    intact = run_spreplay("verify", str(archive))
    assert intact.returncode == 0 and "intact" in intact.stdout, intact.stderr
    assert run_spreplay("verify", check=False).returncode == 2


def test_inspect_into_a_closed_pipe_ends_quietly() -> None:
    # As `spreplay inspect ... | head` once `head` has gone: through the Python
    # launcher, which hands the tool SIGPIPE ignored.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = subprocess.run([*spreplay_command(), "inspect", str(FIXTURES / "generic_mlp.capnp"), "--json"],
                              stdout=writer, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(writer)
    assert "Broken pipe" not in proc.stderr and "terminate" not in proc.stderr, proc.stderr
    assert proc.returncode == -13, proc.returncode  # ended by SIGPIPE, as any Unix tool


def test_compiles_with_nvidias_cuda_wheels_as_pip_installs_them(tmp_path: Path) -> None:
    # nvidia/cu13 as `pip install "spreplay[compile]"` leaves it: bin/, lib/ with
    # libnvrtc.so.13 and no libnvrtc.so, include/ beside lib/. quantize_half
    # uses half, so Slang must find cuda_fp16.h there too.
    from spreplay._tool import pypi_cuda, tool_environment

    wheels = pypi_cuda()
    assert wheels is not None, "scripts/setup installs NVIDIA's CUDA wheels"
    assert not (wheels / "lib" / "libnvrtc.so").exists() and not (wheels / "lib64").exists()
    # Without a toolkit the tool is pointed at them.
    assert tool_environment({"CUDA_HOME": str(tmp_path / "no-toolkit")})["CUDA_HOME"] == str(wheels)
    env = {k: v for k, v in clean_env().items() if k != "CUDA_PATH"}
    # The loader's own log says which NVRTC, ptxas and nvJitLink the tool
    # and its children opened: a toolkit in /usr/local/cuda would otherwise
    # hide a failed lookup.
    # The default builds SASS with ptxas and never opens nvJitLink.
    for name, flags, tool, opened_file, unopened_file in (
            ("default", [], "with ptxas Build cuda_13.0", "bin/ptxas", "libnvJitLink"),
            ("nvjitlink", ["--sass", "nvjitlink"], "with nvJitLink 13.0", "lib/libnvJitLink.so.13", "bin/ptxas")):
        loads = tmp_path / name / "ld"
        loads.parent.mkdir()
        proc = subprocess.run([*spreplay_command(), "compile", str(FIXTURES / "local_modules.capnp"),
                               "-o", str(tmp_path / name / "k.sprk"), "--no-cache", "--arch", "90", *flags],
                              env={**env, "CUDA_HOME": str(wheels), "LD_DEBUG": "files",
                                   "LD_DEBUG_OUTPUT": str(loads)},
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("PTX identical") == 5 and tool in proc.stderr, proc.stderr
        opened = "".join(log.read_text() for log in loads.parent.glob("ld.*"))
        assert f"file={wheels}/lib/libnvrtc.so.13 " in opened and f"{wheels}/{opened_file}" in opened, name
        assert unopened_file not in opened and "/usr/local/cuda" not in opened, name


def test_archives_reject_damage_with_a_clear_error(archive: Path, tmp_path: Path) -> None:
    data = archive.read_bytes()
    truncated = tmp_path / "truncated.sprk"
    truncated.write_bytes(data[: len(data) // 2])
    proc = run_spreplay("inspect", str(truncated), check=False)
    assert proc.returncode == 1 and "truncated" in proc.stderr
    foreign = tmp_path / "foreign.sprk"
    foreign.write_bytes(b"SPRARCH\0" + bytes(56))
    proc = run_spreplay("inspect", str(foreign), check=False)
    assert proc.returncode == 1 and "spreplay compile" in proc.stderr


def test_command_line_errors_say_what_to_do(tmp_path: Path) -> None:
    proc = run_spreplay("compile", check=False)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = run_spreplay("compile", str(FIXTURES / "autodiff.capnp"), "-o", str(tmp_path / "x"), "--arch", "sm_ab",
                        check=False)
    assert proc.returncode == 2 and "bad arch" in proc.stderr
    proc = run_spreplay("compile", str(tmp_path / "missing.capnp"), "-o", str(tmp_path / "x"), check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stderr


def json_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in json_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in json_keys(v)}
    return set()


def test_every_json_the_tool_writes_names_its_fields_in_camel_case(archive: Path) -> None:
    documents = {
        "inspect ARCHIVE": inspect_json(archive),
        "inspect TRACE": inspect_json(FIXTURES / "local_modules.capnp"),
        "compile --report": json.loads(archive.with_suffix(".json").read_text()),
    }
    for name, document in documents.items():
        keys = json_keys(document)
        assert {"kernels"} <= keys, name
        snake = sorted(k for k in keys if not re.fullmatch(r"[a-z][A-Za-z0-9]*", k))
        # Keys that are data, not field names: SASS times per architecture.
        snake = [k for k in snake if not re.fullmatch(r"sm_\d+", k)]
        assert snake == [], f"{name}: {snake}"


def test_inspect_shows_modules_and_functions_in_full() -> None:
    # elementwise loads its module by absolute path: a long name.
    trace = FIXTURES / "elementwise.capnp"
    call_sites = inspect_json(trace)["callSites"]
    text = run_spreplay("inspect", str(trace)).stdout
    assert any(len(c["module"]) > 24 for c in call_sites)
    for call_site in call_sites:
        assert f"{call_site['module']}  " in text and call_site["function"] in text

