"""The engine as the EVAL script cache and the FUNCTION registry call it: one method, `run`.

engine.Engine subclasses Runner.  Compiled, Runner is an extension type (runner.pxd) that
scripts.pxd and functions.pxd declare their engine as, so that EVALSHA's and FCALL's call of
`Engine.run` is a C call through its method table, not a Python method call with nine arguments;
the engine's own type cannot be named there, since cimporting it would import Lua (lupa) with
those modules at start-up.  Interpreted, it is a plain base class.  Rule: no state, no behaviour.
"""

from __future__ import annotations

from typing import Any


class Runner:
    __slots__ = ()

    def run(self, c: Any, fn: Any, name: bytes, argv: list[bytes], numkeys: int, ro: bool,
            is_function: bool, allow_oom: bool = False, cross_slot: bool = True) -> bytes:
        """Run `fn` for client `c` (engine.Engine.run says how): the encoded reply."""
        raise NotImplementedError
