"""Write server/commands/families.py: which command family registers each command.

Start-up registers a placeholder for each command of a family imported on first use
(server/commands/__init__.py); the placeholder must know the family whose import registers the
real handler.  This imports the families one at a time, each after the families it imports itself
(read from its import statements), and names the commands each one's import added to the table;
the file lists them in the order the table had when the package imported every family by name,
which the placeholders keep (COMMAND's order, the containers' subcommands').
tests/unit/test_lazy_families.py fails when the file is out of date; run this after adding,
moving or removing a `@command`.

Usage: python tools/gen_families.py [--check]   (--check: exit 1 if the file would change)
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

from genfile import write_or_check

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PACKAGE = "raxdb.server.commands"
OUT = ROOT / "server" / "commands" / "families.py"

HEADER = '''"""Which family registers each command: `python tools/gen_families.py` writes this file.

Start-up reads it instead of importing the families (server/commands/__init__.py); a test checks
it against what importing each family registers.  Generated: do not edit by hand.
"""

FAMILIES: dict[str, str] = {  # command (or container|subcommand) -> family, in the table's order
'''


def family_names() -> list[str]:
    return sorted(p.stem for p in (ROOT / "server" / "commands").glob("t_*.py"))


def family_imports(name: str) -> list[str]:
    """The families `name` imports (module level or inside functions)."""
    tree = ast.parse((ROOT / "server" / "commands" / f"{name}.py").read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                found += [a.name for a in node.names if a.name.startswith("t_")]
            elif node.module.startswith(PACKAGE + ".t_"):
                found.append(node.module.rsplit(".", 1)[1])
    return [f for f in found if f != name]


def registered() -> dict[str, object]:
    from raxdb.server.table.registry import TABLE
    return {cmd.fullname: cmd.proc for cmd in TABLE.every_command() if cmd.proc is not None}


def _empty_package() -> None:
    """The package stands in empty: its __init__ registers the placeholders this file describes
    and imports some families at once, which would hide what those families register."""
    import types

    import raxdb.server
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(ROOT / "server" / "commands")]
    sys.modules[PACKAGE] = raxdb.server.commands = package  # type: ignore[attr-defined]


def table_order() -> list[str]:
    """The commands in the table's order when every family is imported in name order (as the
    package imported them before families were imported on first use): COMMAND's order."""
    _empty_package()
    for name in family_names():
        importlib.import_module(f"{PACKAGE}.{name}")
    return list(registered())


def families() -> dict[str, str]:
    """Each command's family (the one whose own import registers it)."""
    _empty_package()
    out: dict[str, str] = {}
    done: set[str] = set()

    def load(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for dep in family_imports(name):
            load(dep)
        before = {k: id(v) for k, v in registered().items()}
        importlib.import_module(f"{PACKAGE}.{name}")
        for k, v in registered().items():
            if before.get(k) != id(v):
                out[k] = name

    for name in family_names():
        load(name)
    return out


def render(order: list[str], family: dict[str, str]) -> str:
    lines = [HEADER]
    row = "   "
    for name in order:
        item = f" {json.dumps(name)}: {json.dumps(family[name])},"
        if len(row) + len(item) > 110:
            lines.append(row + "\n")
            row = "   "
        row += item
    lines.append(row + "\n}\n")
    return "".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--order", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.order:  # the table's order, from a process of its own (importing decides it)
        print(json.dumps(table_order()))
        return 0
    order = json.loads(subprocess.run([sys.executable, __file__, "--order"], check=True, capture_output=True,
                                      text=True).stdout)
    return write_or_check(OUT, render(order, families()), args.check, __file__)


if __name__ == "__main__":
    sys.exit(main())
