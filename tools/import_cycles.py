"""Import circles between raxdb's modules, counted the way the rule of the house counts them.

Every import between project modules counts: at module level, inside functions and under
`if TYPE_CHECKING:`.  A circle is a strongly connected component of that graph with two or more
modules.  The rule (docs/layout.md): no circle spans two folders, and none has more than four
modules.  import-linter's contracts (pyproject.toml) keep the layers in order; this keeps the
circles inside a layer small, which a layers contract cannot express.

Usage: python tools/import_cycles.py [--check] [--verbose]
  prints the module count, the import count, how many imports sit inside functions, and each
  circle; with --check, exits 1 when a circle breaks the rule (`make lint` runs it so).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the installed package's subpackages and the repository folders they come from
PACKAGES = {"raxdb.server": "server", "raxdb.protocol": "protocol", "raxdb.storage": "storage",
            "raxdb.spark": "pipeline", "raxdb.embed": "embed", "raxdb.testing": "testing"}
MAX_CIRCLE = 4


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], int]:
    """module -> the project modules it imports; and how many of those imports sit in functions."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    in_functions = 0
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        stack: list[tuple[ast.AST, bool]] = [(ast.parse(path.read_text()), False)]
        while stack:
            node, in_function = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                targets: list[str] = []
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        anchor = mod.split(".") if is_package else mod.split(".")[:-1]
                        base = ".".join(anchor[: len(anchor) - child.level + 1] + ([base] if base else []))
                    targets = [f"{base}.{a.name}" for a in child.names]
                for target in targets:
                    found = resolve(target)
                    if found and found != mod:
                        edges[mod].add(found)
                        in_functions += inner
                stack.append((child, inner))
    return edges, in_functions


def circles(mods: dict[str, Path], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in mods:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def folder(module: str, mods: dict[str, Path]) -> str:
    return str(mods[module].parent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a circle breaks the rule")
    parser.add_argument("--verbose", action="store_true", help="print every circle's modules")
    args = parser.parse_args()
    mods = modules()
    edges, in_functions = imports(mods)
    found = circles(mods, edges)
    broken = [c for c in found if len(c) > MAX_CIRCLE or len({folder(m, mods) for m in c}) > 1]
    print(f"{len(mods)} modules, {sum(map(len, edges.values()))} imports between them "
          f"({in_functions} inside functions), {len(found)} circles, {len(broken)} breaking the rule")
    for component in found:
        if args.verbose or component in broken:
            mark = "BROKEN " if component in broken else ""
            print(f"  {mark}{len(component)}: {' '.join(component)}")
    return 1 if args.check and broken else 0


if __name__ == "__main__":
    sys.exit(main())
