"""The `spreplay` console script: runs the native tool for the slangpy it
replays with (this environment's, or the one `--slangpy DIR` names)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._slangpy_location import SlangpyNotFound
from ._supported_builds import UnsupportedBuild
from ._tool import ToolMissing, slangpy_for_tool, tool_environment, tool_for


def _take_slangpy_option(arguments: list[str]) -> tuple[Path | None, list[str]]:
    """`--slangpy DIR` (or `--slangpy=DIR`), wherever it is, and the rest."""
    rest: list[str] = []
    slangpy_dir: Path | None = None
    iterator = iter(arguments)
    for argument in iterator:
        if argument == "--":  # the rest belongs to the command
            rest += [argument, *iterator]
            break
        if argument == "--slangpy" or argument.startswith("--slangpy="):
            value = argument.split("=", 1)[1] if "=" in argument else next(iterator, None)
            if not value:
                sys.exit("spreplay: --slangpy needs a directory: a slangpy package folder, or the "
                         "site-packages folder that holds one")
            if slangpy_dir is not None:
                sys.exit("spreplay: --slangpy is given twice; name one slangpy")
            slangpy_dir = Path(value)
        else:
            rest.append(argument)
    return slangpy_dir, rest


def main() -> None:
    slangpy_dir, arguments = _take_slangpy_option(sys.argv[1:])
    try:
        install = slangpy_for_tool(slangpy_dir)
        binary = tool_for(arguments[0] if arguments else "help", install)
    except (ToolMissing, SlangpyNotFound, UnsupportedBuild) as error:
        sys.exit(f"spreplay: {error}")
    os.execve(binary, [str(binary), *arguments], tool_environment(install=install))
