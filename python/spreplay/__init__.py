"""spreplay: slangpy kernels compiled ahead of time.

Activated by environment variables through a .pth file; see README.md. The
functions here are for tests, tools and apps that want a summary.
"""

from __future__ import annotations

from ._hooks import install as install_hooks
from ._hooks import native as _native_or_none

__all__ = ["install_hooks", "counts"]


def counts() -> dict[str, int]:
    """Kernel requests in this process: served from an archive, compiled, not keyable."""
    native = _native_or_none()
    return native.counts() if native else {"served": 0, "compiled": 0, "not_keyable": 0}
