"""Cluster mode on one node, differentially: raxdb and redis-server 7.0, both started with
cluster-enabled yes, get the same commands and must give the same bytes (CLUSTER KEYSLOT, the
CLUSTER subcommands' errors, CLUSTERDOWN / CROSSSLOT in commands and transactions, CLUSTER INFO
once all slots are served, GETKEYSINSLOT's order).  The bus between nodes is
tests/integration/test_cluster_bus.py's."""

from __future__ import annotations

import time

import pytest

from raxdb.server.cluster import nodesconf
from raxdb.server.cluster.state import HANDSHAKE, MASTER, MYSELF, SLAVE, ClusterState, Node
from raxdb.storage.slots import key_hash_slot
from tests.support.diff import Diff, encode_command, parse
from tests.support.servers import free_port, server_pair, start_raxdb

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
    st.migrating[5] = other
    st.importing[150] = other
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
