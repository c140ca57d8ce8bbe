"""What every fuzz target shares: the list of targets, where their corpora live, the memory cap, and
the import of raxdb's interpreted modules for coverage.

Rule: nothing here knows a decoder; a target module (NAME, setup, one_input) knows one.

Coverage.  atheris sees Python bytecode only, and the compiled hot modules (setup.py's HOT_MODULES)
are C to it.  `prefer_source()` makes `raxdb.*` imports take the .py beside a compiled module, so
the fuzzer is guided by the interpreted code, which is the same source; the corpus replay
(tests/fuzz/test_fuzz_targets.py) then runs every input through the compiled build as well.  A
target that must run compiled code (lua: cbridge is C and needs the compiled engine) is listed
in COMPILED_TARGETS.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import resource
import sys
from pathlib import Path
from types import ModuleType

TARGETS = ("resp", "restore", "rdbfile", "aof", "manifest", "bus", "nodesconf", "config", "lua")
# Run on the compiled build even when fuzzing (cbridge is C and cimports the compiled engine).
COMPILED_TARGETS = frozenset({"lua"})
HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
ROOT = HERE.parent.parent.parent

# The cap on what one process may allocate (address space): a decoder that sizes a buffer from
# a length it read, rather than from the bytes it has, fails as MemoryError, which no decoder
# documents, so it is a finding.  Generous: Python, lupa and atheris use ~300 MB of it.
MEMORY_CAP = 3 << 30


class _PreferSource(importlib.abc.MetaPathFinder):
    """raxdb.x.y from x/y.py when that exists (else the normal finders: packages, .pyx modules)."""

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if not fullname.startswith("raxdb.") or path is None:
            return None
        leaf = fullname.rpartition(".")[2]
        for d in path:
            src = os.path.join(d, leaf + ".py")
            if os.path.isfile(src):
                return importlib.util.spec_from_file_location(fullname, src)
        return None


def prefer_source() -> None:
    if not any(isinstance(f, _PreferSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _PreferSource())


def cap_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > MEMORY_CAP:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, hard))


def load(name: str) -> ModuleType:
    if name not in TARGETS:
        raise SystemExit(f"unknown fuzz target {name!r}; the targets: {', '.join(TARGETS)}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"tests.fuzz.targets.{name}")


def corpus(name: str) -> list[Path]:
    d = CORPUS / name
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []
