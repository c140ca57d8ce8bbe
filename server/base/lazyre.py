"""Module-level regular expressions compiled on their first use (#56).

`re.compile` runs the sre compiler, which is pure Python: a pattern costs from ~0.1 to ~1.5 M
instructions, paid at every start by a module that compiles its patterns at import, whether or not
a client ever sends what they parse (a float argument, a TLS error's text, an octal
unixsocketperm).  A `LazyPattern` holds the pattern's source and compiles it the first time one of
its attributes is read (`match`, `fullmatch`, `findall`, ...); each attribute read then becomes the
compiled pattern's own, kept on the instance, so later calls cost what calls of the compiled
pattern cost: one attribute read, nothing per call for the deferral.

Rule: for patterns a module keeps for its lifetime; a pattern made per call gains nothing here.
Invariant: every attribute answers as `re.compile(pattern, flags)`'s does.
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """`re.compile(pattern, flags)`, compiled by the first attribute read."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern[Any] | None = None

    def __getattr__(self, name: str) -> Any:
        # Called only for an attribute the instance does not hold yet: compile once, then keep
        # the compiled pattern's attribute (its bound method) where the next read finds it.
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._source)
        value = getattr(compiled, name)
        setattr(self, name, value)
        return value
