"""The flush's own write of a plain socket (server/net/client.py's "Writing": compiled, write(2)
while uvloop's transport holds nothing), against redis-server 7.0.15 on the same scenarios.

What it must keep: a reply the kernel takes only in part (a reader slower than the server, its
socket buffer full) arrives whole and in order, its rest queued by the transport, and what comes
after it waits behind it; a connection the server closed (QUIT, CLIENT KILL, a protocol error)
while others connect and others' output is being made for it never writes to a socket that is not
its own (the descriptor's number is reused by the next accept).  Over TCP and a unix socket.
And a uvloop whose loop module lacks the transports' names does not stop the client module's
import: the flush then writes through the transport, as under another loop.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

from tests.support.diff import RawConnection, encode_command
from tests.support.servers import ServerProcess, start_raxdb, start_redis

KEYS = 64
VALUE = 1000  # each GET's reply a small piece: the flush joins them into one payload
GETS = 12000  # ~12 MB of replies, past what the kernel holds for a reader with a 4 KiB receive buffer


class Side:
    """A server and how to connect to it (`path`: its unix socket, or None for TCP)."""

    def __init__(self, srv: ServerProcess, path: str | None) -> None:
        self.srv, self.path = srv, path

    def sock(self, rcvbuf: int = 0, sndbuf: int = 0) -> socket.socket:
        s = socket.socket(socket.AF_UNIX if self.path else socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # little room in the kernel for it
        if sndbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        s.settimeout(30)
        s.connect(self.path or ("127.0.0.1", self.srv.port))
        return s

    def conn(self) -> RawConnection:
        return RawConnection(self.path or self.srv.port)


@pytest.fixture(params=[("raxdb", "tcp"), ("raxdb", "unix"),
                        pytest.param(("redis", "tcp"), marks=pytest.mark.oracle),
                        pytest.param(("redis", "unix"), marks=pytest.mark.oracle)],
                ids=["raxdb-tcp", "raxdb-unix", "redis-tcp", "redis-unix"])
def side(request):
    name, kind = request.param
    tmp = tempfile.mkdtemp(prefix="dw-")
    path = os.path.join(tmp, "s.sock") if kind == "unix" else None
    extra = ("--unixsocket", path) if path else ()
    srv = (start_raxdb if name == "raxdb" else start_redis)(*extra)
    try:
        yield Side(srv, path)
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _value(i: int) -> bytes:
    return (b"%05d" % i) * (VALUE // 5)


def _read_exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(1 << 16, n - len(buf)))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def test_replies_past_the_socket_buffer_arrive_whole_and_in_order(side: Side) -> None:
    """A pipeline whose replies the kernel cannot take at once (the reader does not read until it
    sent everything): the first flush's write is short, the transport queues the rest; a second
    batch sent while that is held is answered after it.  Every byte arrives, in order."""
    admin = side.conn()
    for i in range(KEYS):
        assert admin.call("SET", f"k{i}", _value(i)) == b"+OK\r\n"
    # room in the kernel for every request sent before the first read (~300 KB): whether the server
    # reads them all while its replies are held is not what this test asks, and a unix socket's
    # default send buffer (208 KB) once left the second batch's sendall waiting on it (CI, interpreted)
    s = side.sock(rcvbuf=4096, sndbuf=1 << 20)
    first = b"".join(encode_command(("GET", f"k{i % KEYS}")) for i in range(GETS))
    s.sendall(first)
    # the second batch: held behind the first's unsent replies (its server reads it, or reads it
    # once the first drains; either way its replies come after them)
    s.sendall(encode_command(("ECHO", "after")) + encode_command(("GET", "k1")))
    want = b"".join(b"$%d\r\n%s\r\n" % (VALUE, _value(i % KEYS)) for i in range(GETS))
    want += b"$5\r\nafter\r\n" + b"$%d\r\n%s\r\n" % (VALUE, _value(1))
    assert _read_exactly(s, len(want)) == want
    # and nothing more than that: the next reply is the next command's
    s.sendall(encode_command(("PING",)))
    assert _read_exactly(s, 7) == b"+PONG\r\n"
    s.close()
    admin.close()


def _closing_scenarios(side: Side, how: str, rounds: int) -> None:
    """`rounds` times: a subscriber is closed (`how`) while a publisher's messages for it are made
    in the same pipeline and a new connection is accepted, which must read its own replies only."""
    pub = side.conn()
    for r in range(rounds):
        sub = side.sock()
        sub.sendall(encode_command(("CLIENT", "ID")) + encode_command(("SUBSCRIBE", "ch")))
        head = b""
        while head.count(b"\r\n") < 1 + 6:  # CLIENT ID's line and SUBSCRIBE's six
            head += sub.recv(4096)
        cid = int(head.split(b"\r\n")[0][1:])
        publish = encode_command(("PUBLISH", "ch", "m" * 200)) * 5
        if how == "kill":
            pub.send(encode_command(("CLIENT", "KILL", "ID", str(cid))) + publish)
        else:
            pub.send(publish)  # its messages are made for the subscriber as it closes
            # QUIT (allowed to a RESP2 subscriber): +OK, then the close; a bad frame: its error, then the close
            sub.sendall(encode_command(("QUIT",)) if how == "quit" else b"*1\r\n$x\r\n")
        new = side.sock()  # accepted as the subscriber goes (its descriptor's number free again)
        new.sendall(encode_command(("PING",)) + encode_command(("ECHO", f"r{r}")))
        want = b"+PONG\r\n" + b"$%d\r\n%s\r\n" % (len(f"r{r}"), f"r{r}".encode())
        assert _read_exactly(new, len(want)) == want, (how, r)
        # the publisher's replies: the kill's, then the receivers of each message (1 or 0)
        if how == "kill":
            assert pub.read_frame() == b":1\r\n"
        for _ in range(5):
            assert pub.read_frame() in (b":1\r\n", b":0\r\n")
        # the subscriber's own stream ends with the server's close, its messages whole before it
        sub.settimeout(30)
        rest = b""
        while chunk := sub.recv(1 << 16):
            rest += chunk
        assert rest.count(b"m" * 200) == rest.count(b"$200\r\n"), (how, r)
        sub.close()
        new.sendall(encode_command(("PING",)))
        assert _read_exactly(new, 7) == b"+PONG\r\n"
        new.close()
    pub.close()


@pytest.mark.parametrize("how", ["kill", "quit", "protocol-error"])
def test_a_closed_clients_output_reaches_no_other_connection(side: Side, how: str) -> None:
    _closing_scenarios(side, how, 30)


# (in a process of its own: a compiled module is imported once a process)
_IMPORT_WITHOUT_NAMES = """
import sys, types
import uvloop
fake = types.ModuleType("uvloop.loop")
sys.modules["uvloop.loop"] = fake
uvloop.loop = fake
import raxdb.server.net.client as client
print(repr(client._DIRECT_TYPES))
"""


def test_a_uvloop_without_its_transports_names_does_not_stop_the_import() -> None:
    pytest.importorskip("uvloop")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    r = subprocess.run([sys.executable, "-c", _IMPORT_WITHOUT_NAMES], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "()"
