"""The vtable slots each Slang build's native library patches are the ones
that build's own slang.h declares, and the methods spreplay hooks have the
same signature in every supported build.

The library reports its slots as its compiler laid them out (VtableSlotOf);
tools/slang_abi.py reads the header's declarations from clang's AST. A
library built against the wrong header, or a release that moved, renamed or
re-typed a hooked method, fails here before anything runs."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from spreplay._native import library_dir
from spreplay._slangpy_location import locate_slangpy
from spreplay._supported_builds import SupportedBuild, supported_builds
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from slang_abi import declared_slots, patched_slots  # noqa: E402

HEADERS = ROOT / "build" / "slang-abi"
SLANG_BUILDS = sorted({build.slang: build for build in reversed(supported_builds())}.values(),
                      key=lambda build: build.slang)


def slang_header(build: SupportedBuild) -> Path:
    """The slang.h of the first supported slangpy release bundling `build`'s
    Slang: this environment's, or fetched from its wheel."""
    here = locate_slangpy()
    if here.slang_library.name.endswith(f".so.0.{build.slang}"):
        return here.package_dir / "include" / "slang.h"
    destination = HEADERS / f"slangpy-{build.slangpy}"
    subprocess.run([sys.executable, str(ROOT / "tools" / "fetch_slangpy_abi.py"), build.slangpy, str(destination)],
                   check=True)
    return destination / "slangpy" / "include" / "slang.h"


@cache
def declared_vtables(build: SupportedBuild) -> dict[tuple[str, int], tuple[str, str]]:
    """(interface, slot) -> (method, type), as the header declares them."""
    return {(slot.interface, slot.slot): (slot.method, slot.type) for slot in declared_slots(slang_header(build))}


@cache
def patched_slots_of(build: SupportedBuild) -> list[tuple[str, str, int]]:
    """(interface, method, slot) for every slot the build's library patches."""
    library = library_dir() / build.native_subdirectory / "libspreplay_native.so"
    assert library.exists(), f"the wheel lacks the library for Slang {build.slang}: {library}"
    return [(slot.interface, slot.method, slot.slot) for slot in patched_slots(library)]


@pytest.mark.parametrize("build", SLANG_BUILDS, ids=lambda build: f"slang-{build.slang}")
def test_every_patched_slot_is_where_its_header_declares_it(build: SupportedBuild) -> None:
    declared = declared_vtables(build)
    slots = patched_slots_of(build)
    assert len(slots) >= 15  # every hook reports its slot
    for interface, method, slot in slots:
        found = declared.get((interface, slot))
        assert found is not None, f"Slang {build.slang}'s slang.h declares no slot {slot} in {interface}"
        assert found[0] == method, (f"Slang {build.slang}: slot {slot} of {interface} is {found[0]}, "
                                    f"but the library patches it as {method}")


def test_every_hooked_method_has_one_signature_in_every_build() -> None:
    """The hooks' code is written once: a release that changed a hooked
    method's parameters or result needs a hook of its own."""
    signatures: dict[tuple[str, str], dict[str, str]] = {}
    for build in SLANG_BUILDS:
        declared = declared_vtables(build)
        for interface, method, slot in patched_slots_of(build):
            signatures.setdefault((interface, method), {})[build.slang] = declared[(interface, slot)][1]
    for (interface, method), per_build in signatures.items():
        assert len(per_build) == len(SLANG_BUILDS), f"{interface}::{method} is not patched in every build"
        assert len(set(per_build.values())) == 1, f"{interface}::{method} differs between builds: {per_build}"


def test_the_abi_reader_sees_a_moved_method(tmp_path: Path) -> None:
    """The check can fail: a header with one method inserted before a hooked
    one moves that method's slot, and the reader says so."""
    header = slang_header(SLANG_BUILDS[-1])
    text = header.read_text()
    declaration = re.compile(r"virtual SLANG_NO_THROW SlangResult SLANG_MCALL\s+createSession\(")
    assert declaration.search(text)
    moved = tmp_path / "slang.h"
    moved.write_text(declaration.sub(lambda found: "virtual SLANG_NO_THROW void SLANG_MCALL inserted() = 0;\n"
                                     + found.group(0), text, count=1))
    for companion in header.parent.glob("slang-*.h"):
        (tmp_path / companion.name).write_text(companion.read_text())
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "slang_abi.py"), str(header), str(moved), "--diff"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "+vtable slang::IGlobalSession 3 inserted void ()" in proc.stdout.splitlines()
    assert "+vtable slang::IGlobalSession 4 createSession " + \
        "SlangResult (const slang::SessionDesc &, slang::ISession **)" in proc.stdout.splitlines()
