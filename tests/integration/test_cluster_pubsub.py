"""Cluster pub/sub across mixed clusters (raxdb and redis-server 7.0 nodes): PUBLISH over the bus
both ways, sharded pub/sub routed by slot and carried to the shard's replica (PUBLISHSHARD both
ways), the sunsubscribe push when a slot moves away, a blocked client redirected with MOVED after
its slot moved, and the bus over TLS (tls-cluster yes) with MEET both ways.

Every wait reads a frame (with the connection's timeout) or polls with a deadline."""

from __future__ import annotations

import socket

import pytest

from raxdb.storage.slots import key_hash_slot
from tests.integration import test_cluster_bus as bus_tests
from tests.integration.test_cluster_bus import Node, _form, _key_in, _until
from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import free_port, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

LOW, HIGH = range(0, 8192), range(8192, 16384)


nodes = bus_tests.nodes  # the fixture: raxdb and redis-server cluster nodes, stopped after the test


def _pair(nodes, first: str) -> tuple[Node, Node]:
    """(raxdb node, redis node), formed with `first` MEETing the other; the first serves LOW."""
    a = nodes(first)
    b = nodes("redis" if first == "raxdb" else "raxdb")
    _form(a, b)
    return (a, b) if first == "raxdb" else (b, a)


def _low(rax: Node, red: Node) -> Node:
    """The node serving LOW (the one that MEETs first)."""
    return rax if "0-8191" in rax.nodes()[rax.id] else red


def test_publish_reaches_every_node(nodes):
    """PUBLISH on redis-server reaches a raxdb subscriber (and a pattern one), and the reverse;
    each reply counts the publishing node's receivers only."""
    rax, red = _pair(nodes, "raxdb")
    subs = {}
    for n in (rax, red):
        sub = RawConnection(n.srv.port)
        assert parse(sub.call("SUBSCRIBE", "news"))[0] == b"subscribe"
        assert parse(sub.call("PSUBSCRIBE", "n*"))[0] == b"psubscribe"
        subs[n] = sub
    for publisher, other in ((red, rax), (rax, red)):
        body = f"from {publisher.srv.name}"
        assert publisher.call("PUBLISH", "news", body) == b":2\r\n"  # its own two subscriptions
        for n in (other, publisher):
            assert parse(subs[n].read_frame()) == [b"message", b"news", body.encode()]
            assert parse(subs[n].read_frame()) == [b"pmessage", b"n*", b"news", body.encode()]
    info = parse(rax.call("CLUSTER", "INFO")).decode()
    assert "cluster_stats_messages_publish_sent:1" in info and "cluster_stats_messages_publish_received:1" in info
    for sub in subs.values():
        sub.close()


@pytest.mark.parametrize("first", ["raxdb", "redis"])
def test_sharded_routing(nodes, first):
    """SSUBSCRIBE / SPUBLISH / SUNSUBSCRIBE: served by the slot's node, MOVED elsewhere (the same
    text from each kind of node), CROSSSLOT for channels of two slots; PUBSUB SHARDCHANNELS and
    SHARDNUMSUB are each node's own."""
    rax, red = _pair(nodes, first)
    low = _low(rax, red)
    high = red if low is rax else rax
    ch_low, ch_high = _key_in(LOW, "ch"), _key_in(HIGH, "ch")
    for here, there, mine, theirs in ((low, high, ch_low, ch_high), (high, low, ch_high, ch_low)):
        moved = b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(theirs), there.srv.port)
        for cmd in ("SSUBSCRIBE", "SUNSUBSCRIBE"):
            assert here.call(cmd, theirs) == moved
        assert here.call("SPUBLISH", theirs, "m") == moved
        assert here.call("SSUBSCRIBE", mine, theirs) == b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
        sub = RawConnection(here.srv.port)
        assert parse(sub.call("SSUBSCRIBE", mine)) == [b"ssubscribe", mine, 1]
        assert here.call("SPUBLISH", mine, "hello") == b":1\r\n"
        assert parse(sub.read_frame()) == [b"smessage", mine, b"hello"]
        assert parse(here.call("PUBSUB", "SHARDCHANNELS")) == [mine]
        assert parse(here.call("PUBSUB", "SHARDNUMSUB", mine, theirs)) == [mine, 1, theirs, 0]
        assert parse(there.call("PUBSUB", "SHARDNUMSUB", mine)) == [mine, 0]
        assert parse(sub.call("SUNSUBSCRIBE", mine)) == [b"sunsubscribe", mine, 0]
        sub.close()


def test_publishshard_reaches_the_shards_replica(nodes):
    """A redis-server replica of a raxdb master: SPUBLISH on the master reaches the replica's
    shard subscribers (PUBLISHSHARD from raxdb), SPUBLISH on the replica reaches the master's
    (PUBLISHSHARD from redis-server); PUBLISHSHARD goes to the shard only, not to the other master."""
    rax, red = _pair(nodes, "raxdb")
    replica = nodes("redis")
    assert rax.call("CLUSTER", "MEET", "127.0.0.1", str(replica.srv.port), str(replica.cport)) == b"+OK\r\n"
    _until("the third node to be known", lambda: rax.id in replica.nodes() and replica.id in rax.nodes()
           and replica.nodes()[rax.id][7] == "connected")
    assert replica.call("CLUSTER", "REPLICATE", rax.id) == b"+OK\r\n"
    _until("raxdb to list its replica", lambda: rax.nodes()[replica.id][2] == "slave"
           and rax.nodes()[replica.id][3] == rax.id and red.nodes().get(replica.id, ["", "", ""])[2] == "slave")
    channel = _key_in(LOW, "shard")
    assert red.call("SSUBSCRIBE", channel) == b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(channel), rax.srv.port)
    subs = {}
    for n in (rax, replica):
        subs[n] = RawConnection(n.srv.port)
        assert parse(subs[n].call("SSUBSCRIBE", channel)) == [b"ssubscribe", channel, 1]
    for publisher, other in ((rax, replica), (replica, rax)):
        body = f"via {publisher.id}".encode()
        assert publisher.call("SPUBLISH", channel, body) == b":1\r\n"
        for n in (publisher, other):
            assert parse(subs[n].read_frame()) == [b"smessage", channel, body]
    info = parse(red.call("CLUSTER", "INFO")).decode()
    assert "cluster_stats_messages_publishshard_received" not in info  # the other master got none
    for sub in subs.values():
        sub.close()


def test_sunsubscribe_when_the_slot_moves(nodes):
    """CLUSTER SETSLOT <slot> NODE <other>: the shard subscribers of that slot's channels on the
    node that lost it get the sunsubscribe push (RESP3), the same from raxdb and redis-server."""
    rax, red = _pair(nodes, "raxdb")
    pushes = []
    for here, there, slots in ((rax, red, LOW), (red, rax, HIGH)):
        tag = _key_in(slots, "moving")
        channels = [b"{%s}2" % tag, b"{%s}1" % tag]
        sub = RawConnection(here.srv.port)
        sub.call("HELLO", "3")
        sub.send(encode_command(("SSUBSCRIBE", *channels)))
        assert [parse(sub.read_frame())[2] for _ in channels] == [1, 2]
        assert here.call("CLUSTER", "SETSLOT", key_hash_slot(tag), "NODE", there.id) == b"+OK\r\n"
        frames = [sub.read_frame() for _ in channels]
        pushes.append([(f[:1], [x.replace(tag, b"TAG") if isinstance(x, bytes) else x for x in parse(f)])
                       for f in frames])
        assert sub.call("PING") == b"+PONG\r\n"
        sub.close()
    assert pushes[0] == pushes[1] == [(b">", [b"sunsubscribe", b"{TAG}1", 1]), (b">", [b"sunsubscribe", b"{TAG}2", 0])]


def _move(slot: int, src: Node, dst: Node) -> None:
    """A slot without keys from src to dst as redis-cli moves one: IMPORTING, MIGRATING, then
    NODE on dst (which takes a new config epoch, so its claim wins) and on src."""
    for n, word, other in ((dst, "IMPORTING", src), (src, "MIGRATING", dst), (dst, "NODE", dst), (src, "NODE", dst)):
        assert n.call("CLUSTER", "SETSLOT", slot, word, other.id) == b"+OK\r\n"


@pytest.mark.parametrize("block", [("BLPOP", "{K}", "0"), ("BLMOVE", "{K}", "{K}x", "LEFT", "RIGHT", "0"),
                                   ("XREAD", "BLOCK", "0", "STREAMS", "{K}s", "$")])
def test_blocked_client_moved(nodes, block):
    """A client blocked on a key whose slot moved to the other node: -MOVED to it, the same
    from raxdb and from redis-server."""
    rax, red = _pair(nodes, "raxdb")
    slot = key_hash_slot(b"K")
    if slot in HIGH:  # the slot (no keys in it) to raxdb first
        _move(slot, red, rax)
    replies = []
    for here, there in ((rax, red), (red, rax)):
        conn = RawConnection(here.srv.port)
        conn.send(encode_command(block))
        _until("the client to block", lambda here=here: b"blocked_clients:1\r" in here.call("INFO", "clients"))
        _move(slot, here, there)
        replies.append(conn.read_frame().replace(str(there.srv.port).encode(), b"PORT"))
        conn.close()
    assert replies[0] == replies[1] == b"-MOVED %d 127.0.0.1:PORT\r\n" % slot


# ---- tls-cluster ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.support import tlscerts

    if not tlscerts.HAVE_TOOLS:
        pytest.skip("openssl and redis-cli are needed")
    return tlscerts.make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_nodes(certs):
    from tests.support.tlscerts import tls_args

    started: list[Node] = []

    def make(kind: str) -> Node:
        cport = free_port()
        start = start_raxdb if kind == "raxdb" else start_redis
        srv = start("--cluster-enabled", "yes", "--cluster-port", str(cport), "--cluster-node-timeout", "3000",
                    *tls_args(certs, free_port(), "--tls-cluster", "yes"))
        node = Node(srv, cport)
        started.append(node)
        return node

    yield make
    for n in started:
        n.close()


@pytest.mark.parametrize("first", ["raxdb", "redis"])
def test_tls_cluster_meet(tls_nodes, certs, first):
    """tls-cluster yes: raxdb and redis-server MEET each other over TLS (each way), each announces
    its TLS port; a plain client is shown the plaintext ports in CLUSTER NODES and SLOTS and in
    MOVED, a TLS client the TLS ports; CLUSTER SHARDS lists both, as redis-server does."""
    from tests.support import tlscerts

    a = tls_nodes(first)
    b = tls_nodes("redis" if first == "raxdb" else "raxdb")
    _form(a, b)  # its address check looks at the plaintext port a plain client is shown
    rax, red = (a, b) if first == "raxdb" else (b, a)
    tls_port = {n: int(n.srv.proc.args[n.srv.proc.args.index("--tls-port") + 1]) for n in (rax, red)}
    for viewer in (rax, red):
        for n in (rax, red):
            assert viewer.nodes()[n.id][1].startswith(f"127.0.0.1:{n.srv.port}@{n.cport}")
        plain = parse(viewer.call("CLUSTER", "SLOTS"))
        assert sorted(r[2][1] for r in plain) == sorted(n.srv.port for n in (rax, red))
        with tlscerts.client(certs, tls_port[viewer]) as r:
            conn = r.connection_pool.get_connection()
            conn.send_command("CLUSTER", "NODES")
            text = conn.read_response()
            text = text.decode() if isinstance(text, bytes) else text
            for n in (rax, red):
                assert f"127.0.0.1:{tls_port[n]}@{n.cport}" in text
            conn.send_command("CLUSTER", "SLOTS")
            assert sorted(s[2][1] for s in conn.read_response()) == sorted(tls_port.values())
            r.connection_pool.release(conn)
        for shard in parse(viewer.call("CLUSTER", "SHARDS")):
            node = shard[3][0]
            assert node[0:6:2] == [b"id", b"port", b"tls-port"]
            assert {node[3], node[5]} in ({rax.srv.port, tls_port[rax]}, {red.srv.port, tls_port[red]})
    k = _key_in(HIGH)  # a plain client is sent to the plaintext port, a TLS client to the TLS port
    assert a.call("GET", k) == b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(k), b.srv.port)
    with tlscerts.client(certs, tls_port[a]) as r:
        conn = r.connection_pool.get_connection()
        conn.send_command("GET", k)
        with pytest.raises(Exception, match=f"{key_hash_slot(k)} 127.0.0.1:{tls_port[b]}$"):
            conn.read_response()
        r.connection_pool.release(conn)
    # and PUBLISH over the TLS bus
    sub = RawConnection(b.srv.port)
    sub.call("SUBSCRIBE", "tls")
    assert a.call("PUBLISH", "tls", "over tls") == b":0\r\n"
    assert parse(sub.read_frame()) == [b"message", b"tls", b"over tls"]
    sub.close()


@pytest.mark.parametrize("kind", ["raxdb", "redis"])
def test_tls_bus_refuses_plain_tcp(certs, kind):
    """A plain-TCP peer on a tls-cluster bus port: the handshake fails, the connection is closed
    with Redis's verbose line, the node serves on."""
    from tests.support.tlscerts import tls_args

    start = start_raxdb if kind == "raxdb" else start_redis
    cport = free_port()
    srv = start("--cluster-enabled", "yes", "--cluster-port", str(cport), "--loglevel", "verbose",
                *tls_args(certs, free_port(), "--tls-cluster", "yes"))
    try:
        with socket.create_connection(("127.0.0.1", cport), timeout=20) as s:
            s.sendall(b"RCmb" + bytes(2252))
            try:
                while s.recv(100):  # a TLS alert at most, then the close (or a reset)
                    pass
            except ConnectionResetError:
                pass
        assert srv.wait_log("Error accepting cluster node connection: error:0A00010B:SSL routines::wrong version "
                            "number")
        conn = RawConnection(srv.port)
        assert conn.call("PING") == b"+PONG\r\n"
        conn.close()
    finally:
        srv.stop()


def _port_with_free_bus() -> int:
    """A free port whose + 10000 is free too (the default bus port)."""
    while True:
        port = free_port()
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port


@pytest.mark.parametrize("kind", ["raxdb", "redis"])
def test_tls_only_node_bus_port(certs, kind):
    """A TLS-only node (port 0, tls-cluster yes) without cluster-port: its bus listens on the TLS
    port + 10000 (clusterInit) and announces it, as redis-server's; raxdb took port 0's + 10000."""
    from tests.support.tlscerts import cli, tls_args

    tls_port = _port_with_free_bus()
    start = start_raxdb if kind == "raxdb" else start_redis
    srv = start("--cluster-enabled", "yes", "--port", "0", *tls_args(certs, tls_port, "--tls-cluster", "yes"))
    try:
        myself = next(line for line in cli(certs, tls_port, "CLUSTER", "NODES").splitlines() if "myself" in line)
        assert myself.split()[1].endswith(f":{tls_port}@{tls_port + 10000}")  # no IP until a peer tells
        with socket.create_connection(("127.0.0.1", tls_port + 10000), timeout=20):
            pass
    finally:
        srv.stop()
