"""Build step: the hot-path modules compiled by Cython, the rest of raxdb interpreted.

raxdb is written in Python and runs as Python; this only makes the modules on the parse ->
dispatch -> reply path (and the stream storage under XADD) run faster.  Cython compiles each of
them from its unchanged .py source: no .pyx dialect, no C of our own, with two exceptions:
storage/rdbwalk.pyx (a snapshot's writer, which must read the keyspace without touching reference
counts) and server/scripting/cbridge.pyx, the scripting engine's crossing into Lua through the Lua C API that
lupa's module exports (redis.call as a C function), which cannot be written as plain Python.  It
is as optional as the rest: without it the engine uses lupa's own crossing, with the same
behaviour.  Where a module has a `.pxd`
beside it, that file declares a few of its classes as extension types (their slots become C
struct fields) and a few functions' arguments and locals as C types (listpack.py's walks over a
listpack held as bytes), which only the compiler reads; the .py stays the single source of the
logic.

Compiling is optional in both directions:
- `RAXDB_PURE=1` at build time (or no Cython, or no C compiler: every extension is `optional`)
  leaves every module interpreted; the same source then runs unchanged.
- A compiled module lives beside its .py (`build_ext --inplace`, which `make` runs before `run`,
  `test` and `bench`), and Python imports an extension module in preference to the source.  So
  an edited .py must be compiled again before it counts: `make` does it (build_ext rebuilds what is
  older than its source), and server/base/compiled.py warns at start-up about any module that is stale.

Annotations are hints here, not contracts (`annotation_typing` off): compiled code accepts what
the interpreted code accepts, e.g. a bytearray where a parameter says bytes.  Only a type a .pxd
declares is a contract (listpack.py's functions over a listpack held as bytes take bytes).
"""

from __future__ import annotations

import os
import runpy
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The modules compiled (each costs ~10 s of compiling, so only those a benchmarked hot path runs)
# are listed in server/base/compiled.py, read here without importing raxdb: the server reads the
# same list to say at start-up which of them run interpreted.
_LISTS = runpy.run_path(os.path.join("server", "base", "compiled.py"))
HOT_MODULES: list[str] = list(_LISTS["HOT_MODULES"])

# The one module written as C-level Cython (a .pyx, not a .py): redis.call as a C function of the
# Lua state lupa runs, through the Lua C API lupa's module exports (cbridge.pyx says how and why).
CBRIDGE = Extension("raxdb.server.scripting.cbridge", ["raxdb/server/scripting/cbridge.pyx"],
                    include_dirs=["raxdb/server/scripting"], depends=["raxdb/server/scripting/cbridge_lua.h"])
# The other (storage/rdbwalk.pyx): a snapshot's RDB writer, which reads the keyspace through
# borrowed references so that a forked child does not copy the heap it walks (its docstring says
# why that needs C-level reads).  Without it a save writes through storage/rdb.py, the same bytes.
RDBWALK = Extension("raxdb.storage.rdbwalk", ["raxdb/storage/rdbwalk.pyx"])


def extensions() -> list[Extension]:
    if os.environ.get("RAXDB_PURE"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    exts = cythonize([Extension(name, [_source(name)]) for name in HOT_MODULES] + [CBRIDGE, RDBWALK],
                     build_dir="build/cython", quiet=True, nthreads=_jobs(),
                     compiler_directives={"language_level": 3, "annotation_typing": False})
    for ext in exts:
        ext.optional = True  # set on cythonize's result: it does not carry the flag over
    return exts


class BuildExt(build_ext):
    """A module that is not compiled runs interpreted, so no older compiled copy of it may stay
    beside its source, where Python would import it instead: building in place first removes the
    compiled modules of every module no longer compiled (dropped from HOT_MODULES, or all of them
    without Cython), and a module that fails to compile loses its copies (the build directory's
    and the one beside the source)."""

    def run(self) -> None:
        if self.inplace:
            built = {ext.name for ext in self.extensions}
            for folder, _, files in os.walk("raxdb", followlinks=True):
                for name in files:
                    if name.endswith(_SUFFIX) and _module(folder, name) not in built:
                        os.remove(os.path.join(folder, name))
        super().run()

    def build_extensions(self) -> None:
        """The C compiler's time is most of a fresh build's (docs/getting-started.md), so: no
        debug information (Python's CFLAGS carry -g, which costs compile time and changes no
        instruction of the code), and the largest modules first, so the last to start are short
        and the --parallel compilers finish together."""
        # gcc or clang: a later -g0 overrides -g; CFLAGS=-g (a build for gdb) keeps it
        if self.compiler.compiler_type == "unix" and "-g" not in os.environ.get("CFLAGS", "").split():
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
        self.extensions.sort(key=lambda ext: -os.path.getsize(ext.sources[0]))
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception:
            stale = _source(ext.name)[: -len(".py")] + _SUFFIX
            for path in (self.get_ext_fullpath(ext.name), stale):
                if os.path.exists(path):
                    os.remove(path)
            raise


_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _jobs() -> int:
    """Cython's C generation runs as many modules at once as build_ext's --parallel (-j) compiles
    (`make build` passes 2); without it, one at a time, as the compiling."""
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        for flag in ("--parallel", "-j"):
            if arg == flag and i + 1 < len(args) and args[i + 1].isdigit():
                return int(args[i + 1])
            if arg.startswith(flag) and arg[len(flag):].lstrip("=").isdigit():
                return int(arg[len(flag):].lstrip("="))
    return 0


def _source(module: str) -> str:
    """raxdb.server.net.client -> raxdb/server/net/client.py (in a checkout, raxdb/server links to server/)."""
    return module.replace(".", "/") + ".py"


def _module(folder: str, filename: str) -> str:
    return ".".join([*folder.split(os.sep), filename[: -len(_SUFFIX)]])


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
