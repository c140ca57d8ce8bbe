"""Write server/table/infoheads.py: what start-up needs of each command's metadata, as Python.

The command table is built at start-up from the fields dispatch reads (arity, flags, key
positions), those ACL reads (categories) and each command's generation (its COMMAND DOCS
`since`).  Decoding the JSON trees of server/table/commands/info/ for them, and scanning the docs
files for `since`, was ~24 M instructions of every start (#56); this file holds those fields as
literal tuples, which the interpreter loads from the module's cached bytecode (marshal), and the
trees themselves are decoded on first use (COMMAND INFO, COMMAND DOCS, a key spec), a group file
at a time (server/table/metadata.py).  Derived from the JSON files alone (no server needed): run
it after tools/gen_commands.py or any edit of the files; tests/unit/test_lazy_imports.py fails
when it is out of date.

Usage: python tools/gen_infoheads.py [--check]   (--check: exit 1 if the file would change)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from genfile import write_or_check

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "server" / "table" / "commands"
OUT = ROOT / "server" / "table" / "infoheads.py"

HEADER = '''"""Each command's head: `python tools/gen_infoheads.py` writes this file from commands/info/ and
commands/docs/ (why: its docstring).  Generated: do not edit by hand.
"""

from typing import Any

# name (a subcommand as "container|sub"), sorted -> (the group file holding its trees, arity,
# flags, first key, last key, key step, ACL categories, `since` of its COMMAND DOCS entry or (0,))
HEADS: dict[str, tuple[Any, ...]] = {
'''


def _since(docs: list) -> tuple[int, ...]:
    """A COMMAND DOCS entry's own `since` as a version tuple, (0,) without one."""
    items = docs[1]
    for i in range(0, len(items), 2):
        if items[i] == "since":
            return tuple(int(part) for part in items[i + 1].split("."))
    return (0,)


def heads() -> dict[str, tuple]:
    """The heads of every command in commands/info, by name, sorted."""
    docs: dict[str, list] = {}
    for path in sorted((FOLDER / "docs").glob("*.json")):
        docs.update(json.loads(path.read_text(encoding="utf-8")))
    out: dict[str, tuple] = {}
    for path in sorted((FOLDER / "info").glob("*.json")):
        for name, info in json.loads(path.read_text(encoding="utf-8")).items():
            f = info[1]
            out[name] = (path.stem, f[1], tuple(x[1] for x in f[2][1]), f[3], f[4], f[5],
                         tuple(x[1] for x in f[6][1]), _since(docs[name]) if name in docs else (0,))
    return dict(sorted(out.items()))


def render() -> str:
    lines = [f"    {name!r}: {head!r}," for name, head in heads().items()]
    return HEADER + "\n".join(lines) + "\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    return write_or_check(OUT, render(), args.check, __file__)


if __name__ == "__main__":
    sys.exit(main())
