"""The `spreplay` console script: runs the native tool installed with the package."""

from __future__ import annotations

import os
import sys

from ._tool import ToolMissing, tool_binary, tool_environment


def main() -> None:
    try:
        binary = tool_binary()
    except ToolMissing as error:
        sys.exit(str(error))
    os.execve(binary, [str(binary), *sys.argv[1:]], tool_environment())
