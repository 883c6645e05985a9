"""The `spreplay` console script: runs the native tool for the slangpy it
replays with (this environment's, or the one `--slangpy DIR` names)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._slangpy_location import SlangpyNotFound
from ._tool import ToolMissing, UnsupportedBuild, build_for_tool, slangpy_for_tool, tool_binary, tool_environment


def _take_slangpy_option(arguments: list[str]) -> tuple[Path | None, list[str]]:
    """`--slangpy DIR` (or `--slangpy=DIR`), wherever it is, and the rest."""
    rest: list[str] = []
    slangpy_dir: Path | None = None
    iterator = iter(arguments)
    for argument in iterator:
        if argument == "--slangpy":
            value = next(iterator, None)
            if value is None:
                sys.exit("spreplay: --slangpy needs a directory: a slangpy package folder, or the "
                         "site-packages folder that holds one")
            slangpy_dir = Path(value)
        elif argument.startswith("--slangpy="):
            slangpy_dir = Path(argument.split("=", 1)[1])
        else:
            rest.append(argument)
    return slangpy_dir, rest


def main() -> None:
    slangpy_dir, arguments = _take_slangpy_option(sys.argv[1:])
    try:
        install = slangpy_for_tool(slangpy_dir)
        binary = tool_binary(build_for_tool(install))
    except (ToolMissing, SlangpyNotFound) as error:
        sys.exit(f"spreplay: {error}")
    except UnsupportedBuild as error:
        if arguments[:1] not in (["inspect"], ["verify"], ["merge"], ["version"]):
            sys.exit(f"spreplay: {error}")
        binary = tool_binary(build_for_tool(None))  # these read files and need no Slang
    os.execve(binary, [str(binary), *arguments], tool_environment(install=install))
