"""The engine and a running script as the engine's helpers see them (busy.py, ldb.py, libs.py).

The engine (engine.py) imports its helpers and hands itself, or the script it runs, to them; they
name those objects through these protocols so that no helper imports the engine back.  Rule:
annotations only, no behaviour; engine.Engine and engine.Running satisfy them structurally.
"""

from __future__ import annotations

from typing import Any, Protocol


class Running(Protocol):
    """What is executing now (engine.Running)."""

    caller: Any  # the client whose EVAL / FCALL runs it
    name: bytes
    argv: list[bytes]
    start: float  # time.monotonic() at its start
    ro: bool
    allow_oom: bool
    wrote: bool
    killed: bool
    busy: bool  # past busy-reply-threshold: other clients are answered BUSY
    is_function: bool
    repl: int
    guarded: bool  # may a called command be refused other than as a first write (engine._refusal)

    # read-only here, so that engine.Running's (an engine.Engine) matches
    @property
    def engine(self) -> Engine: ...


class Engine(Protocol):
    """One Lua state with Redis's sandbox (engine.Engine)."""

    server: Any
    chunk_name: bytes
    lua: Any  # the lupa LuaRuntime
    h: Any  # the bootstrap's helper table
    ldb: Any  # the debugging session while one runs
    ldb_lua: Any
    bridge: Any  # the C bridge (cbridge.Bridge), or None

    # read-only here, so that engine.Engine's (an engine.Running) matches
    @property
    def running(self) -> Running | None: ...
