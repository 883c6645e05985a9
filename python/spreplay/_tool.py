"""Where the native `spreplay` tool is, and the environment it runs in.

There is one tool per supported Slang build, each compiled against that
build's slang.h. The tool for a slangpy replays with that slangpy's Slang:
the environment's by default, or the one `--slangpy DIR` names.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from ._native import library_dir
from ._slangpy_location import SlangpyInstall, SlangpyNotFound, locate_slangpy, slangpy_install_at
from ._supported_builds import SupportedBuild, UnsupportedBuild, select_build, supported_builds


# The libslang-compiler the tool replays with (replayer/replayer_slang.cc).
SLANG_LIBRARY_VARIABLE = "SPREPLAY_SLANG_LIBRARY"


class ToolMissing(RuntimeError):
    """The native tool is not installed with this package."""


def slangpy_for_tool(slangpy_dir: Path | None = None) -> SlangpyInstall | None:
    """The slangpy the tool replays with: `slangpy_dir`'s, else this
    environment's; None where there is none (inspect, verify and merge need
    no Slang)."""
    if slangpy_dir is not None:
        return slangpy_install_at(slangpy_dir)
    try:
        return locate_slangpy()
    except SlangpyNotFound:
        return None


def build_for_tool(install: SlangpyInstall | None) -> SupportedBuild:
    """The build whose tool runs for `install`. Raises UnsupportedBuild for a
    slangpy this spreplay does not support; with no slangpy, the newest."""
    if install is None:
        return supported_builds()[-1]
    return select_build(install.version, install.slang_library)


# The commands that read spreplay's own files and never call Slang: they
# run with any slangpy, or none.
COMMANDS_WITHOUT_SLANG = ("inspect", "verify", "merge", "version", "explain", "extract", "help", "--help", "-h")


def tool_for(command: str, install: SlangpyInstall | None) -> Path:
    """The tool that runs `command` for `install`'s slangpy. Raises
    UnsupportedBuild for a slangpy this spreplay does not support, unless
    the command needs no Slang."""
    try:
        build = build_for_tool(install)
    except UnsupportedBuild:
        if command not in COMMANDS_WITHOUT_SLANG:
            raise
        build = build_for_tool(None)
    return tool_binary(build)


def tool_binary(build: SupportedBuild) -> Path:
    binary = library_dir() / build.native_subdirectory / "spreplay"
    if not binary.exists():
        raise ToolMissing(f"{binary} is missing: this installation of spreplay has no build for Slang "
                          f"{build.slang}; install a spreplay release wheel, which has one for every "
                          "supported slangpy release")
    return binary


def tool_environment(base: dict[str, str] | None = None, install: SlangpyInstall | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) as the tool needs it, to
    replay with `install`'s Slang (default: this environment's slangpy)."""
    env = dict(os.environ if base is None else base)
    # The tool replays kernels with the Slang of the slangpy installed here,
    # which is what keeps an archive's kernels identical to what slangpy builds.
    try:
        slangpy = install or locate_slangpy()
        slang_dir = str(slangpy.package_dir)
        paths = [slang_dir, *filter(None, env.get("LD_LIBRARY_PATH", "").split(os.pathsep))]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
        # By its path: a release wheel's tool searches its own RPATH (the
        # slangpy beside spreplay) before LD_LIBRARY_PATH, and another
        # slangpy's library of the same Slang build has the same file name.
        env[SLANG_LIBRARY_VARIABLE] = str(slangpy.slang_library)
    except Exception as error:  # the tool itself explains a missing Slang
        print(f"spreplay: warning: {error}", file=sys.stderr)
    # A CUDA toolkit wins; without one, CUDA's compilers from NVIDIA's PyPI
    # wheels (`pip install "spreplay[compile]"`), as they are installed.
    system = Path(env.get("CUDA_HOME", "/usr/local/cuda"))
    if not (system / "bin" / "ptxas").exists() and (wheels := pypi_cuda()) is not None:
        env["CUDA_HOME"] = str(wheels)
    return env


def pypi_cuda() -> Path | None:
    """The CUDA 13 that NVIDIA's wheels install (nvidia/cu13: bin/ptxas,
    lib/libnvrtc.so.13, include/), if they are installed here."""
    spec = importlib.util.find_spec("nvidia")
    for location in (spec.submodule_search_locations or []) if spec else []:
        root = Path(location) / "cu13"
        if (root / "bin" / "ptxas").exists():
            return root
    return None
