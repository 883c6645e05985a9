"""tools/check_slangpy_release.py on real slangpy wheels from PyPI: a
supported release passes both checks, and one whose wrapped function takes
other parameters (0.41.0's CodeGen.finish has no `prelude`) fails, naming it."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

TOOL = ROOT / "tools" / "check_slangpy_release.py"


def check(version: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), version, "--against", "0.43.1"], capture_output=True, text=True)


def test_a_supported_release_of_another_slang_build_passes() -> None:
    proc = check("0.42.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "1. Header: slangpy 0.42.0 bundles Slang 2026.5.2" in lines
    assert any(line.strip().startswith("every slot spreplay patches keeps its method and signature") for line in lines)
    assert "   slangpy.bindings.codegen.CodeGen.finish: unchanged" in lines
    assert not [line for line in lines if "FAIL" in line]


def test_a_release_whose_wrapped_function_changed_fails() -> None:
    proc = check("0.41.0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (failure,) = [line for line in proc.stdout.splitlines() if "FAIL" in line]
    assert failure.strip().startswith("FAIL: slangpy.bindings.codegen.CodeGen.finish took (")
    assert "prelude" in failure.split(" takes ")[0] and "prelude" not in failure.split(" takes ")[1]
