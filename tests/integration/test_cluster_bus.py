"""The cluster bus: raxdb nodes meet redis-server 7.0 nodes and each other (Redis 7.0's binary
messages, PING/PONG/MEET and gossip), agree on the slot map, and redirect clients to each other
with MOVED and ASK as Redis words them; bad packets on the cluster port are logged and dropped.

Every wait polls CLUSTER NODES / CLUSTER INFO until the expected event, with a deadline."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Callable

import pytest

from raxdb.storage.slots import key_hash_slot
from tests.support.cluster import until
from tests.support.diff import RawConnection, parse
from tests.support.servers import ServerProcess, free_port, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

DEADLINE_S = 30.0


class Node:
    def __init__(self, srv: ServerProcess, cport: int) -> None:
        self.srv = srv
        self.cport = cport
        self.conn = RawConnection(srv.port)
        self.id = parse(self.call("CLUSTER", "MYID")).decode()

    def call(self, *args: object) -> bytes:
        return self.conn.call(*args)

    def nodes(self) -> dict[str, list[str]]:
        text = parse(self.call("CLUSTER", "NODES")).decode()
        return {line.split()[0]: line.split() for line in text.splitlines()}

    def close(self) -> None:
        self.conn.close()
        self.srv.stop()


def _start(kind: Callable[..., ServerProcess]) -> Node:
    cport = free_port()
    srv = kind("--cluster-enabled", "yes", "--cluster-port", str(cport), "--cluster-node-timeout", "3000")
    return Node(srv, cport)


@pytest.fixture
def nodes():
    started: list[Node] = []

    def make(kind: str) -> Node:
        node = _start(start_raxdb if kind == "raxdb" else start_redis)
        started.append(node)
        return node

    yield make
    for n in started:
        n.close()


def _until(what: str, cond: Callable[[], bool]) -> None:
    until(what, cond, DEADLINE_S)


def _sees(a: Node, b: Node, slots: list[str]) -> bool:
    """Does `a` list `b` under its real ID as a connected master serving `slots`?"""
    line = a.nodes().get(b.id)
    return (line is not None and line[2] == "master" and line[7] == "connected" and line[8:] == slots
            and line[1].startswith(f"127.0.0.1:{b.srv.port}@{b.cport}"))


def _key_in(node_slots: range, tag: str = "") -> bytes:
    for i in range(100000):
        k = f"{tag}k{i}".encode()
        if key_hash_slot(k) in node_slots:
            return k
    raise AssertionError("no key found")


def _form(a: Node, b: Node) -> None:
    """Slots split between a and b, a MEETs b; both see each other and turn ok."""
    assert a.call("CLUSTER", "ADDSLOTSRANGE", "0", "8191") == b"+OK\r\n"
    assert b.call("CLUSTER", "ADDSLOTSRANGE", "8192", "16383") == b"+OK\r\n"
    assert a.call("CLUSTER", "MEET", "127.0.0.1", str(b.srv.port), str(b.cport)) == b"+OK\r\n"
    _until("both nodes to list each other", lambda: _sees(a, b, ["8192-16383"]) and _sees(b, a, ["0-8191"]))
    for n in (a, b):
        _until("cluster_state:ok", lambda n=n: b"cluster_state:ok" in n.call("CLUSTER", "INFO"))


@pytest.mark.parametrize("first", ["raxdb", "redis"])
def test_meet_with_redis(nodes, first):
    """raxdb MEETs redis-server, and the reverse: each lists the other with its slots; each
    redirects to the other with the same MOVED and ASK texts."""
    a = nodes(first)
    b = nodes("redis" if first == "raxdb" else "raxdb")
    _form(a, b)
    rax, red = (a, b) if first == "raxdb" else (b, a)
    low, high = range(0, 8192), range(8192, 16384)
    rax_slots, red_slots = (low, high) if first == "raxdb" else (high, low)
    k_red, k_rax = _key_in(red_slots), _key_in(rax_slots)
    assert rax.call("GET", k_red) == b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(k_red), red.srv.port)
    assert red.call("GET", k_rax) == b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(k_rax), rax.srv.port)
    assert rax.call("SET", k_rax, "v") == b"+OK\r\n"
    # a slot migrating from each node to the other: ASK for a missing key, TRYAGAIN for a mix
    for src, dst, k in ((rax, red, k_rax), (red, rax, k_red)):
        slot = key_hash_slot(k)
        assert src.call("SET", k, "v") == b"+OK\r\n"
        assert src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id) == b"+OK\r\n"
        missing = _key_in(range(slot, slot + 1), "missing")
        assert src.call("GET", missing) == b"-ASK %d 127.0.0.1:%d\r\n" % (slot, dst.srv.port)
        assert src.call("GET", k) == b"$1\r\nv\r\n"  # a key still here is served here
        assert src.call("MGET", k, missing).startswith(b"-TRYAGAIN Multiple keys request during rehashing")
        assert dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id) == b"+OK\r\n"
        assert dst.call("GET", missing) == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, src.srv.port)
        assert dst.call("ASKING") == b"+OK\r\n"
        assert dst.call("GET", missing) == b"$-1\r\n"
        assert dst.call("GET", missing).startswith(b"-MOVED")  # ASKING lasts one command
        for n in (src, dst):
            assert n.call("CLUSTER", "SETSLOT", slot, "STABLE") == b"+OK\r\n"
    info = parse(rax.call("CLUSTER", "INFO")).decode()
    assert "cluster_known_nodes:2" in info and "cluster_size:2" in info
    assert "cluster_stats_messages_pong_received:" in info


def test_three_nodes_by_gossip(nodes):
    """Two raxdb nodes and a redis-server: raxdb1 MEETs the other two, and the gossip section
    introduces raxdb2 and redis-server to each other."""
    r1, r2, rs = nodes("raxdb"), nodes("raxdb"), nodes("redis")
    ranges = {r1: ("0", "5000"), r2: ("5001", "10000"), rs: ("10001", "16383")}
    for n, (lo, hi) in ranges.items():
        n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi)
    r1.call("CLUSTER", "MEET", "127.0.0.1", str(r2.srv.port), str(r2.cport))
    r1.call("CLUSTER", "MEET", "127.0.0.1", str(rs.srv.port), str(rs.cport))
    for a in ranges:
        for b, (lo, hi) in ranges.items():
            if a is not b:
                _until(f"{a.srv.name} to see {b.srv.name}", lambda a=a, b=b, lo=lo, hi=hi: _sees(a, b, [f"{lo}-{hi}"]))
    for n in ranges:
        _until("cluster_state:ok", lambda n=n: b"cluster_state:ok" in n.call("CLUSTER", "INFO"))
        assert b"cluster_known_nodes:3" in n.call("CLUSTER", "INFO")


def test_cluster_slots_in_slot_order(nodes):
    """CLUSTER SLOTS lists the ranges by slot, as redis-server walks its slot table, whichever
    node is asked: two raxdb nodes and a redis-server with interleaved ranges give the same reply
    (Redis's suite waits for every node's reply to match before its cluster tests)."""
    r1, r2, rs = nodes("raxdb"), nodes("raxdb"), nodes("redis")
    r1.call("CLUSTER", "ADDSLOTSRANGE", "0", "99", "5000", "5099")
    r2.call("CLUSTER", "ADDSLOTSRANGE", "100", "199", "6000", "16383")
    rs.call("CLUSTER", "ADDSLOTSRANGE", "200", "4999", "5100", "5999")
    r2.call("CLUSTER", "MEET", "127.0.0.1", str(r1.srv.port), str(r1.cport))
    r2.call("CLUSTER", "MEET", "127.0.0.1", str(rs.srv.port), str(rs.cport))
    ns = (r1, r2, rs)
    _until("the three nodes to meet", lambda: all(len(n.nodes()) == 3 and all(
        f[7] == "connected" and f[8:] for f in n.nodes().values()) for n in ns))
    replies = [n.call("CLUSTER", "SLOTS") for n in ns]
    assert replies[0] == replies[1] == replies[2]
    starts = [r[0] for r in parse(replies[2])]
    assert starts == [0, 100, 200, 5000, 5100, 6000]


def test_blocked_client_follows_its_slot(nodes):
    """A client blocked on a key whose slot moves to another node is answered MOVED to it
    (clusterRedirectBlockedClientIfNeeded), on a raxdb node as on a redis-server node; once the
    cluster is down, a blocked client gets CLUSTERDOWN The cluster is down."""
    rax, red = nodes("raxdb"), nodes("redis")
    _form(rax, red)
    replies = {}
    for holder, other, slots in ((rax, red, range(0, 8192)), (red, rax, range(8192, 16384))):
        key = _key_in(slots, "blocked")
        slot = key_hash_slot(key)
        waiter = RawConnection(holder.srv.port)
        waiter.send(b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(key), key))
        _until("the client to block", lambda h=holder: b"blocked_clients:1" in h.call("INFO", "clients"))
        for n in (other, holder):
            assert n.call("CLUSTER", "SETSLOT", slot, "NODE", other.id) == b"+OK\r\n"
        replies[holder] = waiter.read_frame()
        waiter.close()
        assert replies[holder] == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, other.srv.port)
        _until("no client blocked", lambda h=holder: b"blocked_clients:0" in h.call("INFO", "clients"))
    moved = key_hash_slot(_key_in(range(0, 8192), "blocked"))
    key = _key_in(range(moved + 1, 8192) if moved < 4096 else range(0, moved), "down")  # a slot rax kept
    waiter = RawConnection(rax.srv.port)
    waiter.send(b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(key), key))
    _until("the client to block", lambda: b"blocked_clients:1" in rax.call("INFO", "clients"))
    red.srv.stop()
    assert waiter.read_frame() == b"-CLUSTERDOWN The cluster is down\r\n"
    waiter.close()


def _link_times(node: Node, peer: Node) -> dict[str, int]:
    """CLUSTER LINKS of `node`: the create-time of its "to" and "from" links with `peer`."""
    out = {}
    for link in parse(node.call("CLUSTER", "LINKS")):
        fields = dict(zip(link[::2], link[1::2], strict=True))
        if fields[b"node"].decode() == peer.id:
            out[fields[b"direction"].decode()] = fields[b"create-time"]
    return out


def test_debug_cluster_links_and_packet_filter(nodes):
    """DEBUG DROP-CLUSTER-PACKET-FILTER 1 makes the node ignore PONGs: its ping to the peer stays
    unanswered (CLUSTER NODES' ping-sent stays set; the peer's own PINGs still prove it alive, and
    no second ping goes out while one waits, as in Redis).  DEBUG CLUSTERLINK KILL TO frees the
    outbound link: the cron makes a new one, whose PING (the filter reset) is answered; KILL FROM
    frees the inbound one, and the peer connects again."""
    rax, red = nodes("raxdb"), nodes("redis")
    _form(rax, red)
    _until("both links", lambda: set(_link_times(rax, red)) == {"to", "from"})
    assert rax.call("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "1") == b"+OK\r\n"

    def unanswered_for(ms: int) -> bool:
        sent = int(rax.nodes()[red.id][4])
        return sent != 0 and time.time() * 1000 - sent > ms

    _until("a ping unanswered for 2 s", lambda: unanswered_for(2000))
    assert rax.call("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1") == b"+OK\r\n"
    before = _link_times(rax, red)
    assert rax.call("DEBUG", "CLUSTERLINK", "KILL", "TO", red.id) == b"+OK\r\n"
    _until("a new outbound link", lambda: _link_times(rax, red).get("to", 0) > before["to"])
    _until("the PONG on it", lambda: rax.nodes()[red.id][4] == "0")
    assert rax.call("DEBUG", "CLUSTERLINK", "KILL", "FROM", red.id) == b"+OK\r\n"
    _until("a new inbound link", lambda: _link_times(rax, red).get("from", 0) > before["from"])
    assert rax.nodes()[red.id][2] == "master"


def _header(totlen: int, msg_type: int = 0, count: int = 0) -> bytes:
    return struct.pack(">4sIHHHH", b"RCmb", totlen, 1, 7000, msg_type, count)


def test_bad_packets_are_dropped(nodes):
    """Garbage, an oversized length, a truncated message and a message whose length does not
    match its type: each is logged, the link closed or the packet ignored, the node serves on."""
    node = nodes("raxdb")

    def send(data: bytes, expect_close: bool) -> None:
        with socket.create_connection(("127.0.0.1", node.cport), timeout=10) as s:
            s.sendall(data)
            if expect_close:
                s.settimeout(10)
                assert s.recv(10) == b""  # the node dropped the link
        assert node.call("PING") == b"+PONG\r\n"

    send(b"GET / HTTP/1.1\r\n\r\n", True)
    assert node.srv.wait_log("Bad message length or signature received from Cluster bus.")
    send(_header(0x7FFFFFFF), True)
    send(_header(100), True)  # shorter than any message
    send(_header(4000) + b"\0" * 100, False)  # truncated, then the client goes away
    # a PING that claims 5 gossip entries but carries none: ignored with Redis's log line
    ping = bytearray(2256)
    ping[:16] = _header(2256, 0, 5)
    send(bytes(ping), False)
    assert node.srv.wait_log("Received invalid ping packet of length 2256 but expected length 2776")
    meet = bytearray(2256)
    meet[:16] = _header(2256, 2, 0)
    meet[40:80] = b"z" * 40  # not a node name
    send(bytes(meet), False)
    assert node.srv.wait_log("Received a meet packet with an invalid sender name; ignored")
    info = parse(node.call("CLUSTER", "INFO")).decode()
    assert "cluster_known_nodes:1" in info  # nobody was added


def test_meet_from_an_unknown_node(nodes):
    """A MEET from a node nobody knows: a PONG in Redis's format comes back at once, the sender is
    added in handshake, and dropped when the handshake times out (nothing listens on its bus)."""
    node = nodes("raxdb")
    name = b"ab" * 20
    meet = bytearray(2256)
    meet[:16] = _header(2256, 2, 0)
    meet[40:80] = name
    struct.pack_into(">HH", meet, 2246, 0, free_port())  # pport, cport
    with socket.create_connection(("127.0.0.1", node.cport), timeout=10) as s:
        s.sendall(bytes(meet))
        pong = b""
        while len(pong) < 2256:
            chunk = s.recv(65536)
            assert chunk
            pong += chunk
    sig, totlen, ver, port, msg_type, count = struct.unpack_from(">4sIHHHH", pong)
    assert (sig, totlen, ver, port, msg_type, count) == (b"RCmb", 2256, 1, node.srv.port, 1, 0)
    assert pong[40:80] == node.id.encode()
    handshake = [f for n, f in node.nodes().items() if f[2] == "handshake"]
    assert len(handshake) == 1 and handshake[0][1].startswith("127.0.0.1:7000@")
    _until("the handshake to time out", lambda: len(node.nodes()) == 1)
    assert b"+PONG" in node.call("PING")


def test_reshard_between_raxdb_and_redis(nodes):
    """redis-cli --cluster reshard moves slots, and their keys (MIGRATE, RESTORE-ASKING, SETSLOT
    NODE), from a raxdb node to a redis-server node and back; --cluster check agrees after each."""
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli not installed")
    rax, red = nodes("raxdb"), nodes("redis")
    _form(rax, red)
    keys = {}
    for i in range(3000):  # about 7 keys in each block of 40 slots
        k = f"key:{i}".encode()
        owner = rax if key_hash_slot(k) < 8192 else red
        assert owner.call("SET", k, str(i)) == b"+OK\r\n"
        keys[k] = str(i).encode()
    for src, dst in ((rax, red), (red, rax)):
        before = _slot_map(rax)
        out = subprocess.run([cli, "--cluster", "reshard", f"127.0.0.1:{rax.srv.port}", "--cluster-from", src.id,
                              "--cluster-to", dst.id, "--cluster-slots", "40", "--cluster-yes"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        check = subprocess.run([cli, "--cluster", "check", f"127.0.0.1:{red.srv.port}"], capture_output=True,
                               text=True, timeout=60)
        assert "[OK] All nodes agree about slots configuration." in check.stdout, check.stdout
        assert "[OK] All 16384 slots covered." in check.stdout
        assert "[WARNING]" not in check.stdout, check.stdout  # no slot left open
        after = _slot_map(rax)
        assert after == _slot_map(red)
        moved = [s for s in range(16384) if before[s] != after[s]]
        assert len(moved) == 40 and all(before[s] == src.id and after[s] == dst.id for s in moved)
        by_id = {rax.id: rax, red.id: red}
        for k, v in keys.items():
            assert by_id[after[key_hash_slot(k)]].call("GET", k) == b"$%d\r\n%s\r\n" % (len(v), v), k
        assert any(key_hash_slot(k) in moved for k in keys)  # keys really travelled


def _slot_map(node: Node) -> list[str]:
    """The owner's ID of every slot, from `node`'s CLUSTER NODES."""
    owners = [""] * 16384
    for name, fields in node.nodes().items():
        for item in fields[8:]:
            if item.startswith("["):
                continue
            lo, _, hi = item.partition("-")
            for s in range(int(lo), int(hi or lo) + 1):
                owners[s] = name
    return owners


@pytest.mark.parametrize("victim", ["raxdb", "redis"])
def test_failure_detection(nodes, victim):
    """A master that stops answering is PFAIL after cluster-node-timeout, then FAIL once a
    majority of masters report it (raxdb counts reports and sends FAIL, redis-server too), and the
    cluster goes down because its slots are not served."""
    kinds = ["raxdb", "redis", victim] if victim == "raxdb" else ["raxdb", "raxdb", "redis"]
    ns = [nodes(k) for k in kinds]
    bounds = [("0", "5000"), ("5001", "10000"), ("10001", "16383")]
    for n, (lo, hi) in zip(ns, bounds, strict=True):
        n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi)
    for n in ns[1:]:
        ns[0].call("CLUSTER", "MEET", "127.0.0.1", str(n.srv.port), str(n.cport))
    for a in ns:
        for b, (lo, hi) in zip(ns, bounds, strict=True):
            if a is not b:
                _until("the three nodes to meet", lambda a=a, b=b, lo=lo, hi=hi: _sees(a, b, [f"{lo}-{hi}"]))
    dead = ns[2]
    dead.srv.stop()
    for n in ns[:2]:
        _until(f"{n.srv.name} to flag the stopped node as fail",
               lambda n=n: n.nodes()[dead.id][2] == "master,fail")
        _until("cluster_state:fail", lambda n=n: b"cluster_state:fail" in n.call("CLUSTER", "INFO"))
        assert n.call("GET", _key_in(range(10001, 16384))) == b"-CLUSTERDOWN The cluster is down\r\n"


@pytest.mark.parametrize("kinds", [("raxdb", "raxdb"), ("raxdb", "redis"), ("redis", "raxdb")])
def test_config_epoch_collision(nodes, kinds):
    """Two masters that meet with the same config epoch (clusterHandleConfigEpochCollision): the
    one with the smaller node ID takes a new, greater epoch; the other keeps its own; both agree
    on the result and on the slot map, and serve on."""
    a, b = (nodes(k) for k in kinds)
    for n in (a, b):
        assert n.call("CLUSTER", "SET-CONFIG-EPOCH", "5") == b"+OK\r\n"
    # a second SET-CONFIG-EPOCH is refused as Redis refuses it (the node has an epoch now)
    assert a.call("CLUSTER", "SET-CONFIG-EPOCH", "6") == b"-ERR Node config epoch is already non-zero\r\n"
    _form(a, b)
    low, high = sorted((a, b), key=lambda n: n.id)

    def epochs(viewer: Node) -> dict[str, int]:
        return {name: int(f[6]) for name, f in viewer.nodes().items()}

    _until("the smaller ID to take a new config epoch",
           lambda: all(epochs(v) == {low.id: 6, high.id: 5} for v in (a, b)))
    for n in (a, b):
        info = parse(n.call("CLUSTER", "INFO")).decode()
        assert "cluster_current_epoch:6" in info and "cluster_state:ok" in info
        assert _slot_map(n) == _slot_map(a)
        assert n.call("PING") == b"+PONG\r\n"


@pytest.mark.parametrize("allow", ["yes", "no"])
@pytest.mark.parametrize("kind", ["raxdb", "redis"])
def test_setslot_node_of_the_last_slot(nodes, kind, allow):
    """CLUSTER SETSLOT <slot> NODE <other> on a master that gives its last slot away (Redis 7.0's
    clusterCommand): with cluster-allow-replica-migration yes it becomes the other's replica at
    once; with no it stays a master without slots."""
    a, b = nodes(kind), nodes("raxdb")
    assert a.call("CONFIG", "SET", "cluster-allow-replica-migration", allow) == b"+OK\r\n"
    assert a.call("CLUSTER", "ADDSLOTS", "0") == b"+OK\r\n"
    assert b.call("CLUSTER", "ADDSLOTSRANGE", "1", "16383") == b"+OK\r\n"
    assert a.call("CLUSTER", "MEET", "127.0.0.1", str(b.srv.port), str(b.cport)) == b"+OK\r\n"
    _until("both nodes to list each other", lambda: _sees(a, b, ["1-16383"]) and _sees(b, a, ["0"]))
    assert a.call("CLUSTER", "SETSLOT", "0", "NODE", b.id) == b"+OK\r\n"
    me = a.nodes()[a.id]
    if allow == "yes":
        assert me[2] == "myself,slave" and me[3] == b.id and me[8:] == []
        assert a.srv.wait_log(f"Configuration change detected. Reconfiguring myself as a replica of {b.id}")
        _until("b to list a as its replica", lambda: b.nodes()[a.id][2:4] == ["slave", b.id])
        _until("a to replicate b", lambda: b"master_link_status:up" in a.call("INFO", "replication"))
    else:
        assert me[2] == "myself,master" and me[3] == "-" and me[8:] == []
