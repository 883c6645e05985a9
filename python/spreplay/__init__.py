"""spreplay: slangpy kernels compiled ahead of time.

Activated by environment variables through spreplay.pth; see README.md. The
functions here serve tests, tools and apps that want a summary, and build
scripts (compile, merge, inspect). Importing the package stays cheap: the native
library loads only when something needs it.
"""

__version__ = "0.1.0"
__all__ = [
    "ArchiveInfo",
    "ArchivedKernel",
    "ArchivedModule",
    "CompileError",
    "CompileResult",
    "CompiledKernel",
    "RecordedKernel",
    "SpreplayError",
    "TraceInfo",
    "__version__",
    "compile",
    "inspect",
    "merge",
    "cmake_dir",
    "install_hooks",
    "summary",
]


# Loaded on first use (PEP 562): spreplay.pth imports this package into every
# Python process of the environment, which must not pay for the build API.
_API_NAMES = frozenset({
    "ArchiveInfo", "ArchivedKernel", "ArchivedModule", "CompileError", "CompileResult",
    "CompiledKernel", "RecordedKernel", "SpreplayError", "TraceInfo", "compile", "inspect", "merge",
})


def __getattr__(name: str):  # noqa: ANN202
    if name in _API_NAMES:
        from . import _api

        return getattr(_api, name)
    raise AttributeError(f"module 'spreplay' has no attribute {name!r}")


def cmake_dir() -> str:
    """The directory of spreplayConfig.cmake, for find_package(spreplay CONFIG)."""
    from pathlib import Path

    return str(Path(__file__).resolve().parent / "cmake")


def install_hooks(verbose: bool = False):  # noqa: ANN201 (returns the private Native handle)
    """Hooks Slang in this process. Must run before slangpy is imported."""
    from ._hooks import install

    return install(verbose=verbose)


def summary() -> dict:
    """This process's kernel requests: how many were served from the archive,
    compiled, or refused, and why each miss missed."""
    from ._hooks import native

    handle = native()
    if handle is None:
        return {"served": 0, "compiled": 0, "notKeyable": 0, "refused": 0, "active": False}
    return {**handle.summary(), "active": True}
