"""Which of raxdb's modules run compiled, and whether a compiled one is older than its source.

setup.py compiles the hot modules with Cython next to their .py files, and Python imports an
extension module in preference to the source beside it.  So a module edited but not compiled
again would silently run its old code: `make` rebuilds before it runs anything, and this module
lets the server warn at start-up, and the test suite refuse to start, when that step was skipped.
Only modules already imported are looked at (the server imports every command module first).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

_PACKAGES = ("server.", "storage.", "protocol.")


def compiled_modules() -> dict[str, str]:
    """name -> path of every imported raxdb module that was loaded from an extension module."""
    out = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None) or ""
        if name.startswith(_PACKAGES) and path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            out[name] = path
    return out


def stale_modules() -> list[str]:
    """The compiled modules whose .py (or .pxd declarations) changed after they were compiled."""
    stale = []
    for name, path in sorted(compiled_modules().items()):
        built = os.stat(path).st_mtime
        base = os.path.join(os.path.dirname(path), name.rsplit(".", 1)[1])
        for source in (base + ".py", base + ".pxd"):
            if os.path.exists(source) and os.stat(source).st_mtime > built:
                stale.append(name)
                break
    return stale
