#!/usr/bin/env python3
"""The binary interface a slang.h declares, as canonical text, one fact a line.

spreplay calls Slang through its COM-style C++ interfaces and patches their
vtables, and keys kernels by Slang's enum values. A Slang build is
interchangeable with another for spreplay only where these facts agree:

  vtable INTERFACE SLOT METHOD TYPE      (slots counted from 0, the base's
                                         first; TYPE as clang spells it)
  field  STRUCT INDEX NAME TYPE
  enum   ENUM ENUMERATOR VALUE

    tools/slang_abi.py SLANG_H [--clang clang++]           the facts
    tools/slang_abi.py OLD_SLANG_H NEW_SLANG_H --diff      what changed

Reads clang's JSON AST of the header (`-Xclang -ast-dump=json`), so it sees
exactly what a compiler sees, macros expanded.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

# The declarations of Slang's own API: its namespace, and the C names of the
# interfaces and types it declares outside it.
SLANG_PREFIXES = ("slang::", "ISlang", "Slang", "slang", "SLANG")


@dataclass(frozen=True)
class Method:
    name: str
    type: str  # "RESULT (PARAMETERS)"

    @property
    def overrides_key(self) -> tuple[str, str]:
        """What an override shares with the method it overrides: the name and
        the parameters (a covariant result keeps the base's slot)."""
        return self.name, self.type[self.type.find("("):]


@dataclass
class Record:
    name: str
    bases: list[str] = field(default_factory=list)
    virtuals: list[Method] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)


# clang names an anonymous struct or union by where it is declared, which
# moves with every edit of the header; the layout is what matters.
_ANONYMOUS = re.compile(r"\(anonymous (struct|union|enum)? ?at [^)]*\)")


def _canonical(type_text: str) -> str:
    return _ANONYMOUS.sub("(anonymous)", type_text)


def clang_ast(header: Path, clang: str) -> dict[str, Any]:
    command = [clang, "-std=c++17", "-x", "c++", "-fsyntax-only", "-Xclang", "-ast-dump=json",
               "-I", str(header.parent), str(header)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"slang_abi: {clang} could not parse {header}:\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _type_of(node: dict[str, Any]) -> str:
    kind = node.get("type", {})
    return _canonical(kind.get("desugaredQualType") or kind.get("qualType", "?"))


def _enumerator_value(node: dict[str, Any]) -> int | None:
    # An explicit initializer is folded by clang into a ConstantExpr's value.
    for child in node.get("inner", []):
        if "value" in child:
            return int(child["value"])
        found = _enumerator_value(child)
        if found is not None:
            return found
    return None


def _walk(node: dict[str, Any], scope: str, records: dict[str, Record],
          enums: dict[str, list[tuple[str, int]]]) -> None:
    for child in node.get("inner", []):
        kind = child.get("kind")
        name = child.get("name", "")
        if kind in ("NamespaceDecl", "LinkageSpecDecl"):
            _walk(child, f"{scope}{name}::" if name else scope, records, enums)
        elif kind == "CXXRecordDecl" and child.get("completeDefinition") and name:
            qualified = scope + name
            record = records.setdefault(qualified, Record(qualified))
            record.bases = [_type_of(base) for base in child.get("bases", [])]
            for member in child.get("inner", []):
                member_kind = member.get("kind")
                if member_kind == "CXXMethodDecl" and member.get("virtual"):
                    record.virtuals.append(Method(member["name"], _type_of(member)))
                elif member_kind == "FieldDecl":
                    record.fields.append(f"{member.get('name', '')} {_type_of(member)}")
            _walk(child, qualified + "::", records, enums)
        elif kind == "EnumDecl" and child.get("inner"):
            qualified = scope + (name or f"(anonymous enum of {child['inner'][0].get('name', '?')})")
            values, next_value = [], 0
            for enumerator in child["inner"]:
                if enumerator.get("kind") != "EnumConstantDecl":
                    continue
                explicit = _enumerator_value(enumerator)
                value = next_value if explicit is None else explicit
                values.append((enumerator["name"], value))
                next_value = value + 1
            enums[qualified] = values


def _vtable(record: Record, records: dict[str, Record]) -> list[Method]:
    # Single inheritance, as every Slang interface is: the primary base's
    # slots come first, then the record's new virtuals in declaration order
    # (an override keeps its base's slot).
    slots: list[Method] = []
    if record.bases:
        base = records.get(record.bases[0].removeprefix("struct ").removeprefix("class "))
        if base is not None:
            slots = _vtable(base, records)
    inherited = {slot.overrides_key for slot in slots}
    slots += [virtual for virtual in record.virtuals if virtual.overrides_key not in inherited]
    return slots


def abi_facts(ast: dict[str, Any]) -> Iterator[str]:
    records: dict[str, Record] = {}
    enums: dict[str, list[tuple[str, int]]] = {}
    _walk(ast, "", records, enums)
    for name in sorted(records):
        if not name.startswith(SLANG_PREFIXES):
            continue
        record = records[name]
        vtable = _vtable(record, records)
        for slot, method in enumerate(vtable):
            yield f"vtable {name} {slot} {method.name} {method.type}"
        if not vtable:
            for index, member in enumerate(record.fields):
                yield f"field {name} {index} {member}"
    for name in sorted(enums):
        for enumerator, value in enums[name]:
            if enumerator.startswith(SLANG_PREFIXES) or name.startswith(SLANG_PREFIXES):
                yield f"enum {name} {enumerator} {value}"


def facts_of(header: Path, clang: str = "clang++") -> list[str]:
    return list(abi_facts(clang_ast(header, clang)))


@dataclass(frozen=True)
class Slot:
    interface: str
    slot: int
    method: str
    type: str = ""  # as the header declares it; a library reports none


def declared_slots(header: Path, clang: str = "clang++") -> list[Slot]:
    """Every vtable slot `header` declares."""
    return slots_in(facts_of(header, clang))


def slots_in(facts: list[str]) -> list[Slot]:
    """The vtable slots among `facts`."""
    slots = []
    for line in facts:
        if line.startswith("vtable "):
            _, interface, slot, method, method_type = line.split(" ", 4)
            slots.append(Slot(interface, int(slot), method, method_type))
    return slots


def patched_slots(native_library: Path) -> list[Slot]:
    """The slots a spreplay native library patches, as the compiler laid
    them out from the slang.h it was built against (spreplay_patched_slots).
    In a process of its own: the library is loaded, never configured."""
    code = ("import ctypes, sys; f = ctypes.CDLL(sys.argv[1]).spreplay_patched_slots; "
            "f.restype = ctypes.c_char_p; print(f().decode(), end='')")
    text = subprocess.run([sys.executable, "-c", code, str(native_library)], check=True, capture_output=True,
                          text=True).stdout
    slots = []
    for line in text.splitlines():
        interface, method, slot = line.split(" ")
        slots.append(Slot(interface, int(slot), method))
    return slots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("headers", type=Path, nargs="+")
    parser.add_argument("--diff", action="store_true", help="what changed from the first header to the second")
    parser.add_argument("--clang", default="clang++")
    options = parser.parse_args()
    if options.diff:
        if len(options.headers) != 2:
            parser.error("--diff takes two headers")
        old, new = (facts_of(header, options.clang) for header in options.headers)
        changes = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        print("\n".join(changes))
        return 1 if changes else 0
    for header in options.headers:
        print("\n".join(facts_of(header, options.clang)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
