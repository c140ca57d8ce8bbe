"""Which of raxdb's modules run compiled, and whether a compiled one is older than its source.

setup.py compiles the hot modules with Cython next to their .py files, and Python imports an
extension module in preference to the source beside it.  So in a working tree a module edited
but not compiled again would silently run its old code: `make` rebuilds before it runs anything,
and this module lets the server warn at start-up, and the test suite refuse to start, when that
step was skipped.  Staleness is a working tree's notion (one with setup.py at its top): an
installed copy's files carry the times pip wrote them, which say nothing about their order.
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
