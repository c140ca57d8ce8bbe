"""Which of raxdb's modules run compiled, and whether a compiled one is older than its source.

setup.py compiles the hot modules with Cython next to their .py files, and Python imports an
extension module in preference to the source beside it.  So in a working tree a module edited
but not compiled again would silently run its old code: `make` rebuilds before it runs anything,
and this module lets the server warn once it serves, and the test suite refuse to start, when
that step was skipped.  Staleness is a working tree's notion (one with setup.py at its top): an
installed copy's files carry the times pip wrote them, which say nothing about their order.

It also holds the list of the modules the build compiles (setup.py reads it from here, without
importing raxdb), so that the server can name, at start-up, every one that runs interpreted: a
build where some compiled and some did not (a compiler error, a removed file) would otherwise run
slower with no word said.  Rule: standard library only, since setup.py runs this file on its own.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
# raxdb/, three folders up from raxdb/server/base/ (in a checkout raxdb/server links to server/,
# and abspath keeps the link in the path)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TOP = os.path.dirname(_PACKAGE)

# Compiled from their unchanged .py: the modules a benchmarked hot path runs.
HOT_MODULES = (
    "raxdb.protocol.hiredis_limits",
    "raxdb.protocol.multibulk",
    "raxdb.protocol.reply",
    "raxdb.protocol.request",
    "raxdb.server.base.errors",
    "raxdb.server.base.fields",
    "raxdb.server.base.numparse",
    "raxdb.server.conn.obuf",
    "raxdb.server.net.client",
    "raxdb.server.net.tls",
    "raxdb.server.table.registry",
    "raxdb.server.cluster.routing",
    "raxdb.server.cluster.state",
    "raxdb.server.table.args",
    "raxdb.server.events.keyaccess",
    "raxdb.server.events.propagate",
    "raxdb.server.events.pubsub",
    "raxdb.server.persistence.aof",
    "raxdb.server.replication.master",
    "raxdb.server.replication.state",
    "raxdb.server.memory.bigarrays",
    "raxdb.server.memory.evict",
    "raxdb.server.memory.usage",
    "raxdb.server.commands.t_bitops",
    "raxdb.server.commands.t_geo",
    "raxdb.server.commands.t_hash",
    "raxdb.server.commands.t_keys",
    "raxdb.server.commands.t_list",
    "raxdb.server.commands.t_multi",
    "raxdb.server.commands.t_pubsub",
    "raxdb.server.commands.t_stream",
    "raxdb.server.commands.t_string",
    "raxdb.server.commands.t_scripting",
    "raxdb.server.commands.t_set",
    "raxdb.server.commands.t_zset",
    "raxdb.server.scripting.engine",
    "raxdb.server.scripting.scripts",
    "raxdb.server.scripting.functions",
    "raxdb.server.scripting.runner",
    "raxdb.server.scripting.convert",
    "raxdb.storage.alloc",
    "raxdb.storage.bits",
    "raxdb.storage.crc64",
    "raxdb.storage.geohash",
    "raxdb.storage.hashscan",
    "raxdb.storage.hashtype",
    "raxdb.storage.keyspace",
    "raxdb.storage.intset",
    "raxdb.storage.listpack",
    "raxdb.storage.lzf",
    "raxdb.storage.rdb",
    "raxdb.storage.quicklist",
    "raxdb.storage.rax",
    "raxdb.storage.set_type",
    "raxdb.storage.slots",
    "raxdb.storage.stream",
    "raxdb.storage.zset",
)
# Written as C-level Cython (.pyx), compiled only: scripting's crossing into Lua through its C API,
# and a snapshot's RDB writer (setup.py says why each must be C).
C_MODULES = ("raxdb.server.scripting.cbridge", "raxdb.storage.rdbwalk")


def interpreted_hot_modules(package: str = _PACKAGE) -> list[str]:
    """The modules of HOT_MODULES and C_MODULES with no compiled copy beside their source in
    `package` (raxdb/): every one of them in an interpreted build, none in a whole compiled build."""
    missing = []
    for name in HOT_MODULES + C_MODULES:
        base = os.path.join(package, *name.split(".")[1:])
        if not any(os.path.exists(base + suffix) for suffix in _SUFFIXES):
            missing.append(name)
    return missing


def compiled_modules() -> dict[str, str]:
    """name -> path of every imported raxdb module that was loaded from an extension module."""
    out = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None) or ""
        if name.partition(".")[0] == "raxdb" and path.endswith(_SUFFIXES):
            out[name] = path
    return out


def stale_modules() -> list[str]:
    """The compiled modules of this working tree whose .py (or .pxd declarations) changed after
    they were compiled, imported or not."""
    if not os.path.exists(os.path.join(_TOP, "setup.py")):
        return []
    stale = []
    for folder, _, files in os.walk(_PACKAGE, followlinks=True):
        for filename in files:
            if not filename.endswith(_SUFFIXES):
                continue
            path = os.path.join(folder, filename)
            base = os.path.join(folder, filename.split(".", 1)[0])
            built = os.stat(path).st_mtime
            if any(os.path.exists(src) and os.stat(src).st_mtime > built for src in (base + ".py", base + ".pxd", base + ".pyx")):
                stale.append(os.path.relpath(base, _TOP).replace(os.sep, "."))
    return sorted(stale)
