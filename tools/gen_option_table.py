"""Write server/config/optiontable.py: the option table of server/config/config_defaults.json as Python.

The configuration's option rows (server/config/options.py) are made at every start.  Read from
the JSON file they cost the json module's import and the decode (~4 M instructions of every
start, #56); this file holds the same rows as one literal tuple, which the interpreter loads from
the module's cached bytecode (marshal), so start-up imports no json.  config_defaults.json stays
the source (read off a live redis-server 7.0: options.py's docstring): run this after any edit of
it; tests/unit/test_lazy_imports.py fails when the file is out of date.

Usage: python tools/gen_option_table.py [--check]   (--check: exit 1 if the file would change)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from genfile import write_or_check

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "server" / "config" / "config_defaults.json"
OUT = ROOT / "server" / "config" / "optiontable.py"

HEADER = '''"""The option table: `python tools/gen_option_table.py` writes this file from config_defaults.json
(why: its docstring).  Generated: do not edit by hand.
"""

from typing import Any

# One row an option, in the JSON file's order: name, kind, default, min, max, enum values, and the
# flags immutable, protected, percent, hidden, deny-loading, then `since` (its first generation):
# options.Option's arguments, in order.
ROWS: tuple[tuple[Any, ...], ...] = (
'''


def rows(raw: dict[str, dict]) -> tuple[list[tuple], dict[str, str]]:
    """The option rows and the aliases (alias -> primary) of the decoded JSON table."""
    out: list[tuple] = []
    aliases: dict[str, str] = {}
    for name, e in raw.items():
        if "alias" in e:
            aliases[name] = e["alias"]
            continue
        flags = e.get("flags", ())
        since = tuple(int(part) for part in e.get("since", "7.0").split("."))
        out.append((name, e["type"], e["default"], e.get("min", 0), e.get("max", 0), tuple(e.get("values", ())),
                    "immutable" in flags, "protected" in flags, "percent" in flags, "hidden" in flags,
                    "deny-loading" in flags, since))
    return out, aliases


def render(raw: dict[str, dict]) -> str:
    table, aliases = rows(raw)
    lines = [HEADER]
    lines += [f"    {row!r},\n" for row in table]
    lines.append(")\n\n# alias -> primary (an alias mirrors its primary's value), in the JSON file's order\nALIASES: dict[str, str] = {\n")
    lines += [f"    {a!r}: {p!r},\n" for a, p in aliases.items()]
    lines.append("}\n")
    return "".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    check = ap.parse_args().check
    return write_or_check(OUT, render(json.loads(SOURCE.read_text(encoding="utf-8"))), check, __file__)


if __name__ == "__main__":
    sys.exit(main())
