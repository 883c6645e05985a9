"""SLANGPY_KERNELS on a machine without a GPU: loading, validation and the
messages users see. Serving itself is proven on the GPU (tests/gpu/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, SLANGPY_VERSION, clean_env, run_python, run_spreplay, slangpy_venv
from spreplay._supported_builds import supported_builds

CREATE_DEVICE = "import slangpy as spy; spy.create_device(spy.DeviceType.cpu); print('ok')"


@pytest.fixture(scope="module")
def autodiff_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The H200 autodiff trace compiled for sm_90, once for this module; read only."""
    archive = tmp_path_factory.mktemp("archive") / "kernels.sprk"
    run_spreplay("compile", str(FIXTURES / "autodiff.capnp"), "-o", str(archive), "--arch", "90", "--no-cache")
    return archive


def test_an_unusable_archive_is_one_clear_message_and_slangpy_works(tmp_path: Path) -> None:
    broken = tmp_path / "kernels.sprk"
    broken.write_bytes(b"not an archive at all")
    proc = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(broken)})
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "ok", proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("spreplay")]
    assert len(lines) == 1 and "cannot serve kernels" in lines[0] and "compile as usual" in lines[0]


def test_strict_mode_with_an_unusable_archive_says_every_kernel_will_fail(tmp_path: Path) -> None:
    proc = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(tmp_path / "missing.sprk"),
                                      "SLANGPY_KERNELS_STRICT": "1"})
    assert "every kernel will fail" in proc.stderr and "does not exist" in proc.stderr


def test_an_archive_for_another_toolchain_is_refused_up_front(tmp_path: Path, autodiff_archive: Path) -> None:
    archive = tmp_path / "kernels.sprk"
    shutil.copy(autodiff_archive, archive)
    data = bytearray(archive.read_bytes())
    # The toolchain is in the checksummed index: a mismatch made by hand is damage.
    at = data.find(f"slangpy {SLANGPY_VERSION}".encode())
    data[at + 8] = ord("9")
    archive.write_bytes(bytes(data))
    proc = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(archive)})
    assert proc.returncode == 0 and ("damaged" in proc.stderr or "checksum" in proc.stderr), proc.stderr


def another_release() -> str:
    """A supported slangpy release other than this environment's."""
    return next(build.slangpy for build in supported_builds() if build.slangpy != SLANGPY_VERSION)


@pytest.fixture(scope="module")
def archive_of_another_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Another supported release's H200 elementwise trace, compiled with that
    release's spreplay tool in a virtualenv of its own (scripts/slangpy-venv)."""
    version = another_release()
    venv = slangpy_venv(version)
    archive = tmp_path_factory.mktemp("other-release") / "kernels.sprk"
    trace = ROOT / "tests" / "fixtures" / "h200" / f"slangpy-{version}" / "elementwise.capnp"
    subprocess.run([f"{venv}/bin/python", "-m", "spreplay", "compile", str(trace), "-o", str(archive), "--arch", "90",
                    "--no-cache"], env=clean_env(), check=True, capture_output=True)
    return version, archive


def test_an_archive_of_another_release_is_one_line_and_the_app_runs_as_stock(
        archive_of_another_release: tuple[str, Path]) -> None:
    version, archive = archive_of_another_release
    app = [sys.executable, str(ROOT / "tests" / "python" / "cpu_call_sites.py")]
    cwd = ROOT / "samples" / "autodiff"
    stock = subprocess.run(app, env=clean_env(), capture_output=True, text=True, cwd=cwd)
    served = subprocess.run(app, env=clean_env(SLANGPY_KERNELS=str(archive)), capture_output=True, text=True, cwd=cwd)
    assert served.returncode == stock.returncode == 0, served.stderr
    assert served.stdout == stock.stdout
    (line,) = [line for line in served.stderr.splitlines() if line.startswith("spreplay")]
    assert f"{archive} was built for slangpy {version} slang " in line, line
    assert f"but this process runs slangpy {SLANGPY_VERSION} slang " in line
    assert "every kernel compiles as usual" in line


@pytest.mark.parametrize("off", ["0", "false", "No", " FALSE "])
def test_switches_set_to_an_off_word_are_off(tmp_path: Path, autodiff_archive: Path, off: str) -> None:
    quiet = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(autodiff_archive), "SPREPLAY_VERBOSE": off,
                                       "SLANGPY_KERNELS_SUMMARY": off})
    assert quiet.returncode == 0, quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("spreplay")], quiet.stderr
    lenient = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(tmp_path / "missing.sprk"),
                                         "SLANGPY_KERNELS_STRICT": off})
    assert "compile as usual" in lenient.stderr and "every kernel will fail" not in lenient.stderr, lenient.stderr


def test_switches_set_to_any_other_word_are_on(autodiff_archive: Path) -> None:
    loud = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(autodiff_archive), "SPREPLAY_VERBOSE": "yes",
                                      "SLANGPY_KERNELS_SUMMARY": "on"})
    assert loud.returncode == 0, loud.stderr
    assert "spreplay: hooked Slang global session" in loud.stderr
    assert "kernel(s) served from" in loud.stderr


def test_summary_is_printed_at_exit_on_request(autodiff_archive: Path) -> None:
    archive = autodiff_archive
    proc = run_python(CREATE_DEVICE, {"SLANGPY_KERNELS": str(archive), "SLANGPY_KERNELS_SUMMARY": "1"})
    assert proc.returncode == 0, proc.stderr
    assert f"spreplay: 0 kernel(s) served from {archive}, 0 compiled" in proc.stderr


def test_summary_api_reports_the_archive(autodiff_archive: Path) -> None:
    archive = autodiff_archive
    code = CREATE_DEVICE + "\nimport spreplay, json; print(json.dumps(spreplay.summary()))"
    proc = run_python(code, {"SLANGPY_KERNELS": str(archive)})
    assert proc.returncode == 0, proc.stderr
    import json

    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["active"] and summary["archiveKernels"] == 8 and summary["served"] == 0


def test_the_summary_counts_modules_as_the_benchmarks_read_it(autodiff_archive: Path) -> None:
    """On the CPU device nothing of an H200 archive applies: every module the app
    loads goes through Slang's front end, and the summary says so in the form
    bench/app_output.py parses."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from app_output import SERVED

    app = Path(__file__).resolve().parent / "cpu_call_sites.py"
    proc = subprocess.run([sys.executable, str(app)], capture_output=True, text=True,
                          env=clean_env(SLANGPY_KERNELS=str(autodiff_archive), SLANGPY_KERNELS_SUMMARY="1"))
    assert proc.returncode == 0, proc.stderr
    match = SERVED.search(proc.stderr)
    assert match and match["modules_served"] == "0" and int(match["modules_compiled"]) > 0, proc.stderr
    assert "loaded from source module" in proc.stderr, proc.stderr
