"""Finds the installed slangpy and its bundled Slang without importing slangpy."""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SlangpyInstall:
    package_dir: Path
    version: str
    slang_library: Path


class SlangpyNotFound(RuntimeError):
    pass


# Asked by the hooks and by the recorder's process description, at start-up.
@functools.cache
def locate_slangpy() -> SlangpyInstall:
    spec = importlib.util.find_spec("slangpy")
    if spec is None or not spec.submodule_search_locations:
        raise SlangpyNotFound("slangpy is not installed in this Python environment")
    return slangpy_install_at(Path(list(spec.submodule_search_locations)[0]))


def slangpy_install_at(package_dir: Path) -> SlangpyInstall:
    """The slangpy installed in `package_dir` (a `slangpy` package folder, or
    the site-packages folder that holds one), without importing it."""
    if not (package_dir / "__init__.py").exists() and (package_dir / "slangpy" / "__init__.py").exists():
        package_dir = package_dir / "slangpy"
    if not (package_dir / "__init__.py").exists():
        raise SlangpyNotFound(f"{package_dir} holds no slangpy package")
    libraries = sorted(package_dir.glob("libslang-compiler.so*"))
    if not libraries:
        raise SlangpyNotFound(f"no libslang-compiler.so* next to slangpy in {package_dir}")
    return SlangpyInstall(
        package_dir=package_dir,
        version=_version_of(package_dir),
        slang_library=libraries[-1],
    )


def _version_of(package_dir: Path) -> str:
    # The installer's record next to the package names its version; asking
    # importlib.metadata costs about 20 ms of every served process's start,
    # and would answer for this environment's slangpy, not this folder's.
    records = list(package_dir.parent.glob("slangpy-*.dist-info"))
    if len(records) == 1:
        return records[0].name[len("slangpy-"):-len(".dist-info")]
    import importlib.metadata

    try:
        distribution = importlib.metadata.distribution("slangpy")
    except importlib.metadata.PackageNotFoundError:
        distribution = None
    if distribution is not None and Path(str(distribution.locate_file("slangpy"))).resolve() == package_dir.resolve():
        return distribution.version
    raise SlangpyNotFound(f"no installer's record (slangpy-VERSION.dist-info) says which slangpy {package_dir} is: "
                          "name a slangpy that pip installed")
