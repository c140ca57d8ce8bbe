"""raxdb as a replica of a real redis-server 7.0, side by side with a redis-server replica of the
same master (the oracle): the dataset, the offsets, the errors a replica gives, INFO and ROLE.

One master and the two replicas serve the module; each test points the replicas where it needs
them and waits for events (the link up, offsets equal), never for time."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from tests.support.diff import RawConnection
from tests.support.servers import COMMON, ServerProcess, free_port, redis_binary, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

FAST = ("--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1")


def wait_for(cond: Callable[[], object], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def client(port: int) -> redis.Redis:
    """A client that hands back replies as they come (no parsing of INFO, CLIENT LIST, ...)."""
    c = redis.Redis(port=port)
    c.response_callbacks.clear()
    return c


def info(c: redis.Redis, section: str = "replication") -> dict[str, str]:
    text = c.execute_command("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def info_fields(c: redis.Redis) -> list[tuple[str, str]]:
    text = c.execute_command("INFO", "replication").decode()
    return [tuple(line.split(":", 1)) for line in text.split("\r\n") if ":" in line]  # type: ignore[misc]


class Trio:
    def __init__(self, master: ServerProcess, ours: ServerProcess, theirs: ServerProcess) -> None:
        self.master_proc, self.ours_proc, self.theirs_proc = master, ours, theirs
        self.m, self.ours, self.theirs = (client(p.port) for p in (master, ours, theirs))
        self.replicas = (self.ours, self.theirs)

    def point(self, port: int | None = None) -> None:
        """Both replicas follow `port` (the master by default) from a full resync."""
        port = port or self.master_proc.port
        for r in self.replicas:
            r.execute_command("REPLICAOF", "NO", "ONE")
            r.execute_command("REPLICAOF", "127.0.0.1", port)

    def wait_up(self) -> None:
        for r in self.replicas:
            wait_for(lambda r=r: info(r).get("master_link_status") == "up", what="master_link_status:up")

    def wait_synced(self) -> int:
        """Both replicas have applied everything the master produced; its offset."""
        self.wait_up()
        target = int(info(self.m)["master_repl_offset"])
        for r in self.replicas:
            # the master's PINGs (every second) may take the replicas past `target`
            wait_for(lambda r=r: int(info(r)["slave_repl_offset"]) >= target, what="offsets caught up")
        return target

    def keyspace(self, c: redis.Redis) -> dict[int, dict[bytes, int]]:
        """Every key of every non-empty db with its deadline (PEXPIRETIME: the stream carries
        absolute deadlines, so they are equal to the millisecond)."""
        out: dict[int, dict[bytes, int]] = {}
        for dbid in range(16):
            c.execute_command("SELECT", dbid)
            keys = c.execute_command("KEYS", "*")
            if keys:
                out[dbid] = {k: c.execute_command("PEXPIRETIME", k) for k in keys}
        c.execute_command("SELECT", 0)
        return out


@pytest.fixture(scope="module")
def trio() -> Iterator[Trio]:
    master = start_redis(*FAST)
    ours = start_raxdb(*FAST)
    theirs = start_redis(*FAST)
    try:
        t = Trio(master, ours, theirs)
        t.point()
        t.wait_up()
        yield t
    finally:
        for p in (ours, theirs, master):
            p.stop()


def workload(m: redis.Redis) -> None:
    """Every type, several dbs, TTLs, a transaction, a script, stream groups, SPOP, INCRBYFLOAT."""
    p = m.pipeline(transaction=False)
    p.set("s", "v")
    p.set("ttl", "v", ex=1000)
    p.set("pttl", "v", px=123456)
    p.incrbyfloat("f", 1.5)
    p.incrbyfloat("f", "3.0e3")
    p.rpush("l", *range(20))
    p.lpop("l")
    p.hset("h", mapping={"a": 1, "b": 2})
    p.hincrby("h", "a", 5)
    p.sadd("set", *range(30))
    p.spop("set", 3)
    p.spop("set")
    p.zadd("z", {"a": 1, "b": 2.5, "c": -1})
    p.zincrby("z", 2, "a")
    p.pfadd("hll", "a", "b", "c")
    p.setbit("bits", 77, 1)
    p.expire("h", 5000)
    p.execute_command("SELECT", 5)
    p.set("db5", "x", ex=300)
    p.lpush("db5list", "a", "b")
    p.execute_command("SELECT", 0)
    p.execute()
    tx = m.pipeline(transaction=True)
    tx.incr("counter")
    tx.set("in_tx", "1", px=50000)
    tx.lpush("l", "tx")
    tx.execute()
    m.eval("redis.call('set', KEYS[1], ARGV[1]); redis.call('expire', KEYS[1], 777); "
           "return redis.call('incr', KEYS[2])", 2, "lua", "counter", "from-lua")
    m.xadd("st", {"f": "v"}, id="1-1")
    m.xadd("st", {"f": "w"}, id="2-1")
    m.xgroup_create("st", "g", id="0")
    m.xreadgroup("g", "alice", {"st": ">"}, count=2)
    m.xclaim("st", "g", "bob", 0, ["1-1"])
    m.set("gone", "x", px=1)
    # its deadline passes; the reading master expires it and sends the DEL now, not later
    wait_for(lambda: m.execute_command("PTTL", "gone") == -2, what="gone expired")
    m.execute_command("SELECT", 3)
    m.execute_command("SWAPDB", 3, 4)


def compare_datasets(t: Trio) -> None:
    t.wait_synced()
    digests = [c.execute_command("DEBUG", "DIGEST") for c in (t.m, *t.replicas)]
    assert digests[1] == digests[0] == digests[2]
    spaces = [t.keyspace(c) for c in (t.m, *t.replicas)]
    assert spaces[1] == spaces[0] == spaces[2]


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_full_sync_and_stream_match_the_master(trio: Trio, diskless: str) -> None:
    """(a) both payload forms ($EOF:<mark> when diskless, $<len> from a file), writes during the
    transfer, then the stream: the same dataset as the master and its redis-server replica."""
    t = trio
    t.m.config_set("repl-diskless-sync", diskless)
    t.m.flushall()
    p = t.m.pipeline(transaction=False)
    for i in range(300):
        p.set(f"pre:{i}", i)
    p.set("pre:ttl", "v", ex=4000)
    p.execute()
    offset_before = int(info(t.m)["master_repl_offset"])
    t.m.config_set("rdb-key-save-delay", "2000")  # a transfer slow enough to write during it
    try:
        before = int(info(t.m, "stats")["sync_full"])
        t.point()
        wait_for(lambda: int(info(t.m, "stats")["sync_full"]) >= before + 2, what="both full syncs")
        for _ in range(50):
            t.m.incr("during")
        workload(t.m)
    finally:
        t.m.config_set("rdb-key-save-delay", "0")
    compare_datasets(t)
    assert t.ours.get("during") == b"50"
    assert t.ours.dbsize() == t.m.dbsize()
    # what comes from the master counts as replication input, not as client input
    stats = info(t.ours, "stats")
    assert int(stats["total_net_repl_input_bytes"]) > int(info(t.m)["master_repl_offset"]) - offset_before
    before = [info(r, "stats") for r in t.replicas]
    t.m.set("big", "x" * 100_000)
    t.wait_synced()
    after = [info(r, "stats") for r in t.replicas]

    def delta(i: int, field: str) -> int:
        return int(after[i][field]) - int(before[i][field])

    assert delta(0, "total_net_repl_input_bytes") > 100_000
    # Redis 7.0's total_net_input_bytes includes the replication input: past the stream it grew
    # only by this test's INFO requests (as many as the wait took: a few dozen bytes each)
    for i in (0, 1):
        assert 0 < delta(i, "total_net_input_bytes") - delta(i, "total_net_repl_input_bytes") < 2_000


def test_expired_key_waits_for_the_masters_del(trio: Trio) -> None:
    """(d) a key past its deadline reads as missing on the replica but stays counted until the
    master's DEL arrives."""
    t = trio
    t.wait_up()
    t.m.flushall()
    t.m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        t.m.set("k", "v", px=300)
        t.m.set("other", "v")
        t.wait_synced()
        for r in t.replicas:
            wait_for(lambda r=r: r.get("k") is None, what="k logically expired")
        for r in t.replicas:
            assert r.execute_command("EXISTS", "k") == 0
            assert r.execute_command("PTTL", "k") == -2
            assert r.keys("*") == [b"other"]
            assert r.dbsize() == 2  # still there until the master says DEL
        assert t.m.get("k") is None  # the master expires it and propagates DEL
        t.wait_synced()
        for r in t.replicas:
            assert r.dbsize() == 1
    finally:
        t.m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def _raw(proc: ServerProcess, *args: object) -> bytes:
    """The reply's bytes, as the server wrote them."""
    conn = RawConnection(proc.port)
    try:
        return conn.call(*args)
    finally:
        conn.close()


def test_readonly_replica_refuses_writes(trio: Trio) -> None:
    """(d) READONLY for writes, scripts' writes and queued writes; reads and the master's
    writes go through."""
    t = trio
    t.wait_up()
    t.m.set("ro", "1")
    t.wait_synced()
    cases = [
        ("SET", "x", "1"),
        ("INCR", "ro"),
        ("EVAL", "return redis.call('set', 'x', '1')", 0),
        ("EVAL", "#!lua\nreturn redis.call('set', 'x', '1')", 0),
        ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'ro')", 0),
        ("EVAL", "return redis.call('get', 'ro')", 0),
        ("GET", "ro"),
    ]
    for case in cases:
        assert _raw(t.ours_proc, *case) == _raw(t.theirs_proc, *case), case
    replies = []
    for proc in (t.ours_proc, t.theirs_proc):
        conn = RawConnection(proc.port)
        try:
            replies.append([conn.call(*cmd) for cmd in (("MULTI",), ("GET", "ro"), ("SET", "x", "1"), ("EXEC",))])
        finally:
            conn.close()
    assert replies[0] == replies[1]
    assert replies[0][2].startswith(b"-READONLY")
    assert t.ours.get("x") is None


def test_masterdown_while_the_link_is_down(trio: Trio) -> None:
    """(d) replica-serve-stale-data no: MASTERDOWN for commands not flagged stale."""
    t = trio
    dead = free_port()
    try:
        for r in t.replicas:
            r.config_set("replica-serve-stale-data", "no")
        t.point(dead)
        for case in [("GET", "x"), ("SET", "x", "1"), ("PING",), ("DBSIZE",), ("CONFIG", "GET", "port")]:
            ours, theirs = _raw(t.ours_proc, *case), _raw(t.theirs_proc, *case)
            if case[0] == "CONFIG":
                continue
            assert ours == theirs, case
        assert _raw(t.ours_proc, "GET", "x").startswith(b"-MASTERDOWN")
        assert info(t.ours)["master_link_status"] == "down"
    finally:
        for r in t.replicas:
            r.config_set("replica-serve-stale-data", "yes")
        t.point()
        t.wait_up()


def test_partial_resync_after_the_link_drops(trio: Trio) -> None:
    """(b) the link killed from either end: raxdb continues with PSYNC (+CONTINUE)."""
    t = trio
    t.point()
    t.wait_synced()
    for kill in ("replica-side", "master-side"):
        before = int(info(t.m, "stats")["sync_partial_ok"])
        if kill == "replica-side":
            assert t.ours.execute_command("CLIENT", "KILL", "TYPE", "master") == 1
            expected = 1
        else:
            t.m.execute_command("CLIENT", "KILL", "TYPE", "replica")
            expected = 2  # both replicas reconnect
        t.m.set("after-kill", kill)
        wait_for(lambda b=before, e=expected: int(info(t.m, "stats")["sync_partial_ok"]) >= b + e,
                 what="partial resyncs")
        t.wait_synced()
        assert t.ours.get("after-kill") == kill.encode()
    assert t.ours.execute_command("DEBUG", "DIGEST") == t.m.execute_command("DEBUG", "DIGEST")
    assert t.ours_proc.wait_log("Master accepted a Partial Resynchronization.")


def test_info_replication_and_role_as_a_replica(trio: Trio) -> None:
    """(e) INFO replication fields, in order, and ROLE, against a redis-server replica."""
    t = trio
    t.wait_up()
    t.m.execute_command("SELECT", 7)  # the master client follows the stream's SELECT
    t.m.set("info", "1")
    t.m.execute_command("SELECT", 0)
    t.wait_synced()
    vary = {"master_last_io_seconds_ago"}

    def masked(c: redis.Redis) -> list[tuple[str, str]]:
        return [(k, v) for k, v in info_fields(c) if k not in vary]

    # the master's PING each second moves the offsets: compare readings taken between two
    wait_for(lambda: masked(t.ours) == masked(t.theirs), what="INFO replication alike")
    assert [k for k, _ in info_fields(t.ours)] == [k for k, _ in info_fields(t.theirs)]
    wait_for(lambda: t.ours.execute_command("ROLE") == t.theirs.execute_command("ROLE"), what="ROLE alike")
    assert t.ours.execute_command("ROLE")[3] == b"connected"
    # the master client: CLIENT LIST TYPE master, its flags, db, user
    shown = []
    for r in t.replicas:
        lines = r.execute_command("CLIENT", "LIST", "TYPE", "master").decode().splitlines()
        assert len(lines) == 1
        fields = dict(kv.split("=", 1) for kv in lines[0].split(" "))
        shown.append({k: fields[k] for k in ("flags", "db", "user", "resp", "multi", "sub", "name")})
    assert shown[0] == shown[1]
    assert shown[0]["flags"] == "M"


def test_info_while_the_link_is_down(trio: Trio) -> None:
    """(e) master_link_down_since_seconds, ROLE's state and offset while nothing answers."""
    t = trio
    dead = free_port()
    try:
        for r in t.replicas:
            r.execute_command("REPLICAOF", "127.0.0.1", dead)
        for r in t.replicas:
            wait_for(lambda r=r: r.execute_command("ROLE")[3] == b"connect", what="state connect")
        ours, theirs = info_fields(t.ours), info_fields(t.theirs)
        assert [k for k, _ in ours] == [k for k, _ in theirs]
        vary = {"master_last_io_seconds_ago", "master_link_down_since_seconds", "master_replid",
                "master_repl_offset", "slave_repl_offset", "slave_read_repl_offset",
                "repl_backlog_first_byte_offset", "repl_backlog_histlen", "second_repl_offset",
                "master_replid2", "repl_backlog_active"}
        assert [(k, v) for k, v in ours if k not in vary] == [(k, v) for k, v in theirs if k not in vary]
        assert t.ours.execute_command("ROLE")[:4] == t.theirs.execute_command("ROLE")[:4]
    finally:
        t.point()
        t.wait_up()


def test_replicaof_replies(trio: Trio) -> None:
    t = trio
    t.wait_up()
    port = t.master_proc.port
    for case in [("REPLICAOF", "127.0.0.1", port), ("SLAVEOF", "127.0.0.1", port),
                 ("REPLICAOF", "127.0.0.1", "70000"), ("REPLICAOF", "127.0.0.1", "x"),
                 ("REPLICAOF", "a"), ("CONFIG", "GET", "replicaof")]:
        assert _raw(t.ours_proc, *case) == _raw(t.theirs_proc, *case), case
    assert t.ours_proc.wait_log("REPLICAOF would result into synchronization with the master we are already")


def test_promotion_shifts_the_replication_id(trio: Trio) -> None:
    """(c) REPLICAOF NO ONE: writes accepted, master_replid2 is the old ID up to offset + 1.
    (A redis-server replica re-pointed at the promoted raxdb needs the master side: left for the
    merge.)"""
    t = trio
    t.point()
    t.wait_synced()
    seen = {}
    for name, r in (("ours", t.ours), ("theirs", t.theirs)):
        # one transaction, so no PING from the master lands between the readings
        p = r.pipeline(transaction=True)
        p.execute_command("INFO", "replication")
        p.execute_command("REPLICAOF", "NO", "ONE")
        p.execute_command("INFO", "replication")
        before, ok, after = p.execute()
        assert ok == b"OK"
        seen[name] = [dict(line.split(":", 1) for line in x.decode().split("\r\n") if ":" in line)
                      for x in (before, after)]
    for before, after in seen.values():
        assert before["master_replid"] == info(t.m)["master_replid"]
        assert after["role"] == "master"
        assert after["master_replid2"] == before["master_replid"]
        assert int(after["second_repl_offset"]) == int(before["master_repl_offset"]) + 1
        assert after["master_replid"] != before["master_replid"]
        assert after["repl_backlog_active"] == "1"
    assert seen["ours"][1]["master_replid"] != seen["theirs"][1]["master_replid"]
    assert [list(x) for x in seen["ours"]] == [list(x) for x in seen["theirs"]]
    assert t.ours.set("promoted", "1")
    assert t.ours.execute_command("ROLE")[0] == b"master"
    assert t.ours_proc.wait_log("MASTER MODE enabled (user request from")
    t.point()
    t.wait_up()


def test_replicaof_in_the_config_file_and_rewrite(trio: Trio) -> None:
    """`replicaof` at start-up connects; CONFIG REWRITE writes it as Redis does, and drops it
    once the server is a master."""
    port = trio.master_proc.port
    texts = []
    for server in ([sys.executable, "-m", "raxdb.server"], [redis_binary()]):
        d = tempfile.mkdtemp(prefix="repl-conf-")
        conf = os.path.join(d, "r.conf")
        with open(conf, "w") as f:
            f.write(f"replicaof 127.0.0.1 {port}\nrepl-ping-replica-period 1\n")
        p = free_port()
        proc = ServerProcess([*server, conf, "--port", str(p), "--bind", "127.0.0.1", *COMMON], p, d, server[-1])
        try:
            c = client(proc.port)
            wait_for(lambda c=c: info(c).get("master_link_status") == "up", what="link up from the config")
            c.execute_command("CONFIG", "REWRITE")
            with open(conf) as f:
                first = [line for line in f.read().splitlines() if line.startswith("replicaof")]
            c.execute_command("REPLICAOF", "NO", "ONE")
            c.execute_command("CONFIG", "REWRITE")
            with open(conf) as f:
                second = [line for line in f.read().splitlines() if line.startswith("replicaof")]
            texts.append((first, second))
        finally:
            proc.stop()
    assert texts[0] == texts[1]
    assert texts[0][0] == [f"replicaof 127.0.0.1 {port}"]


def test_acks_reach_the_master(trio: Trio) -> None:
    """REPLCONF ACK every second and in answer to GETACK: WAIT counts raxdb, and the master's
    view of raxdb's offset reaches what raxdb applied."""
    t = trio
    t.point()
    t.wait_up()
    t.m.set("acked", "1")
    assert t.m.execute_command("WAIT", 2, 10000) == 2
    offset = t.wait_synced()
    port = str(t.ours_proc.port)

    def acked() -> bool:  # the master PINGs every second, so its offset runs on meanwhile
        fields = info(t.m)
        lines = [v for k, v in fields.items() if k.startswith("slave") and f"port={port}," in v]
        ack = dict(kv.split("=", 1) for kv in lines[0].split(",")) if lines else {}
        return int(ack.get("offset", -1)) >= offset

    wait_for(acked, what="the master's view of raxdb's offset")


def test_master_link_times_out(trio: Trio) -> None:
    """repl-timeout without data from the master: the link is dropped, then resumed by PSYNC."""
    t = trio
    t.point()
    t.wait_synced()
    t.ours.config_set("repl-timeout", "1")
    try:
        t.m.execute_command("DEBUG", "SLEEP", "3.5")  # neither data nor PINGs meanwhile
        assert t.ours_proc.wait_log("MASTER timeout: no data nor PING received...")
        t.wait_up()
        t.m.set("after-timeout", "1")
        t.wait_synced()
        assert t.ours.get("after-timeout") == b"1"
    finally:
        t.ours.config_set("repl-timeout", "60")


def test_blocked_clients_are_released_on_becoming_a_replica() -> None:
    """disconnectAllBlockedClients: a BLPOP waiting on a master gets -UNBLOCKED when it becomes
    a replica, and the connection closes; the same on both servers."""
    master = start_redis(*FAST)
    procs = [start_raxdb(*FAST), start_redis(*FAST)]
    try:
        replies = []
        for proc in procs:
            conn = RawConnection(proc.port)
            conn.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
            c = client(proc.port)
            wait_for(lambda c=c: b"blocked_clients:1" in c.execute_command("INFO", "clients"), what="blocked")
            c.execute_command("REPLICAOF", "127.0.0.1", master.port)
            replies.append(conn.read_frame())
            with pytest.raises((ConnectionError, OSError)):
                conn.call("PING")
            conn.close()
        assert replies[0] == replies[1]
        assert replies[0].startswith(b"-UNBLOCKED")
    finally:
        for p in (*procs, master):
            p.stop()


def test_masterauth_and_masteruser() -> None:
    """AUTH in the handshake, with masterauth alone (the default user) and with masteruser; a
    wrong password keeps the link down with Redis's log line."""
    master = start_redis(*FAST, "--requirepass", "secret", "--user", "repl", "on", ">replpw", "+@all", "~*", "&*")
    ours = start_raxdb(*FAST)
    try:
        m = redis.Redis(port=master.port, password="secret")
        m.set("k", "v")
        r = client(ours.port)
        r.config_set("masterauth", "wrong")
        r.execute_command("REPLICAOF", "127.0.0.1", master.port)
        assert ours.wait_log("Unable to AUTH to MASTER: -WRONGPASS")
        assert info(r)["master_link_status"] == "down"
        r.config_set("masterauth", "secret")
        wait_for(lambda: info(r)["master_link_status"] == "up", what="link up with masterauth")
        assert r.get("k") == b"v"
        r.execute_command("REPLICAOF", "NO", "ONE")
        r.config_set("masteruser", "repl")
        r.config_set("masterauth", "replpw")
        r.execute_command("REPLICAOF", "127.0.0.1", master.port)
        wait_for(lambda: info(r)["master_link_status"] == "up", what="link up with masteruser")
        names = m.execute_command("CLIENT", "LIST", "TYPE", "replica")
        assert "user=repl" in str(names)
    finally:
        ours.stop()
        master.stop()


def test_replica_aof_gets_the_masters_writes() -> None:
    """appendonly yes on the replica: rewritten after the full sync, then fed by the master
    client; the replica restarted from its AOF alone holds the master's dataset."""
    master = start_redis(*FAST)
    d = tempfile.mkdtemp(prefix="repl-aof-")
    ours = start_raxdb(*FAST, "--appendonly", "yes", cwd=d)
    try:
        m = client(master.port)
        m.set("before", "1")
        m.rpush("l", "a", "b")
        r = client(ours.port)
        r.execute_command("REPLICAOF", "127.0.0.1", master.port)
        wait_for(lambda: info(r)["master_link_status"] == "up", what="link up")
        workload(m)
        target = int(info(m)["master_repl_offset"])
        wait_for(lambda: int(info(r)["slave_repl_offset"]) >= target, what="applied")
        wait_for(lambda: info(r, "persistence")["aof_rewrite_in_progress"] == "0"
                 and info(r, "persistence")["aof_rewrite_scheduled"] == "0", what="AOF rewritten")
        digest = m.execute_command("DEBUG", "DIGEST")
        assert r.execute_command("DEBUG", "DIGEST") == digest
        ours.stop()
        ours = start_raxdb("--appendonly", "yes", cwd=d)
        assert client(ours.port).execute_command("DEBUG", "DIGEST") == digest
    finally:
        ours.stop()
        master.stop()


def test_info_and_role_during_the_transfer(trio: Trio) -> None:
    """While the payload comes: ROLE's state is sync, INFO has the master_sync_* fields."""
    t = trio
    t.m.flushall()
    p = t.m.pipeline(transaction=False)
    for i in range(200):
        p.set(f"slow:{i}", i)
    p.execute()
    t.m.config_set("rdb-key-save-delay", "10000")  # two seconds of transfer
    t.m.config_set("repl-diskless-sync", "no")  # both replicas share one BGSAVE
    try:
        t.point()
        seen = []
        for r in t.replicas:
            wait_for(lambda r=r: r.execute_command("ROLE")[3] == b"sync", what="state sync")
            seen.append(info_fields(r))
        ours, theirs = seen
        assert [k for k, _ in ours] == [k for k, _ in theirs]
        assert dict(ours)["master_sync_in_progress"] == "1"
        assert "master_sync_total_bytes" in dict(ours)
    finally:
        t.m.config_set("rdb-key-save-delay", "0")
        t.m.config_set("repl-diskless-sync", "yes")
    t.wait_synced()
    assert t.ours.dbsize() == 200


def test_psync2_through_a_promoted_replica(trio: Trio) -> None:
    """raxdb moves to the redis-server replica of its master (+CONTINUE, same history), which
    is then promoted: raxdb continues again (+CONTINUE <new id>), its master_replid2 the old ID;
    no full resync throughout."""
    t = trio
    t.point()
    t.wait_synced()
    old_id = info(t.m)["master_replid"]
    o = t.theirs
    full, partial = int(info(o, "stats")["sync_full"]), int(info(o, "stats")["sync_partial_ok"])
    t.ours.execute_command("REPLICAOF", "127.0.0.1", t.theirs_proc.port)
    wait_for(lambda: int(info(o, "stats")["sync_partial_ok"]) == partial + 1, what="PSYNC to the replica")
    wait_for(lambda: info(t.ours)["master_link_status"] == "up", what="link up")
    try:
        o.execute_command("REPLICAOF", "NO", "ONE")  # drops raxdb, which continues at once
        wait_for(lambda: int(info(o, "stats")["sync_partial_ok"]) == partial + 2, what="PSYNC after promotion")
        wait_for(lambda: info(t.ours)["master_link_status"] == "up", what="link up")
        o.set("from-promoted", "1")
        wait_for(lambda: t.ours.get("from-promoted") == b"1", what="the promoted master's write")
        ours, theirs = info(t.ours), info(o)
        assert ours["master_replid"] == theirs["master_replid"] != old_id
        assert ours["master_replid2"] == theirs["master_replid2"] == old_id
        assert ours["second_repl_offset"] == theirs["second_repl_offset"]
        assert int(info(o, "stats")["sync_full"]) == full
        assert t.ours_proc.wait_log(f"Master replication ID changed to {theirs['master_replid']}")
        assert t.ours.execute_command("DEBUG", "DIGEST") == o.execute_command("DEBUG", "DIGEST")
    finally:
        t.point()
        t.wait_up()


@pytest.mark.parametrize(("mode", "empty"), [("swapdb", False), ("on-empty-db", True), ("on-empty-db", False)])
def test_diskless_load(trio: Trio, mode: str, empty: bool) -> None:
    """repl-diskless-load: swapdb, and on-empty-db when the replica has no keys, load from memory
    and leave no dump file; on-empty-db with keys loads from disk.  As redis-server does."""
    t = trio
    t.m.flushall()
    workload(t.m)
    try:
        for proc, r in ((t.ours_proc, t.ours), (t.theirs_proc, t.theirs)):
            r.config_set("repl-diskless-load", mode)
            r.execute_command("REPLICAOF", "NO", "ONE")
            r.flushall()
            if not empty:
                r.set("stale", "1")
            dump = os.path.join(proc.cwd, "dump.rdb")
            if os.path.exists(dump):
                os.unlink(dump)
        before = int(info(t.m, "stats")["sync_full"])
        for r in t.replicas:
            r.execute_command("REPLICAOF", "127.0.0.1", t.master_proc.port)
        wait_for(lambda: int(info(t.m, "stats")["sync_full"]) >= before + 2, what="both full syncs")
        compare_datasets(t)
        dumps = [os.path.exists(os.path.join(p.cwd, "dump.rdb")) for p in (t.ours_proc, t.theirs_proc)]
        assert dumps[0] == dumps[1] == (mode == "on-empty-db" and not empty)
        assert t.ours.get("stale") is None
    finally:
        for r in t.replicas:
            r.config_set("repl-diskless-load", "disabled")


_LOG_WORDS = ("MASTER", "REPLICA", "master", "resync", "cached", "replication ID", "RDB", "Loading")


def _repl_log(proc: ServerProcess, since: int) -> list[str]:
    """The replication log lines from `since` on, with their role letter, without pid, time,
    IDs, offsets and client details."""
    out = []
    for line in proc.log[since:]:
        m = re.match(r"^\d+:(\w) \d+ \w+ \d+ [\d:.]+ (. .*)$", line.rstrip())
        if not m or not any(w in m.group(2) for w in _LOG_WORDS) or "RDB memory usage" in m.group(2):
            continue
        # the role letter stays: M or S as the server's role is when it logs the line
        text = m.group(1) + " " + re.sub(r"[0-9a-f]{40}", "<id>", m.group(2))
        text = re.sub(r"(<id>:|offset: )\d+", r"\1<n>", text)  # the master's PINGs move offsets
        text = re.sub(r"RDB age \d+ seconds", "RDB age <n> seconds", text)  # a second may tick meanwhile
        out.append(re.sub(r"user request from '.*'", "user request from '...'", text))
    return out


def test_log_lines_as_redis_writes_them(trio: Trio) -> None:
    """A full sync, a dropped link resumed by PSYNC, a promotion: the same log lines, in the
    same order, as the redis-server replica's."""
    t = trio
    t.point()
    t.wait_synced()
    procs = (t.ours_proc, t.theirs_proc)
    promoted = [sum("MASTER MODE enabled" in line for line in p.log) for p in procs]
    for r in t.replicas:
        r.execute_command("REPLICAOF", "NO", "ONE")
    for p, n in zip(procs, promoted, strict=True):  # the log is read by a thread: all of it is in
        wait_for(lambda p=p, n=n: sum("MASTER MODE enabled" in line for line in p.log) > n, what="promotion logged")
    marks = [len(p.log) for p in procs]
    t.m.set("logged", "1")
    for r in t.replicas:
        r.execute_command("REPLICAOF", "127.0.0.1", t.master_proc.port)
    t.wait_synced()
    partial = int(info(t.m, "stats")["sync_partial_ok"])
    for r in t.replicas:
        r.execute_command("CLIENT", "KILL", "TYPE", "master")
    wait_for(lambda: int(info(t.m, "stats")["sync_partial_ok"]) == partial + 2, what="partial resyncs")
    t.wait_synced()
    for r in t.replicas:
        r.execute_command("REPLICAOF", "NO", "ONE")
    for proc, mark in zip((t.ours_proc, t.theirs_proc), marks, strict=True):
        wait_for(lambda p=proc, m=mark: any("MASTER MODE enabled" in line for line in p.log[m:]),
                 what="the promotion logged")
    ours, theirs = (_repl_log(p, m) for p, m in zip((t.ours_proc, t.theirs_proc), marks, strict=True))
    assert len(ours) > 20
    assert ours == theirs
    t.point()
    t.wait_up()


def _aux_fields(path: str) -> list[str]:
    """The aux field names redis-check-rdb reads in a dump file."""
    import subprocess

    out = subprocess.run(["redis-check-rdb", path], capture_output=True, text=True, timeout=60).stdout
    return re.findall(r"AUX FIELD ([\w-]+) =", out)


def test_restarted_replica_continues_from_its_dump_file() -> None:
    """A replica's dump file names its history (repl-stream-db, repl-id, repl-offset, as a
    redis-server replica writes them); restarted with `replicaof`, it continues by PSYNC."""
    master = start_redis(*FAST)
    d = tempfile.mkdtemp(prefix="repl-restart-")
    ours = start_raxdb(*FAST, cwd=d)
    theirs = start_redis(*FAST)
    try:
        m = client(master.port)
        m.execute_command("SELECT", 4)
        m.set("k", "v")
        for proc in (ours, theirs):
            r = client(proc.port)
            r.execute_command("REPLICAOF", "127.0.0.1", master.port)
            wait_for(lambda r=r: info(r)["master_link_status"] == "up", what="link up")
        target = int(info(m)["master_repl_offset"])
        for proc in (ours, theirs):
            r = client(proc.port)
            wait_for(lambda r=r: int(info(r)["slave_repl_offset"]) >= target, what="applied")
            r.execute_command("SAVE")
        fields = [_aux_fields(os.path.join(p.cwd, "dump.rdb")) for p in (ours, theirs)]
        assert fields[0] == fields[1]
        assert "repl-id" in fields[0]
        ours.stop()
        full = int(info(m, "stats")["sync_full"])
        partial = int(info(m, "stats")["sync_partial_ok"])
        m.set("while-down", "1")
        ours = start_raxdb(*FAST, "--replicaof", "127.0.0.1", str(master.port), cwd=d)
        r = client(ours.port)
        wait_for(lambda: info(r)["master_link_status"] == "up", what="link up after the restart")
        assert int(info(m, "stats")["sync_partial_ok"]) == partial + 1
        assert int(info(m, "stats")["sync_full"]) == full
        r.execute_command("SELECT", 4)
        wait_for(lambda: r.get("while-down") == b"1", what="the write made while it was down")
        assert r.execute_command("DEBUG", "DIGEST") == m.execute_command("DEBUG", "DIGEST")
    finally:
        for p in (ours, theirs, master):
            p.stop()


def test_idle_timeout_spares_the_master_link(trio: Trio) -> None:
    """`timeout` closes idle clients, never the master's link, which idles between PINGs."""
    t = trio
    t.point()
    t.wait_up()
    t.m.config_set("repl-ping-replica-period", "5")
    master_id = t.ours.execute_command("CLIENT", "LIST", "TYPE", "master").split()[0]
    partial = int(info(t.m, "stats")["sync_partial_ok"])
    try:
        t.m.set("last-before-idle", "1")
        t.ours.config_set("timeout", "1")
        wait_for(lambda: int(info(t.ours)["master_last_io_seconds_ago"]) >= 2, what="the link idle for 2 s")
        assert t.ours.execute_command("CLIENT", "LIST", "TYPE", "master").split()[0] == master_id
        assert info(t.ours)["master_link_status"] == "up"
        assert int(info(t.m, "stats")["sync_partial_ok"]) == partial
    finally:
        t.ours.config_set("timeout", "0")
        t.m.config_set("repl-ping-replica-period", "1")


def test_bind_source_addr_is_the_links_address(trio: Trio) -> None:
    """unit/networking 'CONFIG SET bind-source-addr': the link to the master leaves from that
    address (the master's INFO shows it), and one that cannot be bound is passed over."""
    t = trio

    def replica_ips() -> list[str]:
        fields = info(t.m)
        return sorted(re.search(r"ip=([^,]+)", v).group(1) for k, v in fields.items() if re.fullmatch(r"slave\d+", k))

    t.m.execute_command("CONFIG", "SET", "protected-mode", "no")  # it admits 127.0.0.1 and ::1 only
    try:
        for source, want in (("127.0.0.2", ["127.0.0.2", "127.0.0.2"]), ("192.0.2.1", ["127.0.0.1", "127.0.0.1"])):
            for r in t.replicas:
                r.execute_command("CONFIG", "SET", "bind-source-addr", source)
            t.point()
            t.wait_up()
            wait_for(lambda want=want: replica_ips() == want, what=f"replicas from {want}")
    finally:
        t.m.execute_command("CONFIG", "SET", "protected-mode", "yes")
        for r in t.replicas:
            r.execute_command("CONFIG", "SET", "bind-source-addr", "")
        t.point()
        t.wait_up()


def test_a_paused_replica_reads_its_master_but_applies_nothing(trio):
    """CLIENT PAUSE holds the master client too: the stream is read (slave_read_repl_offset) but
    not applied (slave_repl_offset, the key) until the pause ends, then applied in order (Redis's
    unit/pause 'Test when replica paused, offset would not grow'; raxdb applied it at once)."""
    trio.m.execute_command("SET", "paused:k", "before")
    trio.wait_synced()
    for r in trio.replicas:
        assert r.execute_command("CLIENT", "PAUSE", 100000, "WRITE") == b"OK"
    try:
        held = int(info(trio.m)["master_repl_offset"])  # the SET starts here (a PING may come first)
        trio.m.execute_command("SET", "paused:k", "during")
        trio.m.execute_command("RPUSH", "paused:l", "x")
        target = int(info(trio.m)["master_repl_offset"])
        for r in trio.replicas:
            wait_for(lambda r=r: int(info(r)["slave_read_repl_offset"]) >= target, what="stream read")
            assert int(info(r)["slave_repl_offset"]) <= held
            assert r.execute_command("GET", "paused:k") == b"before"
    finally:
        for r in trio.replicas:
            r.execute_command("CLIENT", "UNPAUSE")
    trio.wait_synced()
    for r in trio.replicas:
        assert r.execute_command("GET", "paused:k") == b"during"
        assert r.execute_command("LRANGE", "paused:l", 0, -1) == [b"x"]
    trio.m.execute_command("DEL", "paused:k", "paused:l")
