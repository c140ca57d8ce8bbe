"""client-output-buffer-limit for the normal class, against redis-server 7.0: a client that
pipelines big replies and does not read is closed once its unsent output passes the hard limit,
or stays past the soft limit for its seconds, and a client that reads is not.  (The pubsub class: tests/unit/test_pubsub.py.)"""

from __future__ import annotations

import socket
import time

import hiredis
import pytest

from tests.support.diff import RawConnection, encode_command
from tests.support.servers import run_on_both, start_raxdb, start_redis

VALUE = 256 * 1024
GETS = 200  # 50 MB of replies if nothing stopped them


@pytest.fixture(params=["raxdb", pytest.param("redis", marks=pytest.mark.oracle)])
def server(request):
    srv = start_raxdb() if request.param == "raxdb" else start_redis()
    try:
        yield srv
    finally:
        srv.stop()


def _client_ids(admin: RawConnection) -> set[int]:
    text = admin.call("CLIENT", "LIST").decode()
    return {int(part[3:]) for line in text.splitlines() for part in line.split() if part.startswith("id=")}


def _wait_closed(admin: RawConnection, cid: int) -> None:
    """Until the server has closed client `cid` (polled through another connection)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cid not in _client_ids(admin):
            return
    raise AssertionError(f"client {cid} was never closed")


def _slow_reader(port: int) -> tuple[socket.socket, int]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # little room in the kernel for it
    s.connect(("127.0.0.1", port))
    s.sendall(encode_command(("CLIENT", "ID")))
    reply = b""
    while not reply.endswith(b"\r\n"):
        reply += s.recv(64)
    return s, int(reply[1:-2])


def _drain(s: socket.socket) -> int:
    """Read until the server's close; the bytes that arrived."""
    s.settimeout(30)
    n = 0
    try:
        while chunk := s.recv(1 << 20):
            n += len(chunk)
    except ConnectionResetError:  # the close discarded unsent output: a reset, not a FIN
        pass
    return n


@pytest.fixture
def admin(server):
    """A connection to `server` with a big value stored; the normal class's limit is lifted after."""
    c = RawConnection(server.port)
    c.call("SET", "big", "x" * VALUE)
    try:
        yield c
    finally:
        c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
        c.close()


def _closed_without_reading(server, admin: RawConnection, limit: str) -> int:
    """Under `limit`, a client pipelines GETs of the big value and does not read: wait for the
    server to close it, then read what reached it; the bytes it got."""
    admin.call("CONFIG", "SET", "client-output-buffer-limit", limit)
    s, cid = _slow_reader(server.port)
    s.sendall(encode_command(("GET", "big")) * GETS)
    _wait_closed(admin, cid)
    return _drain(s)


def test_a_client_that_does_not_read_is_closed_at_the_hard_limit(server, admin):
    assert _closed_without_reading(server, admin, "normal 1mb 0 0") < GETS * VALUE // 4  # cut off early
    assert admin.call("PING") == b"+PONG\r\n"  # the others are served on
    if server.name == "raxdb":
        assert server.wait_log("scheduled to be closed ASAP for overcoming of output buffer limits")


def test_a_client_over_its_soft_limit_for_its_seconds_is_closed(server, admin):
    # Its output stops growing once the server stops reading from it: the periodic check
    # (clientsCron) closes it when the second has passed.
    assert _closed_without_reading(server, admin, "normal 0 512kb 1") < GETS * VALUE // 4


def test_a_client_that_reads_keeps_its_connection(server, admin):
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
    reader = RawConnection(server.port)
    for _ in range(20):  # 5 MB in all, but never more than one reply unread
        assert len(reader.call("GET", "big")) > VALUE
    assert reader.call("PING") == b"+PONG\r\n"
    reader.close()


def _never_answered(srv) -> list[object]:
    """Replies over the hard limit (100 kB) in one go: Redis closes the client as it adds them,
    before any write, so the client reads nothing at all, and runs nothing it pipelined after
    them (the SET after the LRANGE); a transaction runs whole first; a reply just under the limit
    (with what the reply buffer holds) is sent."""
    admin = RawConnection(srv.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 100000 0 0")
    admin.call("RPUSH", "list", *(["x" * 1000] * 150))
    admin.call("RPUSH", "small", *(["x" * 1000] * 90))
    out: list[object] = []
    for request in (encode_command(["LRANGE", "list", "0", "-1"]),
                    b"".join(encode_command(c) for c in (["SET", "k", "1"], ["LRANGE", "list", "0", "-1"],
                                                          ["SET", "after", "1"], ["RPUSH", "small", "y"])),
                    b"".join(encode_command(c) for c in (["MULTI"], ["SET", "t", "1"], ["LRANGE", "list", "0", "-1"],
                                                          ["SET", "t", "2"], ["EXEC"])),
                    encode_command(["LRANGE", "small", "0", "-1"])):
        sock = socket.create_connection(("127.0.0.1", srv.port))
        sock.settimeout(10)
        sock.sendall(request)
        data = b""
        try:
            while chunk := sock.recv(1 << 16):
                data += chunk
                if request.startswith(b"*4\r\n$6\r\nLRANGE\r\n$5\r\nsmall") and len(data) >= 90 * 1007:
                    break
        except (ConnectionResetError, TimeoutError):
            pass
        sock.close()
        out.append(len(data))
    out.append([admin.call("GET", "k"), admin.call("GET", "t"), admin.call("EXISTS", "after"),
                admin.call("LLEN", "small")])
    return out


@pytest.mark.oracle
def test_replies_over_the_hard_limit_are_never_sent():
    ours, theirs = run_on_both(_never_answered)
    assert ours == theirs
    assert ours[:3] == [0, 0, 0] and ours[3] > 90_000


def _answer_until_closed(srv, *cmds: list[str]) -> bytes:
    """What a fresh connection that pipelines `cmds` reads until the server closes it."""
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.settimeout(60)
    sock.sendall(b"".join(encode_command(cmd) for cmd in cmds))
    data = b""
    try:
        while chunk := sock.recv(1 << 16):
            data += chunk
    except ConnectionResetError:
        pass
    sock.close()
    return data


def _huge_random_counts(srv) -> list[object]:
    """A billion random picks under a 1 MB limit: Redis stops making them once the client is to be
    closed, so the command ends at once and nothing is sent (raxdb makes them a chunk at a time
    and stops alike, instead of building gigabytes first)."""
    admin = RawConnection(srv.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1000000 0 0")
    admin.call("HSET", "h", "a", "b")
    admin.call("SADD", "s", "a")
    admin.call("ZADD", "z", "1", "a")
    out: list[object] = []
    for cmd in (["HRANDFIELD", "h", "-999999999"], ["HRANDFIELD", "h", "-99999999", "WITHVALUES"],
                ["SRANDMEMBER", "s", "-999999999"], ["ZRANDMEMBER", "z", "-999999999"],
                ["ZRANDMEMBER", "z", "-99999999", "WITHSCORES"]):
        data = _answer_until_closed(srv, cmd, ["SET", "after", "1"])
        out.append((cmd[0], len(data), admin.call("EXISTS", "after")))
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
    admin.call("DEL", "h", "s", "z")
    out.append(admin.call("SRANDMEMBER", "s", "-3"))
    return out


@pytest.mark.oracle
def test_huge_random_counts_stop_at_the_limit():
    ours, theirs = run_on_both(_huge_random_counts)
    assert ours == theirs
    assert all(n == 0 and exists == b":0\r\n" for _, n, exists in ours[:5]), ours


def _keys_under_a_limit(srv) -> list[object]:
    """KEYS by a client whose output limit is checked per command: a reply under the limit is
    whole (raxdb makes it a chunk of keys at a time for such a client), and one past it is never
    sent, the client dropped and what it pipelined after not run (Redis's loop stops once the
    client is to be closed; raxdb stops making chunks alike)."""
    admin = RawConnection(srv.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1000000 0 0")
    admin.call("DEBUG", "POPULATE", "300000")
    reader = hiredis.Reader()
    reader.feed(admin.call("KEYS", "key:1999*"))
    out: list[object] = [sorted(reader.gets())]
    data = _answer_until_closed(srv, ["KEYS", "*"], ["SET", "after", "1"])
    out += [len(data), admin.call("EXISTS", "after"), admin.call("DBSIZE")]
    return out


@pytest.mark.oracle
def test_keys_stops_at_the_limit():
    ours, theirs = run_on_both(_keys_under_a_limit)
    assert ours == theirs
    assert len(ours[0]) == 111 and ours[1:] == [0, b":0\r\n", b":300000\r\n"], ours[1:]
