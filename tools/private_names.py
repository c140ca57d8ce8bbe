"""Private names that cross modules: what one raxdb module takes of another's `_private` names.

A leading underscore says "this module's own": another module that imports it (`from raxdb.x
import _y`, `from raxdb.x cimport _y` in a .pxd or .pyx) or reads it through the module
(`import raxdb.x as m` ... `m._y`) depends on what its owner may change without notice.  The rule
(docs/layout.md): such a name becomes public in the room that owns it, or the code that needs it
moves there.  Dunder names (`__version__`) are public; a module's private alias of a public name
(`import raxdb.x as _x`) is its own business and not counted.

Usage: python tools/private_names.py [--check]
  prints each crossing as `importer: owner._name` and their count; with --check, exits 1 when
  there is any (`make lint` runs it so).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"server": "raxdb.server", "protocol": "raxdb.protocol", "storage": "raxdb.storage",
           "pipeline": "raxdb.spark", "embed": "raxdb.embed", "testing": "raxdb.testing"}
_CIMPORT = re.compile(r"^\s*from\s+(raxdb\.[\w.]+)\s+cimport\s+(.+)$", re.M)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    if rest and rest[-1] == "__init__":
        rest = rest[:-1]
    return ".".join((FOLDERS[folder], *rest))


def crossings_in_python(path: Path) -> list[str]:
    me = _module_name(path)
    found: list[str] = []
    modules: dict[str, str] = {}  # a local name bound to a raxdb module -> that module
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("raxdb."):
            for alias in node.names:
                if _private(alias.name) and node.module != me:
                    found.append(f"{node.module}.{alias.name}")
                else:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("raxdb.") and alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr)
                and node.value.id in modules and modules[node.value.id] != me):
            found.append(f"{modules[node.value.id]}.{node.attr}")
    return found


def crossings_in_cython(path: Path) -> list[str]:
    found = []
    for module, names in _CIMPORT.findall(path.read_text()):
        for name in names.split(","):
            name = name.split(" as ")[0].strip().strip("()")
            if _private(name):
                found.append(f"{module}.{name}")
    return found


def crossings() -> list[tuple[str, str]]:
    out = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix == ".py":
                names = crossings_in_python(path)
            elif path.suffix in (".pxd", ".pyx"):
                names = crossings_in_cython(path)
            else:
                continue
            out += [(str(path.relative_to(ROOT)), name) for name in sorted(set(names))]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a private name crosses modules")
    args = parser.parse_args()
    found = crossings()
    for importer, name in found:
        print(f"{importer}: {name}")
    print(f"{len(found)} private names imported across modules")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
