#!/usr/bin/env python3
"""What a new slangpy release changes for spreplay, read from its wheel, with
no GPU: the first two steps of docs/adding-a-slangpy-release.md.

    tools/check_slangpy_release.py VERSION [--against SUPPORTED_VERSION]

1. Header: the Slang build the wheel bundles. A build spreplay already
   serves needs no new native build. Otherwise its slang.h is compared with
   the supported release's (tools/slang_abi.py): every vtable slot spreplay
   patches must keep its method and signature.
2. Patches: every slangpy function spreplay wraps
   (_slangpy_patches.PATCH_SETS) must exist in the new release with the same
   parameters; a changed body is shown, for a person to read.

Prints the supported_builds.json entry to add and the steps left (fixtures
and tests, on a GPU). Exits 1 when the release needs more than that entry: a
patched slot moved or changed, or a wrapped function is gone or takes other
parameters.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The spreplay installed in this interpreter (scripts/setup's .venv): its
# patch sets, and the native libraries whose slots it reports.
sys.path.insert(0, str(ROOT / "tools"))
from fetch_slangpy_abi import find_wheel  # noqa: E402
from slang_abi import facts_of, patched_slots, slots_in  # noqa: E402
from spreplay._native import library_dir  # noqa: E402
from spreplay._slangpy_patches import PATCH_SETS, Patch  # noqa: E402
from spreplay._supported_builds import SupportedBuild, slang_build_of_library, supported_builds  # noqa: E402


class Release:
    """A slangpy wheel, unpacked: its Python sources, slang.h and Slang build."""

    def __init__(self, version: str, scratch: Path) -> None:
        self.version = version
        wheel = find_wheel(version, [], scratch)
        self.root = scratch / f"slangpy-{version}"
        with zipfile.ZipFile(wheel) as archive:
            members = archive.namelist()
            libraries = [m for m in members if m.startswith("slangpy/libslang-compiler.so")]
            wanted = [m for m in members if m.endswith(".py") or m.startswith("slangpy/include/")]
            archive.extractall(self.root, wanted)
        self.slang = slang_build_of_library(Path(libraries[0])) if libraries else None
        self.header = self.root / "slangpy" / "include" / "slang.h"

    def function(self, module: str, qualified_name: str) -> ast.FunctionDef | None:
        source = self.root / Path(*module.split(".")).with_suffix(".py")
        if not source.exists():
            return None
        scope: list[ast.stmt] = ast.parse(source.read_text()).body
        *classes, name = qualified_name.split(".")
        for class_name in classes:
            found = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == class_name), None)
            if found is None:
                return None
            scope = found.body
        return next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
                    None)


def vtable_of(facts: list[str]) -> dict[tuple[str, str], tuple[int, str]]:
    """(interface, method) -> (slot, type)."""
    return {(slot.interface, slot.method): (slot.slot, slot.type) for slot in slots_in(facts)}


def check_header(new: Release, old: Release, old_build: SupportedBuild) -> bool:
    print(f"1. Header: slangpy {new.version} bundles Slang {new.slang or '(a build its file name does not say)'}")
    if new.slang == old.slang:
        print(f"   the Slang of slangpy {old.version}: the same native build serves it")
        return True
    if new.slang is None:
        print("   FAIL: spreplay tells Slang builds apart by the library's file name; this wheel's says none")
        return False
    old_facts, new_facts = facts_of(old.header), facts_of(new.header)
    new_slots, old_slots = vtable_of(new_facts), vtable_of(old_facts)
    ok = True
    library = library_dir() / old_build.native_subdirectory / "libspreplay_native.so"
    for patched in patched_slots(library):
        interface, method = patched.interface, patched.method
        before, after = old_slots.get((interface, method)), new_slots.get((interface, method))
        if after is None:
            print(f"   FAIL: {interface}::{method} is gone")
            ok = False
        elif after != before:
            print(f"   FAIL: {interface}::{method} was slot {before[0]} {before[1]}, is slot {after[0]} {after[1]}")
            ok = False
    changes = [line for line in difflib.unified_diff(old_facts, new_facts, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    old_interfaces = {interface for interface, _ in old_slots}
    new_interfaces = {interface for interface, _ in new_slots}
    changed_vtables = sorted({line.split(" ")[1] for line in changes if line[1:].startswith("vtable ")}
                             & old_interfaces & new_interfaces)
    print(f"   {len(changes)} ABI facts changed from Slang {old.slang} (tools/slang_abi.py OLD_SLANG_H NEW_SLANG_H "
          f"--diff lists them); interfaces only in {new.slang}: {len(new_interfaces - old_interfaces)}, "
          f"only in {old.slang}: {len(old_interfaces - new_interfaces)}")
    if changed_vtables:
        print(f"   vtables changed in interfaces both declare: {', '.join(changed_vtables)} (read them: "
              "spreplay calls more methods than it patches)")
    if ok and new.slang in {build.slang for build in supported_builds()}:
        print(f"   every slot spreplay patches keeps its method and signature; spreplay builds for Slang "
              f"{new.slang} already")
    elif ok:
        print("   every slot spreplay patches keeps its method and signature: the wheel's build fetches "
              "this slang.h and builds against it once the table lists the release")
    return ok


def parameters(function: ast.FunctionDef) -> str:
    return ast.unparse(function.args)


def check_patches(new: Release, old: Release, patch_set: str) -> bool:
    print(f"2. Patches: the slangpy functions patch set '{patch_set}' wraps")
    ok = True
    patch: Patch
    for patch in PATCH_SETS[patch_set]:
        name = f"{patch.module}.{patch.function}"
        before, after = old.function(patch.module, patch.function), new.function(patch.module, patch.function)
        if after is None:
            print(f"   FAIL: {name} is gone from slangpy {new.version}")
            ok = False
            continue
        if before is not None and parameters(before) != parameters(after):
            print(f"   FAIL: {name} took ({parameters(before)}), takes ({parameters(after)})")
            ok = False
            continue
        if before is not None and ast.dump(before) == ast.dump(after):
            print(f"   {name}: unchanged")
            continue
        print(f"   {name}: same parameters, body changed; read the difference:")
        diff = difflib.unified_diff(ast.unparse(before).splitlines() if before else [],
                                    ast.unparse(after).splitlines(), f"slangpy {old.version}",
                                    f"slangpy {new.version}", lineterm="", n=1)
        for line in diff:
            print(f"     {line}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version")
    parser.add_argument("--against", help="the supported release to compare with (default: the newest)")
    options = parser.parse_args()
    builds = supported_builds()
    against = next((b for b in builds if b.slangpy == options.against), None) if options.against else builds[-1]
    if against is None:
        parser.error(f"--against {options.against} is not a supported release")
    with tempfile.TemporaryDirectory(prefix="slangpy-release-") as scratch:
        new, old = Release(options.version, Path(scratch)), Release(against.slangpy, Path(scratch))
        print(f"slangpy {new.version} against slangpy {old.version} (Slang {old.slang})")
        header_ok = check_header(new, old, against)
        patches_ok = check_patches(new, old, against.patches)
    entry = {"slangpy": new.version, "slang": new.slang, "patches": against.patches}
    if any(build.slangpy == new.version for build in builds):
        print(f"3. python/spreplay/supported_builds.json lists slangpy {new.version} already")
    else:
        print("3. Add to python/spreplay/supported_builds.json:")
        print(f"   {json.dumps(entry)}")
        print("   and widen pyproject.toml's slangpy range (dependencies) to include it.")
    print("4. Fixtures and tests: docs/adding-a-slangpy-release.md, steps 3 and 4 (a GPU records the fixtures).")
    return 0 if header_ok and patches_ok else 1


if __name__ == "__main__":
    sys.exit(main())
