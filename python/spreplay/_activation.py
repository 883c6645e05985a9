"""Turns spreplay on from environment variables, at interpreter start-up.

spreplay.pth imports this module in every interpreter of the environment, so
it must cost nothing when no spreplay variable is set: it reads os.environ and
returns. Nothing here may raise into the interpreter's start-up.
"""

# Only os at import time: json, platform and the rest load when a variable is
# set, so that an inactive spreplay costs an interpreter nothing measurable.
import os

RECORD = "SLANGPY_RECORD"
KERNELS = "SLANGPY_KERNELS"
MISSES = "SLANGPY_KERNELS_MISSES"
VERBOSE = "SPREPLAY_VERBOSE"


def switch_is_on(variable: str) -> bool:
    """The reading of every on/off variable: unset, empty, 0, false and no are off."""
    return os.environ.get(variable, "").strip().lower() not in ("", "0", "false", "no")


def _process_description() -> str:
    import json
    import platform
    import sys
    import time

    from . import __version__

    return json.dumps(
        {
            "formatVersion": 1,
            "spreplayVersion": __version__,
            "slangpyVersion": _slangpy_version(),
            "pythonVersion": platform.python_version(),
            "platform": f"{platform.system()}-{platform.release()} {platform.machine()} "
            f"{'-'.join(platform.libc_ver())}",
            "processId": os.getpid(),
            "startedAtUnixMs": int(time.time() * 1000),
            "commandLine": list(sys.argv) if hasattr(sys, "argv") else [],
        }
    )


def _slangpy_version() -> str:
    from ._slangpy_location import locate_slangpy

    return locate_slangpy().version


def start_recording(path: str, verbose: bool) -> None:
    """Records every kernel Slang compiles in this process, and its call site."""
    import json
    from . import _hooks
    from ._slangpy_patches import call_site_hub

    native = _hooks.install(verbose=verbose)
    native.record_open(os.path.abspath(path), _process_description())
    hub = call_site_hub(_hooks.build().patches)
    hub.call_site_observers.append(lambda description: native.record_json("callSite", json.dumps(description)))
    hub.device_observers.append(lambda description: native.record_json("device", json.dumps(description)))


_activated = False


def activate_from_environment() -> None:
    # site.py can process spreplay.pth twice, when a site-packages directory
    # is reachable under two names (a venv's lib64 -> lib symlink).
    global _activated
    if _activated:
        return
    _activated = True
    record_path = os.environ.get(RECORD)
    archive_path = os.environ.get(KERNELS)
    if not record_path and not archive_path:
        return
    verbose = switch_is_on(VERBOSE)
    try:
        # A process has one recorder: the misses trace when serving, unless
        # SLANGPY_RECORD already records every kernel that compiles.
        misses_path = os.environ.get(MISSES) if archive_path else None
        if record_path and misses_path:
            import sys

            print(f"spreplay: {MISSES} ignored: {RECORD} records every compiled kernel to {record_path}",
                  file=sys.stderr)
        if record_path or misses_path:
            start_recording(record_path or misses_path, verbose)
        if archive_path:
            from ._serving import start_serving

            start_serving(archive_path, verbose)
    except Exception as error:  # start-up must never fail because of spreplay
        import sys

        from ._supported_builds import UnsupportedBuild

        if isinstance(error, UnsupportedBuild):
            print(f"spreplay: not active, the app runs as stock: {error}", file=sys.stderr)
        else:
            print(f"spreplay: not active: {error}", file=sys.stderr)
