"""spreplay: slangpy kernels compiled ahead of time.

Activated by environment variables through spreplay.pth; see README.md. The
functions here serve tests, tools and apps that want a summary. Importing the
package stays cheap: the native library loads only when something needs it.
"""

__version__ = "0.1.0"
__all__ = ["install_hooks", "summary", "__version__"]


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
