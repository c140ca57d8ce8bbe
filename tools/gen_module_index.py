"""Write docs/modules.md: every module of raxdb, folder by folder, with what its docstring says it is.

docs/layout.md describes the folders and the path of a command; this index is the finer map, one
line a module, so that a reader finds the file that owns a concern without opening them all.  Each
line is the first sentence of the module's docstring (every module opens with one: the house's
rule), so the index is only as good as those sentences and cannot drift from them: `make lint` runs
this with --check, which fails when a module was added, moved, removed or re-described without the
index being written again.

Order: the folders bottom floor first (protocol, storage, then server/'s floors as the import-linter
layers contract lists them, then the packages above the server), modules by name inside a folder.

Usage: python tools/gen_module_index.py [--check]   (--check: exit 1 if the file would change)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from pathlib import Path

from genfile import write_or_check

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "modules.md"

HEADER = """# Modules

Every module of raxdb, one line each: the first sentence of its docstring. The folders come bottom
floor first, as [layout.md](layout.md) describes them; a folder may import the ones before it, never
those after it. `python tools/gen_module_index.py` writes this file and `make lint` checks it: do not
edit it by hand, edit the module's docstring.
"""

# The folders above and beside the server, each with the package name it is imported as.
BELOW_SERVER = [("protocol", "raxdb.protocol"), ("storage", "raxdb.storage")]
ABOVE_SERVER = [("pipeline", "raxdb.spark"), ("pipeline/examples", "raxdb.spark.examples"), ("embed", "raxdb.embed"),
                ("testing", "raxdb.testing")]

_SENTENCE_END = re.compile(r"(?<!\.\.)(?<=[.!?])\s+(?=[A-Z`(\"])")  # not after an ellipsis ("SORT ... BY")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def server_floors() -> list[str]:
    """server/'s floors, bottom first, from the layers contract in pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("type") == "layers" and contract.get("containers") == ["raxdb.server"]:
            floors: list[str] = []
            for layer in reversed(contract["layers"]):
                floors.extend(part.strip() for part in layer.split("|"))
            return floors
    raise SystemExit("gen_module_index: no layers contract for raxdb.server in pyproject.toml")


def first_sentence(path: Path) -> str:
    """The first sentence of the module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) if path.suffix == ".py" else _pyx_docstring(path)
    if not doc:
        raise SystemExit(f"gen_module_index: {path.relative_to(ROOT)} has no docstring (every module opens with one)")
    paragraph = " ".join(doc.split("\n\n")[0].split())
    start = 0
    for match in _SENTENCE_END.finditer(paragraph):
        before = paragraph[:match.start()]
        if before.endswith(_ABBREVIATIONS):
            continue
        start = match.start()
        break
    sentence = paragraph[:start] if start else paragraph
    return sentence.replace("|", "\\|")


def _pyx_docstring(path: Path) -> str | None:
    """A .pyx module's docstring: its first string literal, read without Cython."""
    match = re.match(r'\s*(?:#[^\n]*\n\s*)*("""|\'\'\')(.*?)\1', path.read_text(), re.S)
    return match.group(2).strip() if match else None


def modules_in(folder: Path) -> list[Path]:
    """The folder's own modules (not its subfolders'): .py, and .pyx without a .py of the same name."""
    found = [p for p in folder.iterdir() if p.suffix == ".py" and p.name != "__init__.py"]
    found += [p for p in folder.iterdir() if p.suffix == ".pyx" and not p.with_suffix(".py").exists()]
    return sorted(found, key=lambda p: p.stem.lstrip("_"))


def section(title: str, folder: Path) -> list[str]:
    """A folder's heading, its package's own docstring if it has one, and a line per module."""
    lines = [f"## {title}", ""]
    init = folder / "__init__.py"
    if init.exists() and ast.get_docstring(ast.parse(init.read_text())):
        lines += [first_sentence(init), ""]
    for path in modules_in(folder):
        lines.append(f"- `{path.name}`: {first_sentence(path)}")
    return lines + [""]


def render() -> str:
    lines = [HEADER]
    for folder, package in BELOW_SERVER:
        lines += section(f"{folder}/ ({package})", ROOT / folder)
    root_modules = []
    for floor in server_floors():
        sub = ROOT / "server" / floor
        if sub.is_dir():
            lines += section(f"server/{floor}/", sub)
        else:
            root_modules.append(ROOT / "server" / f"{floor}.py")
    lines += ["## server/ (raxdb.server), its root", ""]
    for path in root_modules:
        lines.append(f"- `{path.name}`: {first_sentence(path)}")
    lines.append("")
    for folder, package in ABOVE_SERVER:
        lines += section(f"{folder}/ ({package})", ROOT / folder)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/modules.md would change")
    args = parser.parse_args()
    return write_or_check(OUT, render(), args.check, __file__)


if __name__ == "__main__":
    sys.exit(main())
