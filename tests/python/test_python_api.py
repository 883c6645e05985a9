"""spreplay.compile and spreplay.inspect, the build-script API: the same tool
as the `spreplay` command, with typed results, on an H200 trace, no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

import spreplay
from conftest import FIXTURES, SLANG_BUILD, SLANGPY_VERSION, inspect_json, run_spreplay

TRACE = FIXTURES / "elementwise.capnp"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> spreplay.CompileResult:
    out = tmp_path_factory.mktemp("api") / "kernels.sprk"
    return spreplay.compile(TRACE, out, arches=[90], jobs=2, use_cache=False)


def test_one_version_everywhere(compiled: spreplay.CompileResult) -> None:
    """The package, the tool and what it writes into archives report the one
    version written in spreplay/__init__.py."""
    import importlib.metadata

    version = spreplay.__version__
    assert importlib.metadata.version("spreplay") == version
    assert run_spreplay("version").stdout.split()[:2] == ["spreplay", version]
    assert spreplay.inspect(compiled.archive).spreplay_version == version


def test_compile_returns_what_the_tool_reports(compiled: spreplay.CompileResult) -> None:
    trace = inspect_json(TRACE)
    recorded = {k["key"] for k in trace["kernels"]}
    assert compiled.archive.is_file() and compiled.archive_bytes == compiled.archive.stat().st_size
    assert {k.key for k in compiled.kernels} == recorded
    assert compiled.failed == () and all(k.compiled and k.fatbin_bytes > 0 for k in compiled.kernels)
    assert all(set(k.sass_seconds) == {"sm_90"} for k in compiled.kernels)
    assert compiled.modules_archived > len(recorded) and compiled.modules_refused == 0
    assert "PTX identical" in compiled.log
    # The trace's one session built every kernel: the app's whole JIT counts.
    assert compiled.app_compile_seconds == pytest.approx(sum(k["compileSeconds"] for k in trace["kernels"]))
    assert compiled.app_module_load_seconds == pytest.approx(sum(m["loadSeconds"] for m in trace["moduleLoads"]))


def test_inspect_types_an_archive(compiled: spreplay.CompileResult) -> None:
    info = spreplay.inspect(compiled.archive)
    assert isinstance(info, spreplay.ArchiveInfo)
    assert {k.key for k in info.kernels} == {k.key for k in compiled.kernels}
    assert all(k.sass_arches == (90,) for k in info.kernels)
    assert len(info.modules) == compiled.modules_archived and info.unserved_modules == ()
    assert info.toolchain == f"slangpy {SLANGPY_VERSION} slang {SLANG_BUILD}"


def test_inspect_types_a_trace() -> None:
    info = spreplay.inspect(TRACE)
    assert isinstance(info, spreplay.TraceInfo)
    assert len(info.kernels) == 8 and info.call_sites == 8 and info.devices == 1 and not info.damaged
    assert all(k.entry_point == "compute_main" and k.code_bytes > 0 for k in info.kernels)


def test_errors_carry_the_tools_message(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.capnp"
    foreign.write_bytes(b"not a trace at all" * 10)
    with pytest.raises(spreplay.SpreplayError) as inspected:
        spreplay.inspect(foreign)
    assert "foreign.capnp" in str(inspected.value)
    with pytest.raises(spreplay.CompileError) as compiled:
        spreplay.compile(foreign, tmp_path / "kernels.sprk", use_cache=False)
    assert "foreign.capnp" in str(compiled.value)
    assert not (tmp_path / "kernels.sprk").exists()
    with pytest.raises(spreplay.SpreplayError) as merged:
        spreplay.merge([foreign], tmp_path / "merged.sprk")
    assert "foreign.capnp" in str(merged.value)
    assert not (tmp_path / "merged.sprk").exists()
