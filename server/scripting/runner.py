"""The engine as the EVAL script cache and the FUNCTION registry call it: one method, `run`; and the
one argument both parse before it, numkeys.

engine.Engine subclasses Runner.  Compiled, Runner is an extension type (runner.pxd) that
scripts.pxd and functions.pxd declare their engine as, so that EVALSHA's and FCALL's call of
`Engine.run` is a C call through its method table, not a Python method call with nine arguments;
the engine's own type cannot be named there, since cimporting it would import Lua (lupa) with
those modules at start-up.  Interpreted, it is a plain base class.  Rule: no state, nothing that
needs Lua; Runner has no behaviour.
"""

from __future__ import annotations

from typing import Any

from raxdb.server.base.errors import CommandError
from raxdb.server.table.args import maybe_int


def numkeys(argv: list[bytes], not_a_count: str) -> int:
    """EVAL's, EVALSHA's and FCALL's numkeys (argv[2]) in Redis's order of checks: `not_a_count` for
    what is not an integer (each command words it its own way), then too many, then negative."""
    n = maybe_int(argv[2])
    if n is None:
        raise CommandError(not_a_count)
    if n > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    if n < 0:
        raise CommandError("ERR Number of keys can't be negative")
    return n


class Runner:
    __slots__ = ()

    def run(self, c: Any, fn: Any, name: bytes, argv: list[bytes], numkeys: int, ro: bool,
            is_function: bool, allow_oom: bool = False, cross_slot: bool = True) -> bytes:
        """Run `fn` for client `c` (engine.Engine.run says how): the encoded reply."""
        raise NotImplementedError
