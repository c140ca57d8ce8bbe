"""Differences Redis's own replication tests (tools/redis_suite/run.sh, integration/replication*,
psync2*, block-repl) found in raxdb, each pinned by a differential test: the same scenario with
raxdb and with redis-server in the role under test, compared.

Waits poll a condition with a deadline; no timing is asserted.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

import pytest
import redis

from tests.integration.test_repl_master import (
    FAST,
    Link,
    caught_up,
    client,
    info,
    link_up,
    replica_of,
    running,
    wait_for,
)
from tests.support.diff import encode_command
from tests.support.servers import ServerProcess, start_raxdb, start_redis

pytestmark = pytest.mark.oracle


def _try(c: redis.Redis, *args: object) -> object:
    try:
        return c.execute_command(*args)
    except redis.ResponseError as e:
        return f"ERR {e}"


# ---- CONFIG SET of min-replicas-* recounts the good replicas (replication-2) ----------------------------
def _min_replicas_scenario(master: ServerProcess) -> list[object]:
    m = client(master)
    out: list[object] = []
    with replica_of(master, *FAST) as rep:
        wait_for(lambda: link_up(rep), what="master_link_status:up")
        m.config_set("min-replicas-to-write", 1)
        m.config_set("min-replicas-max-lag", 1)
        wait_for(lambda: info(master).get("min_slaves_good_slaves") == "1", what="a good replica")
        out.append(_try(m, "SET", "foo", "1"))
        with rep.stopped():  # its ACKs stop: the lag grows past 1 s
            wait_for(lambda: str(_try(m, "SET", "foo", "2")).startswith("ERR NOREPLICAS"),
                     what="writes refused")
        # a larger max lag takes the replica back at once, not at the next replicationCron
        m.config_set("min-replicas-max-lag", 100)
        out.append(_try(m, "SET", "foo", "3"))
        out.append(info(master).get("min_slaves_good_slaves"))
    return out


def test_config_set_recounts_good_replicas() -> None:
    with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
        got, want = _min_replicas_scenario(a), _min_replicas_scenario(b)
        assert got == want == [True, True, "1"]


# ---- PUBLISH reaches the replication stream, not the AOF (unit/multi, PROPAGATE_REPL) -------------------
def _stream_until_marker(master: ServerProcess, run: Callable[[redis.Redis], None]) -> bytes:
    """What the replication stream carries for `run`, read by a SYNC link as the suite's
    attach_to_replication_stream does, up to a closing SET of a marker key."""
    m = client(master)
    m.config_set("repl-ping-replica-period", 3600)  # the stream holds the writes only
    link = Link(master.port)
    try:
        link.sock.sendall(b"SYNC\r\n")
        link.payload()
        run(m)
        m.set("marker", "end")
        end = encode_command(["SET", "marker", "end"])
        while not link.buf.endswith(end):
            link._need(len(link.buf) + 1)
        return link.buf
    finally:
        link.close()


def _publish_scenario(master: ServerProcess) -> list[object]:
    def run(m: redis.Redis) -> None:
        m.publish("ch", "plain")
        t = m.pipeline(transaction=True)
        t.publish("ch", "alone-in-multi")
        t.execute()
        t = m.pipeline(transaction=True)
        t.set("k", "v")
        t.publish("ch", "with-a-write")
        t.execute()
        m.eval("redis.call('publish', 'ch', 'from-a-script'); return 1", 0)
        m.execute_command("SPUBLISH", "sch", "sharded")

    def aof() -> bytes:
        files = glob.glob(os.path.join(master.cwd, "appendonlydir", "*.incr.aof"))
        return b"".join(open(f, "rb").read() for f in files)

    stream = _stream_until_marker(master, run)
    wait_for(lambda: b"marker" in aof(), what="the AOF to hold the last write")  # appendfsync everysec
    return [stream, b"publish" in aof().lower()]


def test_publish_is_propagated_to_replicas_only() -> None:
    with running(start_raxdb(*FAST, "--appendonly", "yes")) as a, \
            running(start_redis(*FAST, "--appendonly", "yes")) as b:
        got, want = _publish_scenario(a), _publish_scenario(b)
        assert got == want
        assert b"alone-in-multi" in got[0] and got[1] is False


# ---- smaller differences the newly enabled external-unit tests found (unit/pause, unit/slowlog) ---------
def _ro_script_and_slowlog_scenario(s: ServerProcess) -> list[object]:
    c = client(s)
    out: list[object] = []
    for script in ("return redis.call('publish', 'ch', 'msg')", "return redis.call('pfcount', 'h')",
                   "return redis.call('get', 'x')"):
        out.append(_try(c, "EVAL_RO", script, 0))
    out.append(_try(c, "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function{function_name='p', "
                    "callback=function() return redis.call('publish', 'ch', 'm') end, flags={'no-writes'}}"))
    out.append(_try(c, "FCALL_RO", "p", 0))
    c.config_set("slowlog-log-slower-than", 0)
    c.slowlog_reset()
    c.config_set("masterauth", "")
    c.execute_command("CONFIG", "SET", "requirepass", "", "maxmemory-policy", "noeviction", "masteruser", "u")
    _try(c, "CONFIG", "SET", "masterauth")  # wrong arity: logged as given
    c.config_set("slowlog-log-slower-than", -1)
    out.append([e[3] for e in c.execute_command("SLOWLOG", "GET")])
    return out


def test_ro_scripts_refuse_publish_and_config_set_redacts_passwords() -> None:
    with running(start_raxdb()) as a, running(start_redis()) as b:
        got, want = _ro_script_and_slowlog_scenario(a), _ro_script_and_slowlog_scenario(b)
        assert got == want
        assert str(got[0]).startswith("ERR Write commands are not allowed from read-only scripts.")


# ---- a replica whose data diverged logs the error it could not send (replication-4) ---------------------
def _divergence_scenario(rep: ServerProcess, master: ServerProcess) -> list[object]:
    m, r = client(master), client(rep)
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    wait_for(lambda: link_up(rep), what="master_link_status:up")
    r.config_set("replica-read-only", "no")
    r.set("number2", "foo")
    r.rpush("lst", "a")
    m.incrby("number2", 1)
    m.execute_command("DEBUG", "REPLICATE", "fake-command-1", "x")
    m.execute_command("DEBUG", "REPLICATE", "lpush", "number2", "y")
    mark = str(rep.port).encode()  # the master serves both scenarios: a mark of this one's
    m.set("done", mark)
    wait_for(lambda: r.get("done") == mark, what="the stream to arrive")
    # the last error's lines may still be on their way through the log's pipe (a fresh-clone CI
    # run read redis-server's log before them): wait for them, not for a time
    rep.wait_log("fake-command-1\\r\\n$1\\r\\nx", 10)  # the last "Latest backlog" line
    critical = [line.split(" # ", 1)[-1] for line in rep.log if "== CRITICAL ==" in line or "Latest backlog" in line]
    stats = client(rep).execute_command("INFO", "stats").decode()
    return [critical, [x for x in stats.split() if x.startswith("unexpected_error_replies")],
            r.get("number2")]


def test_divergent_replica_logs_the_errors_as_redis() -> None:
    with running(start_redis(*FAST, "--enable-debug-command", "yes")) as master:
        with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
            got, want = _divergence_scenario(a, master), _divergence_scenario(b, master)
    assert got == want
    assert len(got[0]) == 6 and got[1] == ["unexpected_error_replies:3"]


def _compare_with_a_replica(body: Callable[[ServerProcess, ServerProcess], list[object]]) -> list[object]:
    """`body(master, replica)` with raxdb and then redis-server as the master (debug commands on),
    a redis-server replica attached and up; both must give the same.  Returns raxdb's."""
    def scenario(master: ServerProcess) -> list[object]:
        with replica_of(master, *FAST) as rep:
            wait_for(lambda: link_up(rep), what="master_link_status:up")
            return body(master, rep)

    with running(start_raxdb(*FAST, "--enable-debug-command", "yes")) as a, \
            running(start_redis(*FAST, "--enable-debug-command", "yes")) as b:
        got, want = scenario(a), scenario(b)
    assert got == want
    return got


def test_debug_replicate_matches_redis() -> None:
    def body(master: ServerProcess, rep: ServerProcess) -> list[object]:
        m = client(master)
        m.set("a", "1")
        out = [m.execute_command("DEBUG", "REPLICATE", "set", "a", "2"), _try(m, "DEBUG", "REPLICATE")]
        m.set("b", "1")
        wait_for(lambda: client(rep).get("b") == b"1", what="the replica to catch up")
        return out + [m.get("a"), client(rep).get("a")]

    assert _compare_with_a_replica(body)[2:4] == [b"1", b"2"]


# ---- a restarted master continues its saved history (psync2-master-restart) -----------------------------
def _restart_scenario(start: Callable[..., ServerProcess]) -> list[object]:
    master = start(*FAST, "--save", "3600 1")
    try:
        with replica_of(master, *FAST) as rep:
            wait_for(lambda: link_up(rep), what="master_link_status:up")
            m = client(master)
            m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            m.set("k", "v")
            c3 = client(master, 3)
            c3.set("gone", "x", px=50)  # past its deadline when the master is back
            c3.set("kept", "y")
            wait_for(lambda: caught_up(master, rep) and f"offset={info(master)['master_repl_offset']},"
                     in info(master).get("slave0", ""), what="the replica to acknowledge everything")
            before = info(master)
            offset, replid = int(before["master_repl_offset"]), before["master_replid"]
            try:
                m.execute_command("SHUTDOWN", "SAVE", "NOW")
            except redis.ConnectionError:
                pass
            master.proc.wait(30)
            port = master.port
            master = start(*FAST, "--save", "3600 1", "--port", str(port), cwd=master.cwd)
            master.port = port
            wait_for(lambda: link_up(rep) and caught_up(master, rep), what="the replica back in sync")
            after, stats = info(master), info(master, "stats")
            # The stream since the restart holds SELECT 3 + DEL gone (46 bytes) and as many PINGs
            # (14 bytes each) as the ping period let through, which is timing, not behaviour.
            grown = int(after["master_repl_offset"]) - offset - 46
            return [after["master_replid"] != replid, after["master_replid2"] == replid,
                    int(after["second_repl_offset"]) - offset, grown >= 0 and grown % 14 == 0,
                    after["repl_backlog_active"], int(after["repl_backlog_first_byte_offset"]) - offset,
                    stats["sync_partial_ok"], stats["sync_full"], stats["expired_keys"],
                    client(rep, 3).keys("*"), client(rep).get("k")]
    finally:
        master.stop()


def test_restarted_master_continues_its_history() -> None:
    got, want = _restart_scenario(start_raxdb), _restart_scenario(start_redis)
    assert got == want
    assert got[:4] == [True, True, 1, True] and got[6] == "1" and got[9] == [b"kept"]


def test_save_is_not_propagated() -> None:
    """SAVE lowers the dirty counter: not a change to replay (before, a master's SHUTDOWN SAVE
    reached its replicas and shut them down, or crashed a redis-server replica)."""
    def run(m: redis.Redis) -> None:
        m.set("a", "1")
        m.save()
        m.set("b", "2")
        m.execute_command("DEBUG", "RELOAD")

    def scenario(master: ServerProcess) -> bytes:
        return _stream_until_marker(master, run)

    with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
        got, want = scenario(a), scenario(b)
    assert got.lower() == want.lower()
    assert b"save" not in got.lower() and b"reload" not in got.lower()


# ---- DEBUG POPULATE (integration/replication gives a replica data of its own with it) -------------------
def test_debug_populate_matches_redis() -> None:
    def body(master: ServerProcess, rep: ServerProcess) -> list[object]:
        m = client(master)
        m.set("key:1", "mine")
        out: list[object] = [m.execute_command("DEBUG", "POPULATE", 3),
                             m.execute_command("DEBUG", "POPULATE", 2, "p", 10),
                             m.execute_command("DEBUG", "POPULATE", 2, "q", 3)]
        for bad in (("-1",), ("x",), ("1", "p", "-2")):
            out.append(_try(m, "DEBUG", "POPULATE", *bad))
        out.append(sorted((k, m.get(k)) for k in m.keys("*")))
        m.set("end", "1")
        wait_for(lambda: client(rep).get("end") == b"1", what="the replica to catch up")
        out.append(sorted(client(rep).keys("*")))  # not propagated
        out.append(info(master, "persistence")["rdb_changes_since_last_save"])
        return out

    got = _compare_with_a_replica(body)
    assert got[:3] == [b"OK"] * 3 and got[7] == [b"end", b"key:1"]


# ---- a writable replica expires the keys its own clients gave a TTL (replication-3) ---------------------
def _writable_replica_scenario(rep: ServerProcess, master: ServerProcess) -> list[object]:
    m, r = client(master, 5), client(rep, 5)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")  # the master's key stays, past its deadline
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    wait_for(lambda: link_up(rep), what="master_link_status:up")
    r.config_set("replica-read-only", "no")
    m.set("from-master", "x", px=100)
    wait_for(lambda: r.dbsize() == 1, what="the master's key")
    r.set("own1", "1", px=100)
    r.set("own2", "2", px=100)
    r.set("own3", "3")
    r.expire("own3", 1)
    r.set("plain", "4")
    wait_for(lambda: r.dbsize() == 2, what="the replica's own keys to expire")
    out: list[object] = [r.dbsize(),
                         r.exists("from-master"), r.get("plain")]
    m.delete("from-master")
    wait_for(lambda: r.dbsize() == 1, what="the master's DEL")
    out.append(r.keys("*"))
    return out


def test_writable_replica_expires_its_own_keys() -> None:
    with running(start_redis(*FAST, "--enable-debug-command", "yes")) as master:
        with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
            got = _writable_replica_scenario(a, master)
            client(master, 5).flushall()
            want = _writable_replica_scenario(b, master)
    assert got == want == [2, 0, b"4", [b"plain"]]


def _replica_write_on_expired_scenario(rep: ServerProcess, master: ServerProcess) -> list[object]:
    m, r = client(master, 5), client(rep, 5)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    wait_for(lambda: link_up(rep), what="master_link_status:up")
    m.set("key1", "5", px=10)
    m.set("key2", "5", px=10)
    m.set("key3", "5", px=10)
    wait_for(lambda: r.dbsize() == 3 and r.exists("key1", "key2", "key3") == 0, what="keys to replicate and expire")
    r.config_set("replica-read-only", "no")
    t = r.pipeline(transaction=True)
    t.append("key3", "x")
    t.execute()
    out: list[object] = [r.dbsize(), r.incr("key1"), r.ttl("key1"), r.get("key2"), r.dbsize(),
                         r.get("key3"), r.ttl("key3")]
    r.config_set("replica-read-only", "yes")
    m.flushall()
    wait_for(lambda: r.dbsize() == 0, what="the flush")
    return out


def test_writable_replica_write_deletes_an_expired_key_first() -> None:
    with running(start_redis(*FAST, "--enable-debug-command", "yes")) as master:
        with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
            got = _replica_write_on_expired_scenario(a, master)
            want = _replica_write_on_expired_scenario(b, master)
    assert got == want == [3, 1, -1, None, 3, b"x", -1]
