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
import importlib.machinery
import importlib.util
import os
import resource
import sys
import types
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
    """raxdb.x.y from x/y.py when that exists; a compiled-only module (.pyx) is absent; else the
    normal finders (packages)."""

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if not fullname.startswith("raxdb.") or path is None:
            return None
        leaf = fullname.rpartition(".")[2]
        for d in path:
            src = os.path.join(d, leaf + ".py")
            if os.path.isfile(src):
                return importlib.util.spec_from_file_location(fullname, src)
            if os.path.isfile(os.path.join(d, leaf + ".pyx")):
                # compiled only (rdbwalk, cbridge), against the compiled modules' C layouts: absent,
                # as in an interpreted tree
                raise ModuleNotFoundError(f"{fullname}: compiled only, and the sources are preferred", name=fullname)
        return None


def prefer_source() -> None:
    if not any(isinstance(f, _PreferSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _PreferSource())


class _CbridgeFrom(importlib.abc.MetaPathFinder):
    """raxdb.server.scripting.cbridge from another build of it (asan_cbridge.sh's sanitized one)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname != "raxdb.server.scripting.cbridge":
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, self.path)
        return importlib.util.spec_from_file_location(fullname, self.path, loader=loader)


def cbridge_from_env() -> None:
    """RAXDB_FUZZ_CBRIDGE names a cbridge extension to load instead of the tree's."""
    path = os.environ.get("RAXDB_FUZZ_CBRIDGE")
    if path:
        sys.meta_path.insert(0, _CbridgeFrom(os.path.abspath(path)))


def instrument(prefixes: tuple[str, ...], skip: tuple[str, ...] = ()) -> int:
    """atheris's coverage in every function and method of the imported interpreted modules named
    by `prefixes` (packages included), but those `skip` names (a module, class, function or
    method: "raxdb.storage.lzf.compress"); how many.  Done in place (a function's __code__), so
    every reference to it sees it.  atheris's own import hook takes whole top-level packages only,
    and all of raxdb costs minutes to instrument.  An instrumented loop calls into atheris at each
    comparison and branch (~5x slower): a target skips what no input steers and only its
    property checks or its per-input setup run (an encoder, a checksum, a constructor)."""
    import atheris

    done = 0
    for name, mod in list(sys.modules.items()):
        if not any(name == p or name.startswith(p + ".") for p in prefixes) or _skipped(name, skip):
            continue
        if not str(getattr(mod, "__file__", "")).endswith(".py"):
            continue
        for obj in list(vars(mod).values()):
            if getattr(obj, "__module__", None) != name:
                continue
            members = vars(obj).values() if isinstance(obj, type) else (obj,)
            for m in members:
                if isinstance(m, (staticmethod, classmethod)):
                    m = m.__func__
                fns = (m.fget, m.fset) if isinstance(m, property) else (m,)
                for fn in fns:
                    if isinstance(fn, types.FunctionType) and not _skipped(f"{name}.{fn.__qualname__}", skip):
                        atheris.instrument_func(fn)
                        done += 1
    return done


def _skipped(qualname: str, skip: tuple[str, ...]) -> bool:
    return any(qualname == s or qualname.startswith(s + ".") for s in skip)


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
