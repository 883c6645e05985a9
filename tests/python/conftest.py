"""Shared paths and helpers for the CPU test suite (no GPU needed)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from spreplay._slangpy_location import locate_slangpy
from spreplay._supported_builds import slang_build_of_library

ROOT = Path(__file__).resolve().parents[2]
# The traces recorded on an H200 with the slangpy this interpreter has: each
# supported release has its own, since its toolchain is in every key.
SLANGPY_VERSION = importlib.metadata.version("slangpy")
FIXTURES = ROOT / "tests" / "fixtures" / "h200" / f"slangpy-{SLANGPY_VERSION}"
# The Slang build that slangpy bundles, as its library's file name says.
SLANG_BUILD = slang_build_of_library(locate_slangpy().slang_library)


def spreplay_command() -> list[str]:
    """The spreplay tool installed with this interpreter."""
    return [sys.executable, "-m", "spreplay"]


def run_spreplay(*args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([*spreplay_command(), *args], env=clean_env(), capture_output=True, text=True, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"spreplay {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def inspect_json(path: Path) -> dict:
    return json.loads(run_spreplay("inspect", str(path), "--json").stdout)


def clean_env(**overrides: str) -> dict[str, str]:
    """This environment without slangpy's and spreplay's variables, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLANGPY_", "SPREPLAY_"))}
    env.update(overrides)
    return env


def slangpy_venv(version: str) -> Path:
    """A virtualenv with slangpy==`version` and this checkout's spreplay wheel
    (scripts/slangpy-venv), made once and kept in build/venvs."""
    made = subprocess.run([str(ROOT / "scripts" / "slangpy-venv"), version], check=True, capture_output=True,
                          text=True)
    return Path(made.stdout.strip())


def run_python(code: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=clean_env(**env), capture_output=True, text=True,
                          cwd=cwd)


def compile_trace(trace: Path, out: Path, name: str, cache: Path | None) -> dict:
    archive, report = out / f"{name}.sprk", out / f"{name}.json"
    run_spreplay("compile", str(trace), "-o", str(archive), "--arch", "90", "--jobs", "2", "--report", str(report),
                 *(["--cache", str(cache)] if cache else ["--no-cache"]))
    return {"report": json.loads(report.read_text()), "index": inspect_json(archive)}


def served(compiled: dict) -> dict:
    """What an archive serves, but its modules' IR bytes: Slang's serializer
    is not byte-reproducible, and the cache archives the first bytes verified."""
    index = compiled["index"]
    modules = [{k: v for k, v in module.items() if k not in ("irOffset", "irBytes")} for module in index["modules"]]
    return {"kernels": sorted(index["kernels"], key=lambda kernel: kernel["key"]),
            "modules": sorted(modules, key=lambda module: module["key"]),
            "unserved": sorted(index["unservedModules"], key=lambda module: json.dumps(module, sort_keys=True))}
