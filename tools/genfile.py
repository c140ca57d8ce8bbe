"""What every generator in tools/ does last: write its file, or under --check say whether it is current.

A file is written only when its text changed, so an unchanged one keeps its time (the compiled
build and make do not see it as new); --check writes nothing and exits 1, naming the command that
brings the file up to date.  Imported by the gen_*.py scripts, which run with tools/ on sys.path.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_or_check(out: Path, text: str, check: bool, tool: str) -> int:
    """Write `text` to `out` unless it holds it already (0); with `check`, 1 if it does not.
    `tool`: the generator's own path (its __file__), named in the message."""
    if out.exists() and out.read_text(encoding="utf-8") == text:
        return 0
    if check:
        print(f"{out.relative_to(ROOT)} is out of date: run python tools/{Path(tool).name}", file=sys.stderr)
        return 1
    out.write_text(text, encoding="utf-8")
    return 0
