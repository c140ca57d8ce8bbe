"""The handler's call (server/table/registry.py's `run_handler`): compiled, a cpdef handler's own C
function is called straight, found once per handler; whatever handler a command record holds now
is the one called, by the fast loop, by EXEC (call_command) and by a script's redis.call."""

from __future__ import annotations

from typing import Any

import raxdb.server.commands  # noqa: F401  (the command table)
from raxdb.server.config.options import Config
from raxdb.server.core import Server
from raxdb.server.net.client import Client
from tests.support.diff import encode_command
from tests.support.transport import SinkTransport


class _Recording(SinkTransport):
    def __init__(self) -> None:
        self.out = bytearray()

    def write(self, data: bytes) -> None:
        self.out += data

    def writelines(self, parts: list[bytes]) -> None:
        for part in parts:
            self.out += part


def _client() -> tuple[Client, _Recording]:
    c = Client(Server(Config()))
    t = _Recording()
    c.connection_made(t)  # type: ignore[arg-type]
    return c, t


def _send(c: Client, t: _Recording, *commands: tuple[str, ...]) -> bytes:
    del t.out[:]
    c.data_received(b"".join(encode_command(cmd) for cmd in commands))
    c.server.flush_writes()
    return bytes(t.out)


BATCH = (("SET", "k", "1"), ("INCR", "k"), ("MULTI",), ("SET", "k", "5"), ("INCR", "k"), ("EXEC",),
         ("EVAL", "return redis.call('incr', KEYS[1])", "1", "k"), ("INCR", "nonint", "extra"))
REPLIES = b"+OK\r\n:2\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:6\r\n:7\r\n" \
          b"-ERR wrong number of arguments for 'incr' command\r\n"


def test_a_replaced_handler_is_the_one_called() -> None:
    """INCR's record first runs its compiled handler (its C function, once found); its handler then
    replaced on the record (as a family's first import replaces a placeholder), the new one serves
    the fast loop, EXEC and redis.call alike; put back, the first one serves again."""
    c, t = _client()
    assert _send(c, t, *BATCH) == REPLIES
    cmd = c.server.table.lookup([b"INCR", b"k"])
    assert cmd is not None
    original = cmd.proc
    seen: list[list[bytes]] = []

    def recording(client: Any, argv: list[bytes]) -> Any:
        seen.append(list(argv))
        return original(client, argv)

    cmd.proc = recording
    try:
        _send(c, t, ("DEL", "k"))
        assert _send(c, t, *BATCH) == REPLIES
        # the fast loop's, EXEC's, the script's (not the arity error's)
        assert seen == [[b"INCR", b"k"], [b"INCR", b"k"], [b"incr", b"k"]]
    finally:
        cmd.proc = original
    _send(c, t, ("DEL", "k"))
    assert _send(c, t, *BATCH) == REPLIES
    assert len(seen) == 3


def test_handler_errors_and_optional_arguments_through_the_c_call() -> None:
    """A compiled handler's CommandError comes back through its C function as through its Python
    call: the error reply, counted, the connection going on; INCR and HSET (a default argument each)
    run with their defaults."""
    c, t = _client()
    stats = c.server.table.lookup([b"INCR"])
    assert stats is not None
    calls, failed = stats.calls, stats.failed_calls  # (the records are shared by every server in process)
    replies = _send(c, t, ("SET", "s", "abc"), ("INCR", "s"), ("HSET", "h", "f", "v"), ("HSET", "h", "f"),
                    ("MULTI",), ("INCR", "s"), ("HSET", "h", "g", "w"), ("EXEC",), ("GET", "s"))
    assert replies == (b"+OK\r\n-ERR value is not an integer or out of range\r\n:1\r\n"
                       b"-ERR wrong number of arguments for 'hset' command\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n"
                       b"*2\r\n-ERR value is not an integer or out of range\r\n:1\r\n$3\r\nabc\r\n")
    assert (stats.calls - calls, stats.failed_calls - failed) == (2, 2)
