"""Cluster mode on one node, differentially: raxdb and redis-server 7.0, both started with
cluster-enabled yes, get the same commands and must give the same bytes (CLUSTER KEYSLOT, the
CLUSTER subcommands' errors, CLUSTERDOWN / CROSSSLOT in commands and transactions, CLUSTER INFO
once all slots are served, GETKEYSINSLOT's order).  The bus between nodes is
tests/integration/test_cluster_bus.py's."""

from __future__ import annotations

import binascii
import os
import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies

from raxdb.server.cluster import nodesconf, routing
from raxdb.server.cluster.state import FAIL, HANDSHAKE, MASTER, MYSELF, OK, SLAVE, ClusterState, Node
from raxdb.storage.slots import key_hash_slot
from tests.support.diff import Diff, RawConnection, encode_command, parse
from tests.support.servers import (
    ROOT,
    ServerProcess,
    free_port,
    redis_binary,
    server_pair,
    start_raxdb,
    start_redis,
)

pytestmark = pytest.mark.oracle


def _cluster_args() -> tuple[str, ...]:
    return ("--cluster-enabled", "yes", "--cluster-port", str(free_port()), "--cluster-node-timeout", "1000")


@pytest.fixture(scope="module")
def pair():
    bus = ("--cluster-enabled", "yes", "--cluster-node-timeout", "1000")
    with server_pair(*bus, ours=("--cluster-port", str(free_port())),
                     theirs=("--cluster-port", str(free_port()))) as servers:
        yield servers


@pytest.fixture
def cdiff(pair):
    """A Diff on the two cluster nodes, both without keys or slots before the test."""
    d = Diff(pair[0].port, pair[1].port)
    d.both("FLUSHALL")
    d.both("CLUSTER", "RESET", "HARD")
    yield d
    d.close()


def _wait_state(d: Diff, word: bytes, deadline_s: float = 20.0) -> None:
    """Until both nodes report cluster_state:<word> (a master waits 2 s after start-up and after
    a minority before it turns ok, as Redis's clusterUpdateState)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        ours, theirs = d.both("CLUSTER", "INFO")
        if all(b"cluster_state:" + word in r for r in (ours, theirs)):
            return
        time.sleep(0.05)
    raise AssertionError(f"cluster_state never became {word!r}:\n{ours!r}\n{theirs!r}")


KEYS = [b"", b"foo", b"bar", b"{user1000}.following", b"{user1000}.followers", b"foo{}{bar}", b"foo{{bar}}zap",
        b"foo{bar}{zap}", b"{}", b"{", b"}", b"}{", b"a{b", b"a}b{c}", b"\x00\xff{\x01}", b"123456789"]


def test_keyslot(cdiff):
    for key in KEYS:
        cdiff("CLUSTER", "KEYSLOT", key)
    assert key_hash_slot(b"123456789") == 0x31C3 & 0x3FFF  # CRC16/XMODEM's check value


def _slot_by_definition(key: bytes) -> int:
    """keyHashSlot as Redis's cluster.c words it, with binascii's CRC-16/XMODEM."""
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return binascii.crc_hqx(key, 0) & 0x3FFF


@settings(max_examples=3000, deadline=None)
@given(strategies.lists(strategies.sampled_from([b"{", b"}", b"a", b"\x00", b"\xff", b"user:1000"]), max_size=12))
def test_key_hash_slot_is_its_definition(parts):
    """Compiled, key_hash_slot is its own C loop (the tag's search, a table CRC): the same slot as
    the definition for keys made mostly of braces, where the tag's rules (the first `{`, the
    first `}` after it, an empty tag ignored) decide."""
    key = b"".join(parts)
    assert key_hash_slot(key) == _slot_by_definition(key)


def test_slot_errors(cdiff):
    cdiff.script("""
        CLUSTER ADDSLOTS 16384
        CLUSTER ADDSLOTS -1
        CLUSTER ADDSLOTS abc
        CLUSTER ADDSLOTS 3 3
        CLUSTER DELSLOTS 3
        CLUSTER ADDSLOTSRANGE 1 2 3
        CLUSTER ADDSLOTSRANGE 5 3
        CLUSTER DELSLOTSRANGE 1 2 3
        CLUSTER ADDSLOTS 7
        CLUSTER ADDSLOTS 7
        CLUSTER ADDSLOTSRANGE 5 9
        CLUSTER DELSLOTSRANGE 5 9
        CLUSTER DELSLOTS 7
        CLUSTER COUNTKEYSINSLOT 16384
        CLUSTER COUNTKEYSINSLOT x
        CLUSTER GETKEYSINSLOT 1 -1
        CLUSTER GETKEYSINSLOT 16384 1
        CLUSTER SETSLOT 1 foo
        CLUSTER SETSLOT 1 migrating
        CLUSTER SETSLOT 99999 stable
        CLUSTER SETSLOT 1 node abc
        CLUSTER SETSLOT 1 migrating 0123456789012345678901234567890123456789
        CLUSTER SETSLOT 1 importing 0123456789012345678901234567890123456789
        CLUSTER RESET foo
        CLUSTER SET-CONFIG-EPOCH -1
        CLUSTER SET-CONFIG-EPOCH x
        CLUSTER FORGET abc
        CLUSTER COUNT-FAILURE-REPORTS abc
        CLUSTER MEET 127.0.0.1 x
        CLUSTER MEET 127.0.0.1 1 x
        CLUSTER MEET 127.0.0.1 1 2 3
        CLUSTER MEET foo 1
        CLUSTER MEET 127.0.0.1 0
        CLUSTER MEET 127.0.0.1 70000
        CLUSTER foo
        CLUSTER KEYSLOT
        SELECT 1
        SELECT 0
        SWAPDB 0 1
        READONLY
        READWRITE
        ASKING
        CLUSTER HELP
    """)


def test_setslot_on_own_slot(cdiff):
    cdiff("CLUSTER", "ADDSLOTS", "1")
    cdiff("CLUSTER", "SETSLOT", "1", "IMPORTING", "0123456789012345678901234567890123456789")
    cdiff("CLUSTER", "SETSLOT", "2", "MIGRATING", "0123456789012345678901234567890123456789")
    cdiff("CLUSTER", "SETSLOT", "1", "STABLE")
    ours, theirs = cdiff.both("CLUSTER", "MYID")
    cdiff.ours.call("CLUSTER", "SETSLOT", "2", "NODE", parse(ours))
    cdiff.theirs.call("CLUSTER", "SETSLOT", "2", "NODE", parse(theirs))
    cdiff("CLUSTER", "COUNTKEYSINSLOT", "2")
    cdiff("CLUSTER", "SETSLOT", "1", "IMPORTING", "x" * 40)


def test_bumpepoch_and_set_config_epoch(cdiff):
    cdiff("CLUSTER", "SET-CONFIG-EPOCH", "5")
    cdiff("CLUSTER", "SET-CONFIG-EPOCH", "6")
    cdiff("CLUSTER", "BUMPEPOCH")
    cdiff("CLUSTER", "RESET", "HARD")
    cdiff("CLUSTER", "BUMPEPOCH")
    cdiff("CLUSTER", "BUMPEPOCH")


def test_unserved_slots_and_crossslot(cdiff):
    cdiff.script("""
        SET foo bar
        GET foo
        PING
        MSET a 1 b 2
        CLUSTER ADDSLOTSRANGE 0 16383
        MSET a 1 b 2
        MSET {a}1 1 {a}2 2
        MGET {a}1 {a}2 {b}
    """)


def test_cluster_info_all_slots(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    cdiff("CLUSTER", "INFO")
    cdiff("CLUSTER", "COUNTKEYSINSLOT", "0")
    cdiff("CLUSTER", "DELSLOTS", "100")
    _wait_state(cdiff, b"fail")
    cdiff("CLUSTER", "INFO")
    cdiff("SET", "foo", "bar")  # served slot, cluster down
    cdiff("CLUSTER", "FLUSHSLOTS")
    cdiff("CLUSTER", "INFO")


def test_info_cluster_section(cdiff):
    cdiff("INFO", "cluster")


def test_transactions_one_slot(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    cdiff.script("""
        MULTI
        SET a 1
        SET b 2
        EXEC
        MULTI
        SET {a}1 1
        SET {a}2 2
        EXEC
        MULTI
        MSET a 1 b 2
        SET a 1
        EXEC
        EVAL "return redis.call('get', KEYS[1])" 2 a b
        EVAL "return 1" 1 {a}x
    """)


def test_pipelined_commands_each_routed(cdiff):
    """A batch sent in one write, which the fast loop runs without execute() while a command's
    slot is served here and stable: each command is still routed as it comes, so a slot given up
    inside the batch is refused to the commands after it, and ASKING / READONLY mean the same."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    slot = str(key_hash_slot(b"foo"))
    batch = [("SET", "foo", "1"), ("GET", "foo"), ("PING",), ("READONLY",), ("GET", "foo"), ("READWRITE",),
             ("ASKING",), ("GET", "foo"), ("GET", "foo"), ("SET", "bar", "2"),
             ("CLUSTER", "DELSLOTS", slot), ("GET", "foo"), ("SET", "{foo}x", "3"), ("GET", "{foo}x"),
             ("INCR", "{foo}n")]
    data = b"".join(encode_command(args) for args in batch)
    cdiff.ours.send(data)
    cdiff.theirs.send(data)
    for args in batch:
        ours, theirs = cdiff.ours.read_frame(), cdiff.theirs.read_frame()
        assert ours == theirs, f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    assert ours.startswith(b"-CLUSTERDOWN Hash slot not served")


def test_keys_in_slot(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    slot = str(key_hash_slot(b"t"))
    for k in ("{t}1", "{t}2", "{t}3"):
        cdiff("SET", k, "v")
    cdiff("CLUSTER", "GETKEYSINSLOT", slot, "10")
    cdiff("DEL", "{t}2")
    cdiff("SET", "{t}2", "w")
    cdiff("SET", "{t}1", "overwritten")  # keeps its place
    cdiff("CLUSTER", "GETKEYSINSLOT", slot, "2")
    cdiff("CLUSTER", "GETKEYSINSLOT", slot, "10")
    cdiff("CLUSTER", "COUNTKEYSINSLOT", slot)
    cdiff("CLUSTER", "FLUSHSLOTS")
    cdiff("CLUSTER", "RESET")
    cdiff("FLUSHALL")
    cdiff("CLUSTER", "COUNTKEYSINSLOT", slot)
    cdiff("CLUSTER", "FLUSHSLOTS")


def test_move_copy_refused(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    cdiff.script("""
        SET {a}1 v
        MOVE {a}1 1
        COPY {a}1 {a}2 DB 1
        COPY {a}1 {a}2 DB 0
    """)


def test_nodes_conf_round_trip():
    me = Node(None, MYSELF | MASTER)
    me.ip, me.port, me.cport, me.hostname = "127.0.0.1", 7000, 17000, "a.example"
    st = ClusterState(me)
    other = Node(None, MASTER)
    other.ip, other.port, other.cport, other.config_epoch = "10.0.0.2", 7001, 17001, 3
    replica = Node(None, SLAVE)
    replica.ip, replica.port, replica.cport, replica.slaveof = "::1", 7002, 17002, other
    other.replicas.append(replica)
    shaking = Node(None, HANDSHAKE)
    for n in (other, replica, shaking):
        st.add_node(n)
    for s in range(0, 100):
        st.add_slot(me, s)
    st.add_slot(me, 5000)
    for s in range(100, 200):
        st.add_slot(other, s)
    st.set_migrating(5, other)
    st.set_importing(150, other)
    st.current_epoch, st.last_vote_epoch = 7, 2
    text = nodesconf.render(st)
    assert text.endswith("vars currentEpoch 7 lastVoteEpoch 2\n")
    assert shaking.name not in text
    assert f"[5->-{other.name}]" in text and f"[150-<-{other.name}]" in text
    back = nodesconf.parse(text)
    assert nodesconf.render(back) == text
    assert back.myself.name == me.name and back.myself.hostname == "a.example"
    assert back.slots[5000] is back.myself and back.slots[150].name == other.name
    assert back.nodes[replica.name].slaveof is back.nodes[other.name]
    with pytest.raises(nodesconf.ConfigFileError):
        nodesconf.parse(text.replace("myself,", ""))


def test_nodes_conf_survives_restart(tmp_path):
    args = _cluster_args()
    srv = start_raxdb(*args, cwd=str(tmp_path))
    try:
        d = Diff(srv.port, srv.port)
        myid = d.ours.call("CLUSTER", "MYID")
        d.ours.call("CLUSTER", "ADDSLOTSRANGE", "0", "99")
        d.ours.call("CLUSTER", "SETSLOT", "5", "STABLE")
        d.ours.call("CLUSTER", "SET-CONFIG-EPOCH", "9")
        nodes = parse(d.ours.call("CLUSTER", "NODES"))
        d.close()
    finally:
        srv.stop()
    text = (tmp_path / "nodes.conf").read_text()
    assert text.splitlines()[-1] == "vars currentEpoch 9 lastVoteEpoch 0"
    srv = start_raxdb(*args, cwd=str(tmp_path))
    try:
        d = Diff(srv.port, srv.port)
        assert d.ours.call("CLUSTER", "MYID") == myid
        after = parse(d.ours.call("CLUSTER", "NODES"))
        # every field but the address (the restarted server has another port)
        assert [f for i, f in enumerate(after.split()) if i != 1] == [f for i, f in enumerate(nodes.split()) if i != 1]
        assert after.split()[1].startswith(b":%d@" % srv.port)
        d.close()
    finally:
        srv.stop()


def test_scripts_in_cluster_mode(cdiff):
    """scriptVerifyClusterState: a script's commands are held to one slot unless it allows
    cross-slot keys (scripts without a shebang do), and to slots this node serves."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    cross = "redis.call('set','{a}x','1'); return redis.call('set','b','1')"
    cdiff("EVAL", cross, "0")
    cdiff("EVAL", "#!lua\n" + cross, "0")
    cdiff("EVAL", "#!lua flags=allow-cross-slot-keys\n" + cross, "0")
    cdiff("EVAL", "#!lua\nreturn redis.call('set','b','1')", "1", "a")
    cdiff("EVAL", "#!lua\nreturn redis.call('set','{a}y','1')", "1", "a")
    cdiff("EVAL", "#!lua\nredis.call('get','b'); return redis.call('get', '{b}x')", "0")
    cdiff("EVAL", "#!lua flags=no-cluster\nreturn 1", "0")
    cdiff("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function{function_name='f', callback=function(k) "
          "redis.call('set','{a}1','1'); return redis.call('set','b','1') end}")
    cdiff("FCALL", "f", "0")
    cdiff("FUNCTION", "FLUSH")
    cdiff("CONFIG", "SET", "cluster-require-full-coverage", "no")
    cdiff("CLUSTER", "DELSLOTS", str(key_hash_slot(b"x")))
    cdiff("EVAL", "return redis.call('get','x')", "0")
    cdiff("CONFIG", "SET", "cluster-require-full-coverage", "yes")
    cdiff("CLUSTER", "INFO")  # still ok: the state is computed again on an event, not on a setting
    cdiff("CLUSTER", "DELSLOTS", str(key_hash_slot(b"zzz")))
    _wait_state(cdiff, b"fail")
    cdiff("EVAL", "return redis.call('get','a')", "0")
    cdiff("INFO", "errorstats")


def _masked(d: Diff, *args: object) -> None:
    """`args` on both nodes, the replies compared with each node's ID (40 bytes) masked."""
    ids = [parse(conn.call("CLUSTER", "MYID")) for conn in (d.ours, d.theirs)]
    ours, theirs = d.both(*args)
    ours, theirs = ours.replace(ids[0], b"X" * 40), theirs.replace(ids[1], b"X" * 40)
    assert ours == theirs, f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"


def test_announced_address_and_endpoints(cdiff):
    """cluster-announce-* and cluster-preferred-endpoint-type, set at run time, in CLUSTER NODES,
    SLOTS and SHARDS."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "99")
    cdiff("CLUSTER", "ADDSLOTS", "200")
    try:
        cdiff("CONFIG", "SET", "cluster-announce-port", "1234")  # the two servers' own ports differ
        cdiff("CONFIG", "SET", "cluster-announce-bus-port", "2345")
        _masked(cdiff, "CLUSTER", "NODES")
        for name, value in (("cluster-announce-ip", "10.1.2.3"), ("cluster-announce-hostname", "h.example")):
            cdiff("CONFIG", "SET", name, value)
            _masked(cdiff, "CLUSTER", "NODES")
        for kind in ("ip", "hostname", "unknown-endpoint"):
            cdiff("CONFIG", "SET", "cluster-preferred-endpoint-type", kind)
            for sub in ("SLOTS", "SHARDS"):
                _masked(cdiff, "CLUSTER", sub)
                cdiff.both("HELLO", "3")
                _masked(cdiff, "CLUSTER", sub)
                cdiff.both("HELLO", "2")
    finally:
        for name, value in (("cluster-announce-ip", ""), ("cluster-announce-port", "0"),
                            ("cluster-announce-bus-port", "0"), ("cluster-announce-hostname", ""),
                            ("cluster-preferred-endpoint-type", "ip")):
            cdiff.both("CONFIG", "SET", name, value)


def test_cluster_slots_of_scattered_slots(cdiff, pair):
    """CLUSTER SLOTS, NODES and SHARDS over scattered runs (single slots, runs across bytes and
    across slot_ranges' 512-slot chunks, whole chunks, both ends of the table), byte for byte
    with redis-server's in RESP2 and RESP3, as the slots come and go."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "0", "7", "9", "510", "1024", "1536", "2047", "5000", "5000",
          "16376", "16383")
    cdiff("CLUSTER", "ADDSLOTS", "12", "14", "4095", "4097")
    resp3 = Diff(pair[0].port, pair[1].port, protocol=3)
    try:
        cdiff("CONFIG", "SET", "cluster-announce-port", "1234")  # the two servers' own ports differ
        cdiff("CONFIG", "SET", "cluster-announce-bus-port", "2345")
        for step in (None, ("DELSLOTSRANGE", "512", "1023"), ("DELSLOTS", "0", "16383"), ("ADDSLOTS", "4096")):
            if step is not None:
                cdiff("CLUSTER", *step)
            for d in (cdiff, resp3):
                for sub in ("SLOTS", "NODES", "SHARDS"):
                    _masked(d, "CLUSTER", sub)
    finally:
        resp3.close()
        for name in ("cluster-announce-port", "cluster-announce-bus-port"):
            cdiff.both("CONFIG", "SET", name, "0")


def test_announced_hostname_validation(cdiff):
    """isValidAnnouncedHostname's errors, the length checked before the characters (Redis's
    cluster/27-endpoints)."""
    try:
        for value in ("x" * 256, "x" * 255, "x" * 300 + "?", "?" + "x" * 300, "?.com",
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-."):
            cdiff("CONFIG", "SET", "cluster-announce-hostname", value)
    finally:
        cdiff.both("CONFIG", "SET", "cluster-announce-hostname", "")


def test_slot_index_follows_the_keyspace():
    """The per-slot index of a database: kept by every insert and delete, emptied by a flush and
    by deleting the last key, rebuilt when a diskless load swaps contents in."""
    from raxdb.storage.keyspace import Database
    from raxdb.storage.slots import SlotIndex

    db = Database(0)
    db.slot_keys = SlotIndex()
    slot = key_hash_slot(b"t")
    db.set_pairs([b"{t}1", b"a", b"{t}2", b"b", b"other", b"c"], 0)
    db.add(b"{t}3", b"c")
    db.set(b"{t}1", b"overwritten")
    assert db.slot_keys.keys(slot, 10) == [b"{t}3", b"{t}2", b"{t}1"]
    db.delete(b"{t}2")
    assert db.slot_keys.count(slot) == 2 and db.slot_keys.count(key_hash_slot(b"other")) == 1
    loaded = Database(0)
    loaded.add(b"{t}9", b"x")
    db.swap_contents(loaded)
    assert db.slot_keys.keys(slot, 10) == [b"{t}9"] and loaded.slot_keys is None
    db.delete(b"{t}9")
    assert db.slot_keys.count(slot) == 0 and not db.slot_keys.by_slot
    db.add(b"{t}1", b"a")
    db.flush()
    assert db.slot_keys.count(slot) == 0


def test_link_over_sendbuf_limit_is_freed():
    """cluster-link-sendbuf-limit: the cron frees a link whose unsent bytes pass the limit, and
    counts it (total_cluster_links_buffer_limit_exceeded); a link under it stays."""
    from raxdb.server.cluster.bus import Bus, Link

    class Transport:
        def __init__(self, pending: int) -> None:
            self.pending = pending
            self.aborted = False

        def get_write_buffer_size(self) -> int:
            return self.pending

        def abort(self) -> None:
            self.aborted = True

    class Cluster:
        def __init__(self) -> None:
            self.st = ClusterState(Node(None, MYSELF | MASTER))

        def sendbuf_limit(self) -> int:
            return 1000

        def node_timeout(self) -> int:
            return 15000

        def update_state(self) -> None:
            pass

    cluster = Cluster()
    bus = Bus(cluster)  # type: ignore[arg-type]
    redials: list[Node] = []
    bus.connect = redials.append  # type: ignore[method-assign]  # the cron dials a freed link again
    full, fine = Node(None, MASTER), Node(None, MASTER)
    for node, pending in ((full, 5000), (fine, 10)):
        cluster.st.add_node(node)
        node.link = Link(bus, node, False)
        node.link.transport = Transport(pending)  # type: ignore[assignment]
        node.pong_received = node.data_received = 2**62  # nothing else for the cron to do
    transport = full.link.transport
    bus.cron(1)
    assert transport.aborted and full.link is None and cluster.st.links_limit_exceeded == 1
    assert redials == [full]
    assert fine.link is not None and not fine.link.transport.aborted


def test_broadcast_to_a_link_still_connecting_is_sent_once_connected():
    """A FAIL broadcast while the link to a node is still being made (a node behind a partition,
    redialled every node timeout) is kept and written once the connection is made, before the
    PING that opens it, as Redis 7.0's link sndbuf does: found by the partition tests (#58),
    where raxdb's replica never heard of its master's FAIL after healing and redis-server's did
    (and took over).  A dropped link forgets what it kept."""
    from raxdb.server.cluster import wire
    from raxdb.server.cluster.bus import Bus, Link

    class Transport:
        def __init__(self) -> None:
            self.written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

        def get_extra_info(self, _name: str) -> None:
            return None

        def abort(self) -> None:
            pass

    class Cluster:
        def __init__(self) -> None:
            self.st = ClusterState(Node(None, MYSELF | MASTER))

    bus = Bus(Cluster())  # type: ignore[arg-type]
    pings: list[Link] = []
    bus.connected = pings.append  # type: ignore[method-assign]
    node = Node(None, MASTER)
    bus.st.add_node(node)
    node.link = Link(bus, node, False)
    fail = wire.Message(type=wire.FAIL, sender=bus.st.myself.name, about="a" * 40)
    bus.broadcast(fail)
    assert node.link.transport is None and node.link.pending == [wire.encode(fail)]
    transport = Transport()
    node.link.connection_made(transport)  # type: ignore[arg-type]
    assert transport.written == [wire.encode(fail)] and pings == [node.link] and not node.link.pending
    dropped = Link(bus, node, False)
    dropped.send(b"x")
    dropped.drop()
    assert not dropped.pending
    dropped.send(b"y")
    assert not dropped.pending

# ---- pub/sub and blocked clients on a single node (issue #36: cluster pub/sub) -----------------
def _subscriber(port: int, resp3: bool, *cmd: object) -> tuple[RawConnection, list[bytes]]:
    conn = RawConnection(port)
    if resp3:
        conn.call("HELLO", "3")
    conn.send(encode_command(cmd))
    return conn, [conn.read_frame() for _ in cmd[1:]]


def test_sunsubscribe_when_the_slot_goes(cdiff, pair):
    """DELSLOTS of a slot with shard channels: each of its subscribers gets a sunsubscribe push
    per channel of that slot (channels in byte order, subscription counts after each), in RESP2
    and RESP3; channels of other slots stay; the slot's channels are then not served here."""
    d = cdiff
    d("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    slot = key_hash_slot(b"{x}")
    subs = []
    for resp3, channels in ((False, (b"b{x}", b"a{x}")), (True, (b"a{x}",))):
        for srv in pair:
            subs.append(_subscriber(srv.port, resp3, "SSUBSCRIBE", *channels))
        assert subs[-1][1] == subs[-2][1]
    others = [_subscriber(srv.port, False, "SSUBSCRIBE", "other") for srv in pair]
    d.unordered("PUBSUB", "SHARDCHANNELS")
    d("PUBSUB", "SHARDNUMSUB", "a{x}", "b{x}", "other", "none")
    d("CLUSTER", "DELSLOTS", slot)
    for i in range(0, len(subs), 2):
        (ours, _), (theirs, _) = subs[i], subs[i + 1]
        frames = [(ours.read_frame(), theirs.read_frame()) for _ in range(2 if i == 0 else 1)]
        for a, b in frames:
            assert a == b and b"sunsubscribe" in a
    d("PUBSUB", "SHARDNUMSUB", "a{x}", "b{x}", "other")
    d("PUBSUB", "SHARDCHANNELS")
    d("SPUBLISH", "other", "still")
    assert others[0][0].read_frame() == others[1][0].read_frame()
    assert subs[0][0].call("PING") == subs[1][0].call("PING")  # the RESP2 client left pubsub mode
    d("SSUBSCRIBE", "a{x}")  # CLUSTERDOWN Hash slot not served
    for conn, _ in subs + others:
        conn.close()


@pytest.mark.parametrize("block", [("BLPOP", "{b}l", "0"), ("BZPOPMIN", "{b}z", "0"),
                                   ("XREAD", "BLOCK", "0", "STREAMS", "{b}s", "$")])
def test_blocked_client_when_the_cluster_fails(cdiff, pair, block):
    """A blocked client in a cluster that fails: -CLUSTERDOWN The cluster is down; on a key of
    a slot no node serves any more while the cluster stays ok (cluster-require-full-coverage no):
    -CLUSTERDOWN Hash slot not served."""
    d = cdiff
    slot = key_hash_slot(b"{b}")
    try:
        for coverage in ("yes", "no"):
            d("CONFIG", "SET", "cluster-require-full-coverage", coverage)
            d("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
            _wait_state(d, b"ok")
            blocked = [RawConnection(srv.port) for srv in pair]
            for conn in blocked:
                conn.send(encode_command(block))
            _until_blocked(d, 1)
            # full coverage: another slot goes, the cluster fails (the key's slot going as well
            # would make redis-server's reply depend on whether its cron runs before its state
            # update); without it, the key's own slot goes and the cluster stays ok
            gone = (slot + 1) % 16384 if coverage == "yes" else slot
            d("CLUSTER", "DELSLOTS", gone)
            replies = [conn.read_frame() for conn in blocked]
            assert replies[0] == replies[1] == (b"-CLUSTERDOWN The cluster is down\r\n" if coverage == "yes" else
                                                b"-CLUSTERDOWN Hash slot not served\r\n"), replies
            d("CLUSTER", "ADDSLOTS", gone)
            d("CLUSTER", "DELSLOTSRANGE", "0", "16383")
            for conn in blocked:
                conn.close()
    finally:
        d("CONFIG", "SET", "cluster-require-full-coverage", "yes")


def _until_blocked(d: Diff, n: int) -> None:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        ours, theirs = d.both("INFO", "clients")
        if all(f"blocked_clients:{n}\r".encode() in r for r in (ours, theirs)):
            return
        time.sleep(0.02)
    raise AssertionError("the clients never blocked")


def test_publish_message_on_the_wire():
    """PUBLISH and PUBLISHSHARD as clusterSendPublish writes them: totlen = header + 8 + the
    channel and message lengths (no padding); decode gives them back."""
    from raxdb.server.cluster import wire

    for t in (wire.PUBLISH, wire.PUBLISHSHARD):
        m = wire.Message(type=t, sender="a" * 40, channel=b"ch", message=b"\x00hello\r\n")
        data = wire.encode(m)
        assert len(data) == wire.HEADER_LEN + 8 + 2 + 8
        assert int.from_bytes(data[4:8], "big") == len(data)
        assert data[wire.HEADER_LEN:wire.HEADER_LEN + 8] == b"\0\0\0\x02\0\0\0\x08"
        back = wire.decode(data)
        assert (back.type, back.channel, back.message) == (t, b"ch", b"\x00hello\r\n")
    with pytest.raises(wire.WireError):
        wire.decode(data[:-1] + b"")  # totlen no longer matches


def test_nodes_conf_lock(tmp_path):
    """clusterLockConfig: a second node on a nodes.conf in use exits 1 with Redis's line, also
    after the first saved the file again (the lock follows the new file); the same for
    redis-server."""
    for start in (start_raxdb, start_redis):
        cwd = tmp_path / start.__name__
        cwd.mkdir()
        first = start(*_cluster_args(), cwd=str(cwd))
        try:
            conn = RawConnection(first.port)
            for _ in range(2):
                second = start(*_cluster_args(), cwd=str(cwd), ready_text=None)
                assert second.proc.wait(30) == 1
                assert second.wait_log("Sorry, the cluster configuration file nodes.conf is already used by a "
                                       "different Redis Cluster node. Please make sure that different nodes use "
                                       "different cluster configuration files.")
                assert conn.call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
            conn.close()
        finally:
            first.stop()


def test_pubsubshard_when_down(cdiff):
    """A cluster that is down still serves SSUBSCRIBE / SPUBLISH of its own slots while
    cluster-allow-pubsubshard-when-down is yes (the default), CLUSTERDOWN when no; an unserved
    slot is CLUSTERDOWN Hash slot not served either way."""
    d = cdiff
    d("CLUSTER", "ADDSLOTSRANGE", "0", "8000")  # not full coverage: the cluster is down
    ours = next(k for k in (b"c%d" % i for i in range(10000)) if key_hash_slot(k) <= 8000)
    theirs = next(k for k in (b"c%d" % i for i in range(10000)) if key_hash_slot(k) > 8000)
    try:
        for allow in ("yes", "no"):
            d("CONFIG", "SET", "cluster-allow-pubsubshard-when-down", allow)
            d("SPUBLISH", ours, "m")
            d("SPUBLISH", theirs, "m")
            d("SSUBSCRIBE", theirs)
            d("GET", ours)  # reads are not allowed while down (cluster-allow-reads-when-down no)
        d("SSUBSCRIBE", ours)  # (allow no): CLUSTERDOWN; a subscriber would stay subscribed
    finally:
        d("CONFIG", "SET", "cluster-allow-pubsubshard-when-down", "yes")


def test_replica_commands_on_a_lone_master(cdiff):
    """CLUSTER REPLICATE, REPLICAS / SLAVES and FAILOVER on a master that knows no other node,
    and REPLICAOF / SLAVEOF / FAILOVER, which cluster mode refuses: Redis's replies and errors."""
    cdiff.script("""
        CLUSTER REPLICATE abc
        CLUSTER REPLICATE 0123456789012345678901234567890123456789
        CLUSTER REPLICATE a b
        CLUSTER REPLICAS abc
        CLUSTER SLAVES 0123456789012345678901234567890123456789
        CLUSTER FAILOVER
        CLUSTER FAILOVER FORCE
        CLUSTER FAILOVER takeover
        CLUSTER FAILOVER foo
        CLUSTER FAILOVER force extra
        REPLICAOF 127.0.0.1 1
        REPLICAOF NO ONE
        SLAVEOF no one
        FAILOVER
        FAILOVER ABORT
    """)
    ids = [parse(conn.call("CLUSTER", "MYID")) for conn in (cdiff.ours, cdiff.theirs)]
    ours, theirs = cdiff.ours.call("CLUSTER", "REPLICATE", ids[0]), cdiff.theirs.call("CLUSTER", "REPLICATE", ids[1])
    assert ours == theirs == b"-ERR Can't replicate myself\r\n"
    for sub in ("REPLICAS", "SLAVES"):
        ours, theirs = cdiff.ours.call("CLUSTER", sub, ids[0]), cdiff.theirs.call("CLUSTER", sub, ids[1])
        assert ours == theirs == b"*0\r\n"


def test_failover_state_machine():
    """The vote rules of clusterSendFailoverAuthIfNeeded on a master, without a network: one
    vote per epoch, only for a replica whose master is FAIL (or with FORCEACK), not twice for
    one master within 2 * node timeout, never for slots a newer config epoch serves."""
    from raxdb.server.cluster import wire
    from raxdb.server.cluster.failover import Failover
    from raxdb.server.cluster.state import FAIL

    sent: list[tuple[str, int]] = []

    class Link:
        transport = object()

    class Bus:
        def header(self, t: int) -> wire.Message:
            return wire.Message(type=t)

        def send(self, link: object, m: wire.Message) -> None:
            sent.append((link.name, m.type))  # type: ignore[attr-defined]

    class Cluster:
        def __init__(self) -> None:
            self.st = ClusterState(Node(None, MYSELF | MASTER))
            self.bus = Bus()
            self.saved = 0

        def node_timeout(self) -> int:
            return 1000

        def save_or_die(self) -> None:
            self.saved += 1

    cl = Cluster()
    st = cl.st
    for s in range(100):
        st.add_slot(st.myself, s)
    master = Node(None, MASTER)
    master.config_epoch = 3
    for s in range(100, 200):
        st.add_slot(master, s)
    voter = Failover(cl)  # type: ignore[arg-type]
    candidates = []
    for _ in range(2):
        r = Node(None, SLAVE)
        r.slaveof = master
        r.link = Link()
        r.link.name = r.name  # type: ignore[attr-defined]
        master.replicas.append(r)
        candidates.append(r)
    for n in (master, *candidates):
        st.add_node(n)
    claim = bytearray(2048)
    for s in range(100, 200):
        claim[s >> 3] |= 1 << (s & 7)

    def ask(r: Node, epoch: int, config_epoch: int = 3, force: bool = False) -> bool:
        st.current_epoch = max(st.current_epoch, epoch)  # as the bus does on any message
        m = wire.Message(type=wire.AUTH_REQUEST, current_epoch=epoch, config_epoch=config_epoch,
                         myslots=bytes(claim), mflags0=wire.FLAG0_FORCEACK if force else 0)
        before = len(sent)
        voter.auth_request(r, m)
        return len(sent) > before

    assert not ask(candidates[0], 4)  # its master is up
    assert ask(candidates[0], 5, force=True)  # a manual failover's request
    assert st.last_vote_epoch == 5 and cl.saved == 1 and sent[-1] == (candidates[0].name, wire.AUTH_ACK)
    master.flags |= FAIL
    assert not ask(candidates[1], 5)  # one vote per epoch
    assert not ask(candidates[1], 6)  # this master was voted about less than 2 * node timeout ago
    master.voted_time = 0
    assert not ask(candidates[1], 4)  # an older epoch than ours
    assert not ask(candidates[1], 7, config_epoch=2)  # claims slots that epoch 3 serves
    assert ask(candidates[1], 8)
    assert not ask(master, 9)  # a master asks for nothing


def test_config_rewrite_keeps_no_replicaof_in_cluster_mode():
    """rewriteConfigReplicaOfOption: a cluster replica's master is nodes.conf's, so CONFIG
    REWRITE writes no replicaof line (a standalone replica keeps its own)."""
    from raxdb.server.config.options import OPTIONS, Config

    config = Config()
    config.values["replicaof"] = "127.0.0.1 7000"
    assert config._rewrite_lines(OPTIONS["replicaof"]) == ["replicaof 127.0.0.1 7000"]
    config.values["cluster-enabled"] = "yes"
    assert config._rewrite_lines(OPTIONS["replicaof"]) == []


def test_debug_cluster_subcommands(cdiff):
    """DEBUG CLUSTERLINK KILL and DROP-CLUSTER-PACKET-FILTER reply as Redis 7.0's, errors included:
    an unknown node, and an unknown direction, which Redis answers with the error and then +OK."""
    ours_id = parse(cdiff.ours.call("CLUSTER", "MYID"))
    theirs_id = parse(cdiff.theirs.call("CLUSTER", "MYID"))
    cdiff("DEBUG", "CLUSTERLINK", "KILL", "to", "0123456789012345678901234567890123456789")
    cdiff("DEBUG", "CLUSTERLINK", "KILL", "to")
    cdiff("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "x")
    cdiff("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "1")
    cdiff("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1")
    for conn, node_id in ((cdiff.ours, ours_id), (cdiff.theirs, theirs_id)):
        conn.send(b"*5\r\n$5\r\nDEBUG\r\n$11\r\nCLUSTERLINK\r\n$4\r\nKILL\r\n$8\r\nsideways\r\n$40\r\n%s\r\n" % node_id)
        assert conn.read_frame() == b"-ERR Unknown direction sideways\r\n"
        assert conn.read_frame() == b"+OK\r\n"
    cdiff("PING")


def test_hello_and_info_say_cluster(cdiff):
    """HELLO's `mode` and INFO's `redis_mode` are "cluster" in cluster mode (cluster clients read
    HELLO on connect), in RESP2 and RESP3; the client ids differ, so they are masked."""
    for proto in ("3", "2"):
        ours, theirs = (re.sub(rb"(\$2\r\nid\r\n:)\d+", rb"\1N", r) for r in cdiff.both("HELLO", proto))
        assert ours == theirs, f"raxdb: {ours!r}\nredis: {theirs!r}"
        assert b"\r\ncluster\r\n" in ours
    ours, theirs = (re.search(rb"redis_mode:\w+", r).group() for r in cdiff.both("INFO", "server"))
    assert ours == theirs == b"redis_mode:cluster"


@settings(max_examples=300, deadline=None)
@given(strategies.lists(strategies.tuples(strategies.integers(0, 16383),
                                         strategies.one_of(strategies.integers(0, 40), strategies.integers(500, 1200))),
                        max_size=12),
       strategies.booleans())
def test_slot_ranges_are_the_bitmaps_runs(runs, full):
    """Node.slot_ranges reads the bitmap 512 slots at a time: its runs are those of the slots one
    by one, for runs inside a byte, across bytes and chunks, at both ends and over whole chunks."""
    node = Node(None, MASTER)
    owned = set(range(16384)) if full else set()
    for first, length in runs:
        owned ^= set(range(first, min(first + length, 16383) + 1))
    for s in owned:
        node.slots[s >> 3] |= 1 << (s & 7)
    expected: list[tuple[int, int]] = []
    for s in sorted(owned):
        if expected and expected[-1][1] == s - 1:
            expected[-1] = (expected[-1][0], s)
        else:
            expected.append((s, s))
    assert node.slot_ranges() == expected


def _start_with_file(kind: str, conf: Path, cwd: Path) -> ServerProcess:
    """A server whose first argument is `conf` (as redis-server wants its config file), expected
    to stop at start-up."""
    if kind == "raxdb":
        argv = [sys.executable, "-m", "raxdb.server", str(conf)]
        os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    else:
        binary = redis_binary()
        assert binary, "redis-server is required"
        argv = [binary, str(conf)]
    argv += ["--port", str(free_port()), "--bind", "127.0.0.1", "--cluster-port", str(free_port())]
    return ServerProcess(argv, 0, str(cwd), kind, ready_text=None)


@pytest.mark.parametrize("where", ["file", "argv", "slaveof"])
def test_replicaof_refused_in_cluster_mode(tmp_path, where):
    """A replicaof (or slaveof) line with cluster-enabled yes, in the config file (before the
    cluster-enabled line) or as options: exit 1 and the same FATAL CONFIG FILE ERROR report as
    redis-server 7.0's (no line quoted: the check runs once every line is read)."""
    reports = []
    for kind in ("raxdb", "redis"):
        cwd = tmp_path / kind
        cwd.mkdir()
        conf = cwd / "node.conf"
        if where == "argv":
            start = start_raxdb if kind == "raxdb" else start_redis
            srv = start("--replicaof", "127.0.0.1", "6390", *_cluster_args(), cwd=str(cwd), ready_text=None)
        else:
            line = "replicaof" if where == "file" else "slaveof"
            conf.write_text(f"{line} 127.0.0.1 6390\ncluster-enabled yes\n")
            srv = _start_with_file(kind, conf, cwd)
        try:
            assert srv.proc.wait(30) == 1
            assert srv.wait_log("replicaof directive not allowed in cluster mode", 10)
            log = "".join(srv.log)
            reports.append(log[log.index("*** FATAL"):].strip())
        finally:
            srv.stop()
    assert reports[0] == reports[1] == ("*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"
                                        "replicaof directive not allowed in cluster mode")


def test_replicaof_no_one_allowed_in_cluster_mode(tmp_path):
    """`replicaof no one` names no master: a cluster node starts with it."""
    srv = start_raxdb("--replicaof", "no", "one", *_cluster_args(), cwd=str(tmp_path))
    try:
        conn = RawConnection(srv.port)
        assert conn.call("CLUSTER", "MYID").startswith(b"$40\r\n")
        conn.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("density", [0.02, 0.33, 0.5, 0.9, 0.99])
def test_slot_ranges_of_many_short_runs(density):
    """Chunks of many short runs (slot_ranges reads those from the bits written out): the runs
    of random slot sets, seeded, are those of the slots one by one."""
    import random

    rng = random.Random(int(density * 100))
    owned = [s for s in range(16384) if rng.random() < density]
    node = Node(None, MASTER)
    for s in owned:
        node.slots[s >> 3] |= 1 << (s & 7)
    expected: list[tuple[int, int]] = []
    for s in owned:
        if expected and expected[-1][1] == s - 1:
            expected[-1] = (expected[-1][0], s)
        else:
            expected.append((s, s))
    assert node.slot_ranges() == expected


_SLOT_RUNS = strategies.lists(strategies.tuples(strategies.integers(0, 16383), strategies.integers(0, 3000)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(strategies.lists(strategies.tuples(_SLOT_RUNS, strategies.integers(0, 5)), min_size=1, max_size=5),
       _SLOT_RUNS, strategies.integers(0, 5), strategies.integers(0, 4), strategies.lists(strategies.integers(0, 16383),
                                                                                          max_size=20))
def test_claimed_slots_against_the_slot_by_slot_rules(owners, claim_runs, epoch, who, importing):
    """ClusterState.slots_to_take and newer_owner answer on int bitmaps what clusterProcessPacket
    and clusterUpdateSlotsConfigWith ask slot by slot: the same slots and node as the loops."""
    st = ClusterState(Node(None, MASTER | MYSELF))
    nodes = [st.myself] + [Node(None, MASTER) for _ in owners[1:]]
    for node, (runs, node_epoch) in zip(nodes, owners, strict=True):
        st.add_node(node)
        node.config_epoch = node_epoch
        for first, length in runs:
            for s in range(first, min(first + length, 16383) + 1):
                st.add_slot(node, s)  # a slot another node took first stays that node's
    for s in importing:
        st.set_importing(s, nodes[-1])
    sender = nodes[who % len(nodes)]
    claim = 0
    for first, length in claim_runs:
        for s in range(first, min(first + length, 16383) + 1):
            claim |= 1 << s
    take, newer = 0, None
    for s in range(16384):
        if not claim >> s & 1:
            continue
        owner = st.slots[s]
        if owner is not sender and s not in st.importing and (owner is None or owner.config_epoch < epoch):
            take |= 1 << s
        if newer is None and owner is not None and owner is not sender and owner.config_epoch > epoch:
            newer = owner
    assert st.slots_to_take(sender, epoch, claim) == take
    assert st.newer_owner(sender, epoch, claim) is newer


def test_nodes_conf_saved_in_place(tmp_path):
    """nodesconf.save rewrites the file in place, as Redis 7.0's clusterSaveConfig: the inode
    (which carries the node's lock) stays, a shorter text is padded then truncated, and the
    file parses back to the same nodes."""
    path = str(tmp_path / "nodes.conf")
    st = ClusterState(Node(None, MASTER | MYSELF))
    others = [Node(None, MASTER) for _ in range(4)]
    for i, node in enumerate(others):
        node.ip, node.port, node.cport = "127.0.0.1", 7000 + i, 17000 + i
        st.add_node(node)
        st.add_slot(node, i * 3)
    nodesconf.save(st, path)
    inode = (tmp_path / "nodes.conf").stat().st_ino
    for node in others[1:]:
        st.del_node(node)
    nodesconf.save(st, path, fsync=False)
    assert (tmp_path / "nodes.conf").stat().st_ino == inode
    text = (tmp_path / "nodes.conf").read_text()
    assert text == nodesconf.render(st)
    assert set(nodesconf.parse(text).nodes) == {st.myself.name, others[0].name}


def test_map_follows_slot_moves_inside_a_batch(cdiff, pair):
    """The fast loop reads the cluster state's `served` map for every command of a batch: a slot
    set migrating, importing, stable, deleted, given back or handed to a node inside the batch
    redirects (or serves) the commands after it as redis-server does, one key or several of one
    slot (MSET / MGET of a hash tag) alike.  (Each node moves the slot to and from itself: the
    two servers are one-node clusters of their own.)"""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    _wait_state(cdiff, b"ok")
    slot = str(key_hash_slot(b"foo"))
    replies = []
    for srv, conn in zip(pair, (cdiff.ours, cdiff.theirs), strict=True):
        me = parse(conn.call("CLUSTER", "MYID")).decode()
        batch = [("SET", "foo", "1"), ("MSET", "{foo}a", "1", "{foo}b", "2"),
                 ("CLUSTER", "SETSLOT", slot, "MIGRATING", me),
                 ("GET", "foo"), ("GET", "{foo}missing"), ("MGET", "{foo}a", "{foo}b"), ("MGET", "{foo}a", "{foo}z"),
                 ("CLUSTER", "SETSLOT", slot, "STABLE"),
                 ("GET", "{foo}missing"), ("MGET", "{foo}a", "{foo}z"), ("MGET", "{foo}a", "bar"),
                 ("CLUSTER", "DELSLOTS", slot),
                 ("GET", "foo"), ("MSET", "{foo}a", "1", "{foo}b", "2"), ("PING",),
                 ("CLUSTER", "SETSLOT", slot, "IMPORTING", me),
                 ("GET", "foo"), ("ASKING",), ("GET", "foo"), ("GET", "foo"),
                 ("CLUSTER", "SETSLOT", slot, "NODE", me),
                 ("GET", "foo"), ("INCR", "{foo}n"), ("MGET", "{foo}a", "{foo}n")]
        conn.send(b"".join(encode_command(args) for args in batch))
        replies.append([conn.read_frame().replace(str(srv.port).encode(), b"PORT") for _ in batch])
    for args, ours, theirs in zip(batch, *replies, strict=True):
        assert ours == theirs, f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    # a missing key of a slot migrating to myself is served here (processCommand redirects only
    # to another node); a deleted slot's commands are refused
    assert replies[0][4] == b"$-1\r\n" and replies[0][12].startswith(b"-CLUSTERDOWN")
    assert replies[0][-1] == b"*2\r\n$1\r\n1\r\n$1\r\n1\r\n"


def _served_by_definition(st: ClusterState, s: int) -> bool:
    return st.state == OK and st.slots[s] is st.myself and s not in st.migrating and s not in st.importing


class _Cluster:
    """What routing.query reads of a Cluster: its state, its configuration, an empty keyspace."""

    def __init__(self, st: ClusterState) -> None:
        self.st = st
        self.server = SimpleNamespace(dbs=[SimpleNamespace(peek=lambda key, now: None)], now_ms=0)

    @staticmethod
    def values() -> dict[str, str]:
        return {"cluster-allow-reads-when-down": "no", "cluster-allow-pubsubshard-when-down": "yes"}


_KEY_OF_SLOT: list[bytes] = []


def _key_of_slot(s: int) -> bytes:
    """A key (without a hash tag) of slot s."""
    if not _KEY_OF_SLOT:
        found: dict[int, bytes] = {}
        i = 0
        while len(found) < 16384:
            key = b"k%d" % i
            found.setdefault(key_hash_slot(key), key)
            i += 1
        _KEY_OF_SLOT.extend(found[x] for x in range(16384))
    return _KEY_OF_SLOT[s]


_GET = SimpleNamespace(fullname="get", flags=frozenset(("readonly",)), fixed_key_positions={2: (1,)})

_OPS = strategies.one_of(
    strategies.tuples(strategies.just("add"), strategies.integers(0, 2), strategies.integers(0, 15)),
    strategies.tuples(strategies.just("del"), strategies.integers(0, 15)),
    strategies.tuples(strategies.just("migrating"), strategies.integers(0, 15), strategies.none() | strategies.integers(1, 2)),
    strategies.tuples(strategies.just("importing"), strategies.integers(0, 15), strategies.none() | strategies.integers(1, 2)),
    strategies.tuples(strategies.just("close"),),
    strategies.tuples(strategies.just("fail"), strategies.integers(0, 2)),
    strategies.tuples(strategies.just("update"), strategies.booleans()),
    strategies.tuples(strategies.just("fill"), strategies.integers(0, 2)),
    strategies.tuples(strategies.just("forget"), strategies.integers(1, 2)),
    strategies.tuples(strategies.just("reload"),),
)


@settings(max_examples=500, deadline=None)
@given(strategies.lists(_OPS, max_size=30))
def test_served_map_is_the_full_check(ops):
    """After any sequence of changes (slots added and deleted, set migrating, importing and
    stable, all closed, nodes failing, the state updated, a node forgotten, nodes.conf saved and
    loaded), `served[s]` is the definition for every slot, and for a key of a slot that it has a
    GET is served here by the full check (routing.query), and for one it lacks it is not (unless
    the slot is myself's and importing, which the full check serves but the map leaves to it)."""
    st = ClusterState(Node(None, MYSELF | MASTER))
    st.end_writable_delay()
    nodes = [st.myself, Node(None, MASTER), Node(None, MASTER)]
    for n in nodes[1:]:
        st.add_node(n)
    for s in range(16):  # myself serves 0-9, another node 10-13, the cluster ok
        if s < 14:
            st.add_slot(nodes[0] if s < 10 else nodes[1], s)
    st.update_state(False, 0)
    assert st.state == OK
    touched = set(range(16)) | {16383}
    for op in ops:
        kind = op[0]
        if kind == "add":
            if nodes[op[1]].name in st.nodes:
                st.add_slot(nodes[op[1]], op[2])
        elif kind == "del":
            st.del_slot(op[1])
        elif kind in ("migrating", "importing"):
            target = None if op[2] is None else nodes[op[2]]
            if target is None or target.name in st.nodes:
                (st.set_migrating if kind == "migrating" else st.set_importing)(op[1], target)
        elif kind == "close":
            st.close_slots()
        elif kind == "fail":
            nodes[op[1]].flags ^= FAIL
        elif kind == "update":
            st.minority_since_ms = 0
            st.update_state(op[1], 0)
        elif kind == "fill":
            if nodes[op[1]].name in st.nodes:
                for s in range(16384):
                    st.add_slot(nodes[op[1]], s)
        elif kind == "forget":
            if nodes[op[1]].name in st.nodes:
                st.del_node(nodes[op[1]])
        else:  # nodes.conf written and read back: the state starts as fail, the open slots kept
            st = nodesconf.parse(nodesconf.render(st))
            st.end_writable_delay()
            nodes = [st.myself] + [st.nodes.get(n.name) or n for n in nodes[1:]]
        assert all(st.served[s] == _served_by_definition(st, s) for s in touched)
    assert len(st.served) == 16384
    assert all(st.served[s] == _served_by_definition(st, s) for s in range(16384))
    cluster = _Cluster(st)
    for s in touched:
        key = _key_of_slot(s)
        code, _slot, _node = routing.query(cluster, cluster.server, ((_GET, [b"get", key]),), False, False)
        if st.served[s]:
            assert code == routing.NONE, s
        elif not (st.slots[s] is st.myself and s in st.importing and st.state == OK):
            assert code != routing.NONE, s
