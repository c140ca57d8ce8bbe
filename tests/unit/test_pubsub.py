"""Pub/Sub against redis-server 7.0: subscription frames, deliveries, the RESP2 subscribed context,
RESP3 push frames mixed with replies, PUBSUB introspection, slow-subscriber limits, redis-py."""

from __future__ import annotations

import socket

import pytest

from tests.support.diff import RawConnection, encode_command
from tests.support.servers import start_raxdb, start_redis
from tests.support.transport import SinkTransport


def frames(conn: RawConnection, args, n: int) -> list[bytes]:
    """Send one command and read `n` frames (multi-channel (un)subscribe sends one per channel)."""
    conn.send(encode_command(args))
    return [conn.read_frame() for _ in range(n)]


def open_pair(port: int, protocol: int) -> tuple[RawConnection, RawConnection]:
    sub, pub = RawConnection(port), RawConnection(port)
    if protocol == 3:
        sub.call("HELLO", "3")
        pub.call("HELLO", "3")
    return sub, pub


def run_both(raxdb, oracle, protocol, scenario) -> list:
    results = []
    for port in (raxdb.port, oracle.port):
        sub, pub = open_pair(port, protocol)
        try:
            results.append(scenario(sub, pub))
        finally:
            sub.close()
            pub.close()
    assert results[0] == results[1], f"\n  raxdb: {results[0]!r}\n  redis: {results[1]!r}"
    return results[0]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request):
    return request.param


def test_subscribe_frames(diff):
    for args, n in [(("SUBSCRIBE", "a", "b", "a"), 3), (("PSUBSCRIBE", "p*", "q?"), 2), (("SSUBSCRIBE", "s1", "s2"), 2),
                    (("UNSUBSCRIBE", "b", "nope"), 2), (("PUNSUBSCRIBE", "q?"), 1), (("SUNSUBSCRIBE", "s2"), 1),
                    (("UNSUBSCRIBE",), 1), (("PUNSUBSCRIBE",), 1), (("SUNSUBSCRIBE",), 1),
                    (("UNSUBSCRIBE",), 1), (("PUNSUBSCRIBE",), 1), (("SUNSUBSCRIBE",), 1)]:
        assert frames(diff.ours, args, n) == frames(diff.theirs, args, n), args


def test_punsubscribe_all_in_subscription_order(diff):
    """Redis 7.0 keeps a client's patterns in a list: PUNSUBSCRIBE without arguments confirms them
    in the order they were subscribed (a resubscribed pattern goes last)."""
    for args, n in [(("PSUBSCRIBE", "z*", "a*", "m*", "b?"), 4), (("PUNSUBSCRIBE", "a*"), 1),
                    (("PSUBSCRIBE", "a*", "c*"), 2), (("PUNSUBSCRIBE",), 5)]:
        assert frames(diff.ours, args, n) == frames(diff.theirs, args, n), args


def test_arity(diff):
    for cmd in ("SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "PUBLISH", "SPUBLISH", "PUBSUB"):
        diff(cmd)
    diff("PUBLISH", "a")
    diff("PUBLISH", "a", "b", "c")
    diff("SPUBLISH", "a", "b", "c")


def test_resp2_subscribed_context(diff2):
    diff2("SUBSCRIBE", "a")
    for cmd in (("GET", "x"), ("SET", "x", "1"), ("MULTI",), ("PUBLISH", "a", "m"), ("PING",), ("PING", "hi"),
                ("PING", "a", "b"), ("EXEC",), ("SELECT", "1"), ("PUBSUB", "NUMPAT")):
        diff2(*cmd)
    diff2("PSUBSCRIBE", "x*")
    diff2("UNSUBSCRIBE", "a")
    diff2("GET", "x")
    diff2("PUNSUBSCRIBE")
    diff2("GET", "x")
    diff2("SSUBSCRIBE", "s")
    diff2("GET", "x")
    diff2("SUNSUBSCRIBE")
    diff2("GET", "x")
    diff2("PING")


def test_resp3_mixes_commands(raxdb, oracle):
    def scenario(sub, pub):
        out = frames(sub, ("SUBSCRIBE", "a"), 1)
        out += [sub.call("SET", "x", "1"), sub.call("GET", "x"), sub.call("PING"), sub.call("PUBLISH", "a", "m")]
        out.append(sub.read_frame())
        out.append(pub.call("PUBLISH", "a", "n"))
        out += [sub.read_frame(), sub.call("GET", "x")]
        return out

    run_both(raxdb, oracle, 3, scenario)


def test_resp3_message_to_itself_keeps_its_place_in_a_pipeline(raxdb, oracle):
    # The message a client publishes to itself goes after the replies of the commands before it
    # in the same pipeline, and before its PUBLISH's reply, as Redis appends it to its buffer.
    def scenario(sub, pub):
        out = frames(sub, ("SUBSCRIBE", "a"), 1)
        sub.send(encode_command(("PING",)) + encode_command(("SET", "x", "1")) + encode_command(("PUBLISH", "a", "m"))
                 + encode_command(("PING", "after")))
        out += [sub.read_frame() for _ in range(5)]
        return out

    run_both(raxdb, oracle, 3, scenario)


def test_confirmations_and_messages_ignore_client_reply(raxdb, oracle, proto):
    """(Un)subscribe confirmations and messages are pushes in Redis's eyes (CLIENT_PUSHING), so
    CLIENT REPLY OFF and SKIP hold back neither, in RESP2 as in RESP3; other replies stay held."""
    def scenario(sub, pub):
        sub.send(b"".join(encode_command(a) for a in (
            ("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "ch", "ch2"), ("PSUBSCRIBE", "c*"))))
        out = [sub.read_frame() for _ in range(3)]
        out.append(pub.call("PUBLISH", "ch", "hi"))
        out += [sub.read_frame() for _ in range(2)]
        sub.send(b"".join(encode_command(a) for a in (
            ("CLIENT", "REPLY", "SKIP"), ("UNSUBSCRIBE", "ch"), ("PING",), ("PUNSUBSCRIBE",),
            ("CLIENT", "REPLY", "ON"), ("UNSUBSCRIBE",))))
        while not out[-1].endswith(b":0\r\n"):
            out.append(sub.read_frame())
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_publish_to_channel_and_patterns(raxdb, oracle, proto):
    def scenario(sub, pub):
        out = frames(sub, ("SUBSCRIBE", "news", "other"), 2)
        out += frames(sub, ("PSUBSCRIBE", "n*", "*s", "x[yz]"), 3)
        out.append(pub.call("PUBLISH", "news", "hello"))
        out.append(sub.read_frame())  # the channel first, then each matching pattern in any order
        out.append(sorted(sub.read_frame() for _ in range(2)))
        out.append(pub.call("PUBLISH", "xz", b"\x00bin\r\n"))
        out.append(sub.read_frame())
        out.append(pub.call("PUBLISH", "nothing-matches-q", "m"))
        out.append(pub.call("PUBLISH", "no", ""))
        out.append(sub.read_frame())
        out.append(sub.call("PING"))
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_publish_counts_each_subscriber(raxdb, oracle, proto):
    def scenario(sub, pub):
        third = RawConnection(sub.sock.getpeername()[1])
        try:
            out = frames(sub, ("SUBSCRIBE", "c"), 1) + frames(third, ("SUBSCRIBE", "c"), 1)
            out += frames(third, ("PSUBSCRIBE", "c*"), 1)
            out.append(pub.call("PUBLISH", "c", "m"))
            out += [sub.read_frame(), third.read_frame(), third.read_frame()]
            out.append(pub.call("PUBSUB", "NUMSUB", "c", "d"))
            out.append(pub.call("PUBSUB", "NUMPAT"))
            return out
        finally:
            third.close()

    run_both(raxdb, oracle, proto, scenario)


def test_shard_channels(raxdb, oracle, proto):
    def scenario(sub, pub):
        out = frames(sub, ("SSUBSCRIBE", "s1", "s2"), 2)
        out += frames(sub, ("SUBSCRIBE", "s1"), 1)
        out.append(pub.call("SPUBLISH", "s1", "x"))
        out.append(sub.read_frame())
        out.append(pub.call("PUBLISH", "s1", "y"))
        out.append(sub.read_frame())
        out.append(pub.call("SPUBLISH", "nobody", "z"))
        out.append(pub.call("PUBSUB", "SHARDNUMSUB", "s1", "s2", "s3"))
        out.append(pub.call("PUBSUB", "SHARDCHANNELS", "s1"))
        out.append(pub.call("PUBSUB", "SHARDCHANNELS", "nomatch*"))
        out += frames(sub, ("SUNSUBSCRIBE", "s1"), 1)
        out.append(pub.call("SPUBLISH", "s1", "x"))
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_pubsub_introspection(raxdb, oracle, proto):
    def scenario(sub, pub):
        out = frames(sub, ("SUBSCRIBE", "a1", "a2", "b1"), 3)
        out += frames(sub, ("PSUBSCRIBE", "a*", "a*", "z*"), 3)
        out.append(sorted(pub.call("PUBSUB", "CHANNELS").split(b"\r\n")))
        out.append(sorted(pub.call("PUBSUB", "CHANNELS", "a*").split(b"\r\n")))
        out.append(pub.call("PUBSUB", "CHANNELS", "zz"))
        out.append(pub.call("PUBSUB", "NUMPAT"))
        out.append(pub.call("PUBSUB", "NUMSUB"))
        out.append(pub.call("PUBSUB", "CHANNELS", "a", "b"))
        out.append(pub.call("PUBSUB", "NUMPAT", "x"))
        out.append(pub.call("PUBSUB", "HELP"))
        out.append(pub.call("PUBSUB", "help"))
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_inside_multi(raxdb, oracle, proto):
    def scenario(sub, pub):
        out = [pub.call("MULTI"), pub.call("PUBLISH", "c", "1"), pub.call("PUBLISH", "c", "2")]
        out += frames(sub, ("SUBSCRIBE", "c"), 1)
        out.append(pub.call("EXEC"))
        out += [sub.read_frame(), sub.read_frame()]
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_reset_and_disconnect_drop_subscriptions(raxdb, oracle, proto):
    def scenario(sub, pub):
        out = frames(sub, ("SUBSCRIBE", "c"), 1) + frames(sub, ("PSUBSCRIBE", "c*"), 1)
        out.append(sub.call("RESET"))
        out.append(pub.call("PUBLISH", "c", "m"))
        out.append(sub.call("GET", "x"))
        gone = RawConnection(pub.sock.getpeername()[1])
        out += frames(gone, ("SUBSCRIBE", "d"), 1)
        gone.call("PING")
        gone.close()
        # The server notices the close asynchronously: wait for it through NUMSUB.
        while pub.call("PUBSUB", "NUMSUB", "d") != b"*2\r\n$1\r\nd\r\n:0\r\n":
            pass
        out.append(pub.call("PUBLISH", "d", "m"))
        return out

    run_both(raxdb, oracle, proto, scenario)


def test_slow_subscriber_is_disconnected():
    srv = start_raxdb("--client-output-buffer-limit", "pubsub 256kb 128kb 60")
    try:
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", srv.port))
        slow.sendall(encode_command(("SUBSCRIBE", "flood")))
        pub = RawConnection(srv.port)
        while pub.call("PUBSUB", "NUMSUB", "flood") != b"*2\r\n$5\r\nflood\r\n:1\r\n":
            pass
        payload = b"x" * 65536
        receivers = []
        for _ in range(2000):  # up to 128 MB: far beyond any socket buffer plus the limit
            n = pub.call("PUBLISH", "flood", payload)
            receivers.append(n)
            if n == b":0\r\n":
                break
        assert receivers[-1] == b":0\r\n", "the subscriber that never reads was not disconnected"
        assert pub.call("PUBSUB", "NUMSUB", "flood") == b"*2\r\n$5\r\nflood\r\n:0\r\n"
        assert srv.wait_log("output buffer limits")
        pub.close()
        slow.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("start", [start_raxdb, pytest.param(start_redis, marks=pytest.mark.oracle)], ids=["raxdb", "redis"])
def test_subscriber_that_keeps_up_stays_connected(start):
    # Messages queue per loop iteration before they are written; what was written must leave the
    # limit's count.  Each round queues ~38 KB (one pipeline, one read event) under a 64 KB hard
    # limit; the subscriber reads every round, so it is never over the limit and never dropped,
    # by raxdb as by redis-server.
    srv = start("--client-output-buffer-limit", "pubsub 64kb 0 0")
    try:
        sub = RawConnection(srv.port)
        sub.send(encode_command(("SUBSCRIBE", "r")))
        assert sub.read_frame().startswith(b"*3\r\n$9\r\nsubscribe")
        pub = RawConnection(srv.port)
        burst = encode_command(("PUBLISH", "r", "m" * 8)) * 1000
        for _ in range(4):
            pub.send(burst)
            assert [pub.read_frame() for _ in range(1000)] == [b":1\r\n"] * 1000
            assert all(sub.read_frame().endswith(b"m" * 8 + b"\r\n") for _ in range(1000))
        assert pub.call("PUBSUB", "NUMSUB", "r") == b"*2\r\n$1\r\nr\r\n:1\r\n"
        assert not any("output buffer limits" in line for line in srv.log)
        pub.close()
        sub.close()
    finally:
        srv.stop()


def test_redis_py_pubsub_get_message(r):
    p = r.pubsub()
    p.subscribe("ch")
    p.psubscribe("c*")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    assert p.get_message(timeout=5)["type"] == "psubscribe"
    assert r.publish("ch", "hello") == 2
    m1 = p.get_message(timeout=5)
    m2 = p.get_message(timeout=5)
    assert (m1["type"], m1["channel"], m1["data"]) == ("message", b"ch", b"hello")
    assert (m2["type"], m2["pattern"], m2["data"]) == ("pmessage", b"c*", b"hello")
    p.unsubscribe()
    p.punsubscribe()
    p.close()


def test_redis_py_pubsub_listen_resp3(raxdb):
    import redis

    client = redis.Redis(port=raxdb.port, protocol=3)
    try:
        p = client.pubsub(ignore_subscribe_messages=True)
        p.subscribe("news")
        client.publish("news", "one")
        client.publish("news", "two")
        got = []
        for msg in p.listen():
            if msg["type"] == "message":
                got.append(msg["data"])
            if len(got) == 2:
                break
        assert got == [b"one", b"two"]
        p.close()
    finally:
        client.close()


# ---- the delivery's limit check, in process: what the transport still holds counts ----------------
class _UnreadTransport(SinkTransport):
    """A peer that reads nothing until the test says so: what is written stays in the transport."""

    def __init__(self) -> None:
        self.held = 0
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.held += len(data)

    def writelines(self, parts: list[bytes]) -> None:
        self.held += sum(map(len, parts))

    def get_write_buffer_size(self) -> int:
        return self.held

    def abort(self) -> None:
        self.aborted = True


def _subscriber_and_publisher(limit: str):
    """A server in process under `limit`, a subscriber of "ch" on an unread transport, a publisher,
    and `turn(n)`: n PUBLISHes of 1,000-byte messages in one read event, the end-of-iteration
    flush not yet run (the loop's: `flush()` runs it)."""
    import raxdb.server.commands  # noqa: F401
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server
    from raxdb.server.net.client import Client

    srv = Server(Config())
    pending: list = []
    # flushed when the test says, as the loop would: call_soon(callback, *args)
    srv.call_soon = lambda fn, *args: pending.append((fn, args))  # type: ignore[method-assign]
    sub, pub = Client(srv), Client(srv)
    sub.connection_made(_UnreadTransport())  # type: ignore[arg-type]
    pub.connection_made(SinkTransport())  # type: ignore[arg-type]
    pub.data_received(encode_command(("CONFIG", "SET", "client-output-buffer-limit", limit)))
    sub.data_received(encode_command(("SUBSCRIBE", "ch")))

    def flush() -> None:
        while pending:
            fn, args = pending.pop()
            fn(*args)

    def turn(n: int) -> None:
        pub.data_received(encode_command(("PUBLISH", "ch", "m" * 1000)) * n)

    flush()
    return srv, sub, turn, flush


def test_a_delivery_counts_what_the_transport_still_holds():
    """Output a flush left in the transport (a peer that does not read) counts in the next
    iteration's deliveries: the subscriber is dropped as its messages pass the hard limit, before
    the flush, as Redis drops it as it adds them to its reply list."""
    srv, sub, turn, flush = _subscriber_and_publisher("pubsub 32kb 0 0")
    turn(20)  # ~20 KB: over the 16 KB reply buffer, under the limit
    flush()
    assert not sub.closed and sub.transport.held > 20_000
    turn(20)  # with the 20 KB held: over the limit within this read event
    assert sub.closed and sub.transport.aborted
    assert not srv.pubsub.channels


def test_a_delivery_goes_by_what_the_transport_holds_now():
    """What the transport held when a delivery asked it is a bound until the next flush; a
    transport that drained meanwhile is asked again before a subscriber is dropped."""
    srv, sub, turn, flush = _subscriber_and_publisher("pubsub 32kb 0 0")
    turn(20)
    flush()
    turn(1)  # asks the transport: ~20 KB held
    sub.transport.held = 0  # the peer read it all
    turn(19)  # 20 KB queued: past the reply buffer with the bound, well under the limit without it
    assert not sub.closed
    flush()
    assert not sub.closed and sub.transport.held > 20_000
