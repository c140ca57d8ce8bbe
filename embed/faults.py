"""Faults on demand from Python: the handle's methods that send raxdb's `DEBUG FAULT` test control
(server/commands/t_testfaults.py) to its server.  docs/testing-your-code.md#faults says what each is for.

    srv.fail_next(2, "LOADING")            # the next 2 commands answer -LOADING
    with srv.fail_for(5, "TRYAGAIN"):      # every keyed command, for 5 s or until the block ends
        ...
    srv.drop_connections()                 # every client connection, at once
    with srv.delay_replies(100): ...       # every reply 100 ms late
    with srv.refuse_connections(): ...     # connecting is refused; open connections go on

Rule: a mixin of EmbeddedServer (raxdb/embed/api.py), built on its `control()`; nothing of the
server but the wire.  Each arming method returns a `Fault`, which ends that fault by `.clear()` or
at the end of a `with` block; `clear_faults()` ends them all.
Invariants: while its server refuses connections, a handle keeps the one connection that armed the
refusal (the server spares it from drops) and sends its fault controls over it, since no other
can reach the server; it is closed when the refusal is cleared or the server stopped.
"""

from __future__ import annotations

import socket
from types import TracebackType
from typing import Any, Literal, Self

from raxdb.embed import control

ErrorName = Literal["LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN"]


class Fault:
    """One armed fault: `.clear()` ends it (harmless when it has ended already); a context manager
    that ends it on exit."""

    def __init__(self, owner: FaultControls, kind: str) -> None:
        self._owner = owner
        self.kind = kind  # "error", "delay" or "refuse"

    def clear(self) -> None:
        self._owner._fault("CLEAR", self.kind.upper())
        if self.kind == "refuse":
            self._owner._close_fault_link()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.clear()

    def __repr__(self) -> str:
        return f"<raxdb fault {self.kind}>"


class FaultControls:
    """The fault methods of raxdb.serve()'s handle (`control()` is the handle's)."""

    _fault_link: socket.socket | None = None

    def control(self, *args: str | bytes | int | float) -> object:  # EmbeddedServer's
        raise NotImplementedError

    def _fault(self, *args: str | bytes | int | float) -> Any:
        link = self._fault_link
        if link is None:
            return self.control("FAULT", *args)
        (reply,) = control.exchange(link, [("DEBUG", "FAULT", *args)])
        if isinstance(reply, control.ControlError):
            raise reply
        return reply

    def _close_fault_link(self) -> None:
        link, self._fault_link = self._fault_link, None
        if link is not None:
            link.close()

    # ---- errors ----------------------------------------------------------------------------------
    def fail(self, error: ErrorName = "LOADING", *, count: int | None = None, seconds: float | None = None,
             commands: str | list[str] | None = None) -> Fault:
        """Answer commands with `error` (-LOADING, -BUSY, -MASTERDOWN or -TRYAGAIN, as Redis 7.0
        words it): the next `count` of them, or all for `seconds` (whichever ends first), or all until
        cleared.  Commands Redis serves in that state pass (for LOADING: AUTH, HELLO, INFO, ...; for
        TRYAGAIN: commands without keys); `commands` limits it further to names matching glob patterns
        ("get", "h*", "client|list").  Replaces the error fault armed before."""
        args: list[str | int | float] = ["ERROR", error]
        if count is not None:
            args += ["COUNT", count]
        if seconds is not None:
            args += ["FOR", seconds]
        if commands is not None:
            args += ["COMMANDS", *([commands] if isinstance(commands, str) else commands)]
        self._fault(*args)
        return Fault(self, "error")

    def fail_next(self, n: int = 1, error: ErrorName = "LOADING", commands: str | list[str] | None = None) -> Fault:
        """The next `n` commands (that `error` applies to) answer `error`."""
        return self.fail(error, count=n, commands=commands)

    def fail_for(self, seconds: float, error: ErrorName = "LOADING", commands: str | list[str] | None = None) -> Fault:
        """Every command (that `error` applies to) answers `error` for `seconds`."""
        return self.fail(error, seconds=seconds, commands=commands)

    # ---- connections -----------------------------------------------------------------------------
    def drop_connections(self, client_id: int | None = None, *, addr: str | None = None,
                         name: str | None = None) -> int:
        """Drop client connections at once, as a dying server does (the client reads EOF, unsent
        replies are lost): all of them, or the one with that CLIENT ID, address or CLIENT SETNAME
        name.  The number dropped."""
        args: list[str | int] = ["DROP"]
        if client_id is not None:
            args += ["ID", client_id]
        if addr is not None:
            args += ["ADDR", addr]
        if name is not None:
            args += ["NAME", name]
        return int(self._fault(*args))

    def delay_replies(self, ms: int, seconds: float | None = None) -> Fault:
        """Hold every connection's replies `ms` milliseconds (for `seconds`, or until cleared); the
        server goes on serving meanwhile and each connection's replies keep their order."""
        self._fault("DELAY", ms, *(("FOR", seconds) if seconds is not None else ()))
        return Fault(self, "delay")

    def refuse_connections(self, seconds: float | None = None) -> Fault:
        """Stop listening (for `seconds`, or until cleared): connecting is refused (ECONNREFUSED),
        as with a server being restarted; open connections go on.  TCP only: a unix socket keeps
        accepting.  Meanwhile this handle's fault controls use the connection that armed it; its
        other controls cannot reach the server."""
        if self._fault_link is None:
            host, port, unixsocket = self.host, self.port, self.unixsocket  # type: ignore[attr-defined]
            link = control.connect(host, port, unixsocket)
            password = self._password()
            if password:
                (reply,) = control.exchange(link, [("AUTH", password)])
                if isinstance(reply, control.ControlError):
                    link.close()
                    raise reply
            self._fault_link = link
        self._fault("REFUSE", *(("FOR", seconds) if seconds is not None else ()))
        return Fault(self, "refuse")

    def _password(self) -> str | None:
        return None  # EmbeddedServer's: its requirepass

    def clear_faults(self) -> int:
        """End every fault armed on this server: the number that were."""
        try:
            return int(self._fault("CLEAR"))
        finally:
            self._close_fault_link()

    def fault_status(self) -> list[str]:
        """The faults armed now, one line each ("error LOADING count=2", "delay 100ms", ...)."""
        return [line.decode() for line in self._fault("STATUS")]
