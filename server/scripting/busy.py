"""Serving other clients while a script runs past busy-reply-threshold (Redis's "busy script").

The script runs on the event loop thread, so the loop cannot run until it returns.  Redis, in the
same position, processes events from inside the script's hook; we do the equivalent from the Lua
count hook: poll the connected clients' sockets without blocking, read what they sent and feed it to
their normal input path.  While `server.busy_script` is set the dispatcher answers every command
without the allow-busy flag with the BUSY error, so what runs is SCRIPT KILL / FUNCTION KILL, SHUTDOWN
NOSAVE and the few connection commands Redis allows; their replies are flushed at the end of each
poll, since the loop's own end-of-iteration flush cannot run.

A client that hangs up meanwhile is freed at once, as Redis frees it between the events it
processes (a script may wait for a replica to go).  Limits, stated: new connections are accepted
only once the script ends (they wait in the listen backlog); the calling client is not read (Redis protects it the same way); a script blocked inside
one long command is not interrupted, as in Redis.  A TLS client's socket is read like any other;
its bytes go through its transport's `feed` (server/net/tls.py's Link: decrypted there, then the
Client's data_received), so it gets BUSY and SCRIPT KILL reaches the script over TLS too.
"""

from __future__ import annotations

import os
import select
import time
from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.scripting.interfaces import Running


def enter(server: Server, run: Running) -> None:
    run.busy = True
    server.busy_script = run
    for c in list(server.clients.values()):
        c.plain = False
    what = "function" if run.is_function else "script"
    LOG.warning(f"Slow {what} detected: still in execution after "
                f"{int((time.monotonic() - run.start) * 1000)} milliseconds. You can try killing "
                f"the script using the {'FUNCTION' if run.is_function else 'SCRIPT'} KILL command. "
                f"Script name is: {run.name.decode(errors='replace')}.")


def leave(server: Server, run: Running) -> None:
    server.busy_script = None
    _eof.clear()
    for c in list(server.clients.values()):
        c.update_plain()


_eof: set[int] = set()


def poll(server: Server, run: Running) -> None:
    """Read and serve whatever other clients sent, without blocking."""
    fds = {}
    for other in server.clients.values():
        if other is run.caller or other.closed or other.fd < 0 or other.fd in _eof:
            continue
        fds[other.fd] = other
    if not fds:
        return
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLIN)
    now = server.now_ms
    try:
        for fd, _ev in p.poll(0):
            c = fds.get(fd)
            if c is None:
                continue
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                _eof.add(fd)
                continue
            if not data:
                # freed now, as processEventsWhileBlocked's freeClientsInAsyncFreeQueue does: a
                # script may be waiting for it to go (a replica's link, connected_slaves)
                _eof.add(fd)
                t = c.transport
                c.connection_lost(None)
                if t is not None:
                    t.abort()
                continue
            try:
                feed = getattr(c.transport, "feed", None)  # a TLS link decrypts them first
                (feed or c.data_received)(data)
            except Exception as e:  # one client's trouble must not kill the script
                LOG.warning(f"Error serving client id={c.id} during a busy script: {type(e).__name__}: {e}")
                c.close()
    finally:
        server.now_ms = now  # the script keeps its own clock
        server.flush_writes()  # the loop, which flushes queued replies, is stuck in the script

