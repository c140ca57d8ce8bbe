"""FAILOVER (server/replication/failover.py) and INFO's total_net_repl_output_bytes, differentially.

Every scenario runs on a master and its replica in four pairings: redis-server with a redis-server
replica (the oracle), raxdb with a raxdb replica, raxdb with a redis-server replica and the
reverse, so raxdb is tried as the master that hands its role over and as the replica that takes
it.  Each scenario returns what a user sees (replies, INFO states, roles, sync counters, data,
log lines, with ports named by role) and every pairing must see what the oracle saw.

A replica that must not catch up is stopped with SIGSTOP (as Redis's own failover test does);
everything else waits for events (INFO states, offsets), never for time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.integration.test_repl_replica import FAST, client, info, wait_for
from tests.support.diff import RawConnection, encode_command
from tests.support.servers import ServerProcess, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

PAIRINGS = [("redis", "redis"), ("raxdb", "raxdb"), ("raxdb", "redis"), ("redis", "raxdb")]


class Nodes:
    """Two servers of each kind; a scenario takes a master and a replica from them."""

    def __init__(self) -> None:
        self.procs: dict[str, list[ServerProcess]] = {"redis": [], "raxdb": []}

    def start(self) -> None:
        for _ in range(2):
            self.procs["redis"].append(start_redis(*FAST))
            self.procs["raxdb"].append(start_raxdb(*FAST))

    def stop(self) -> None:
        for procs in self.procs.values():
            for p in procs:
                p.stop()

    def pair(self, mkind: str, rkind: str) -> tuple[ServerProcess, ServerProcess]:
        """A fresh master with one online replica: every server a master first, the master
        emptied, then the replica attached."""
        mp = self.procs[mkind][0]
        rp = self.procs[rkind][1 if mkind == rkind else 0]
        m, r = client(mp.port), client(rp.port)
        for p in (*self.procs["redis"], *self.procs["raxdb"]):  # no replica left from another pairing
            c = client(p.port)
            c.execute_command("REPLICAOF", "NO", "ONE")
            c.execute_command("CONFIG", "SET", "repl-diskless-sync-delay", "0")
        m.execute_command("FLUSHALL")
        r.execute_command("REPLICAOF", "127.0.0.1", mp.port)
        wait_for(lambda: info(r).get("master_link_status") == "up", what="link up")
        wait_for(lambda: "state=online" in info(m).get("slave0", ""), what="replica online")
        return mp, rp


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    n = Nodes()
    try:
        n.start()
        yield n
    finally:
        n.stop()


def differential(nodes: Nodes, scenario: Callable[[ServerProcess, ServerProcess], Any]) -> None:
    """Run `scenario` in every pairing; each must observe what redis-server with a redis-server
    replica observed."""
    seen = {}
    for mkind, rkind in PAIRINGS:
        mp, rp = nodes.pair(mkind, rkind)
        seen[(mkind, rkind)] = scenario(mp, rp)
    oracle = seen[("redis", "redis")]
    for key, got in seen.items():
        assert got == oracle, f"master {key[0]}, replica {key[1]}"


def err(c: redis.Redis, *args: Any) -> str:
    try:
        return f"reply {c.execute_command(*args)!r}"
    except redis.ResponseError as e:
        return str(e)


def state(c: redis.Redis) -> str:
    return info(c)["master_failover_state"]


def wait_state(c: redis.Redis, want: str) -> None:
    wait_for(lambda: state(c) == want, what=f"master_failover_state:{want}")


def role(c: redis.Redis) -> list[Any]:
    return list(c.execute_command("ROLE")[:1])


def stats(c: redis.Redis) -> tuple[int, int]:
    s = info(c, "stats")
    return int(s["sync_full"]), int(s["sync_partial_ok"])


def data(c: redis.Redis) -> dict[bytes, bytes]:
    return {k: c.execute_command("GET", k) for k in c.execute_command("KEYS", "*")}


def log_has(p: ServerProcess, text: str) -> bool:
    return p.wait_log(text, timeout=5)


# ---- the errors -----------------------------------------------------------------------------------
def test_errors(nodes: Nodes) -> None:
    """Every refusal, word for word, in Redis's order of checks."""

    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[str]:
        m, r = client(mp.port), client(rp.port)
        out = [err(m, *args.split()) for args in (
            "FAILOVER foo", "FAILOVER TIMEOUT -1", "FAILOVER TIMEOUT 0", "FAILOVER TIMEOUT abc",
            "FAILOVER TIMEOUT 10 TIMEOUT 10", "FAILOVER FORCE FORCE", "FAILOVER TO 127.0.0.1",
            "FAILOVER TO 127.0.0.1 abc", "FAILOVER ABORT TIMEOUT 5", "FAILOVER ABORT",
            "FAILOVER TO invalidhost 1", f"FAILOVER TO 127.0.0.1 {rp.port + 1}", "FAILOVER FORCE TIMEOUT 100",
            f"FAILOVER TO 127.0.0.1 {rp.port} FORCE", f"FAILOVER to 127.0.0.1 {mp.port} timeout 5 force")]
        out.append(err(r, "FAILOVER"))
        out.append(err(r, "FAILOVER", "TO", "127.0.0.1", rp.port))
        # a replica still waiting for its snapshot is not online
        r.execute_command("REPLICAOF", "NO", "ONE")
        m.execute_command("CONFIG", "SET", "repl-diskless-sync-delay", "60")
        r.execute_command("REPLICAOF", "127.0.0.1", mp.port)
        wait_for(lambda: "state=wait_bgsave" in info(m).get("slave0", ""), what="replica waiting")
        out.append(err(m, "FAILOVER", "TO", "127.0.0.1", rp.port))
        m.execute_command("CONFIG", "SET", "repl-diskless-sync-delay", "0")
        wait_for(lambda: info(r).get("master_link_status") == "up", what="link up")
        # PSYNC ... FAILOVER with a replid that is not the replica's
        out += [err(r, "PSYNC", "0" * 40, "1", "FAILOVER"), info(r)["role"]]
        assert log_has(rp, "Failover request received for replid " + "0" * 40 + ".")
        # a master without replicas
        r.execute_command("REPLICAOF", "NO", "ONE")
        wait_for(lambda: info(m)["connected_slaves"] == "0", what="replica gone")
        out.append(err(m, "FAILOVER"))
        out.append(err(m, "FAILOVER", "TO", "127.0.0.1", rp.port))
        # PSYNC ... FAILOVER to a master
        out.append(err(m, "PSYNC", "?", "-1", "FAILOVER"))
        return [line.replace(str(rp.port), "<replica>").replace(str(mp.port), "<master>") for line in out]

    differential(nodes, scenario)


# ---- a failover that runs to its end ------------------------------------------------------------------
@pytest.mark.parametrize("to", [True, False], ids=["to-replica", "any-replica"])
def test_failover_hands_the_role_over(nodes: Nodes, to: bool) -> None:
    """The target promotes itself on our PSYNC ... FAILOVER and continues our history (a partial
    resync under a new ID, ours kept as its replid2); we follow it.  A write that came during the
    failover was held, and is refused once the pause ends: we are a replica."""

    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        for i in range(50):
            m.execute_command("SET", f"k{i}", i)
        old_replid = info(m)["master_replid"]
        r_stats = stats(r)
        args = ["TO", "127.0.0.1", rp.port] if to else []
        out: list[Any] = [m.execute_command("FAILOVER", *args)]
        held = RawConnection(mp.port)  # a write sent now is held, then refused by the replica we become
        try:
            held.send(encode_command(["SET", "held", "1"]))
            wait_state(m, "no-failover")
            out.append(held.read_frame())
        finally:
            held.close()
        wait_for(lambda: info(m).get("master_link_status") == "up", what="old master linked to the new one")
        mi, ri = info(m), info(r)
        out += [role(m), mi["master_port"] == str(rp.port), role(r), ri["master_failover_state"],
                ri["master_replid2"] == old_replid, mi["master_replid"] == ri["master_replid"]]
        full, partial = stats(r)
        out += [full - r_stats[0], partial - r_stats[1]]
        wait_for(lambda: info(m)["slave_repl_offset"] == info(r)["master_repl_offset"], what="offsets equal")
        out.append(data(m) == data(r) and len(data(r)) == 50)
        out.append(err(m, "SET", "x", "1"))
        r.execute_command("SET", "after", "1")
        wait_for(lambda: m.execute_command("GET", "after") == b"1", what="the new master's write")
        target = "127.0.0.1:%d" % rp.port
        assert log_has(mp, f"FAILOVER requested to {target}." if to else "FAILOVER requested to any replica.")
        assert log_has(mp, f"Failover target {target} is synced, failing over.")
        assert log_has(rp, f"Failover request received for replid {old_replid}.")
        assert log_has(rp, "MASTER MODE enabled (failover request from 'id=")
        return out

    differential(nodes, scenario)


# ---- a failover that waits -----------------------------------------------------------------------------
def test_waiting_failover_pauses_writes_and_aborts(nodes: Nodes) -> None:
    """While it waits for the replica: writes are held (CLIENT UNPAUSE does not release them),
    reads run, a second FAILOVER and REPLICAOF are refused; FAILOVER ABORT lets the held write
    run on the master it still is."""

    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        m.execute_command("SET", "k", "v")
        wait_for(lambda: info(r)["slave_repl_offset"] == info(m)["master_repl_offset"], what="replica synced")
        held = RawConnection(mp.port)
        try:
            with rp.stopped():
                m.execute_command("SET", "case", "1")
                out: list[Any] = [m.execute_command("FAILOVER", "TO", "127.0.0.1", rp.port, "TIMEOUT", 60000),
                                  state(m), err(m, "FAILOVER", "TIMEOUT", "5"), err(m, "FAILOVER"),
                                  err(m, "REPLICAOF", "NO", "ONE"), err(m, "REPLICAOF", "127.0.0.1", rp.port),
                                  err(client(mp.port), "PSYNC", "?", "-1"),
                                  m.execute_command("GET", "k")]
                held.send(encode_command(["SET", "held", "1"]))
                wait_for(lambda: "cmd=set" in _client_line(m, "b"), what="the write held")
                out += [m.execute_command("CLIENT", "UNPAUSE"), m.execute_command("GET", "held"),
                        m.execute_command("FAILOVER", "ABORT"), state(m)]
                out += [held.read_frame(), m.execute_command("GET", "held"), role(m), err(m, "FAILOVER", "ABORT")]
            wait_for(lambda: info(r)["slave_repl_offset"] == info(m)["master_repl_offset"], what="replica synced")
        finally:
            held.close()
        assert log_has(mp, "FAILOVER to 127.0.0.1:%d aborted: Failover manually aborted" % rp.port)
        return out

    differential(nodes, scenario)


def _client_line(c: redis.Redis, flag: str) -> str:
    lines = c.execute_command("CLIENT", "LIST").decode().splitlines()
    return "\n".join(line for line in lines if f"flags={flag}" in line)


def test_timeout_aborts_when_the_replica_never_catches_up(nodes: Nodes) -> None:
    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        before = stats(m)
        with rp.stopped():
            m.execute_command("SET", "case", "1")
            out: list[Any] = [m.execute_command("FAILOVER", "TO", "127.0.0.1", rp.port, "TIMEOUT", 300)]
            wait_state(m, "no-failover")
            out += [role(m), m.execute_command("SET", "after", "1")]
        wait_for(lambda: info(r)["slave_repl_offset"] == info(m)["master_repl_offset"], what="replica synced")
        out += [role(r), data(r) == data(m), [a - b for a, b in zip(stats(m), before, strict=True)]]
        assert log_has(mp, "FAILOVER to 127.0.0.1:%d aborted: Replica never caught up before timeout" % rp.port)
        return out

    differential(nodes, scenario)


def test_force_fails_over_after_the_timeout(nodes: Nodes) -> None:
    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        with rp.stopped():
            m.execute_command("SET", "case", "2")  # the replica never acknowledges it
            out: list[Any] = [m.execute_command("FAILOVER", "TO", "127.0.0.1", rp.port, "TIMEOUT", 100, "FORCE")]
            wait_state(m, "failover-in-progress")
            out += [role(m), err(m, "FAILOVER", "ABORT", "x")]
        wait_state(m, "no-failover")
        wait_for(lambda: info(m).get("master_link_status") == "up", what="old master linked to the new one")
        out += [role(m), role(r)]
        wait_for(lambda: info(m)["slave_repl_offset"] == info(r)["master_repl_offset"], what="offsets equal")
        out.append(data(m) == data(r))
        assert log_has(mp, "FAILOVER to 127.0.0.1:%d time out exceeded, failing over." % rp.port)
        return out

    differential(nodes, scenario)


def test_rejected_psync_makes_the_old_master_a_master_again(nodes: Nodes) -> None:
    """The target refuses PSYNC (an ACL rule): the failover is aborted, the held write runs on
    the master, whose replicas reconnect and continue by PSYNC."""

    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        r.execute_command("ACL", "SETUSER", "default", "-psync")
        held = RawConnection(mp.port)
        try:
            before = stats(m)
            with rp.stopped():
                m.execute_command("SET", "case", "1")  # the failover waits for the replica to ACK it
                out: list[Any] = [m.execute_command("FAILOVER", "TO", "127.0.0.1", rp.port), state(m)]
                held.send(encode_command(["SET", "foo", "bar"]))
                wait_for(lambda: "cmd=set" in _client_line(m, "b"), what="the write held")
            wait_state(m, "no-failover")
            out += [held.read_frame(), role(m)]
        finally:
            held.close()
            r.execute_command("ACL", "SETUSER", "default", "+psync")
        wait_for(lambda: info(r).get("master_link_status") == "up", what="replica back")
        wait_for(lambda: info(r)["slave_repl_offset"] == info(m)["master_repl_offset"], what="replica synced")
        out += [role(r), data(r), [a - b for a, b in zip(stats(m), before, strict=True)]]
        assert log_has(mp, "FAILOVER to 127.0.0.1:%d aborted: Failover target rejected psync request" % rp.port)
        return out

    differential(nodes, scenario)


# ---- the replication output counter ----------------------------------------------------------------
def test_total_net_repl_output_bytes(nodes: Nodes) -> None:
    """What a master writes to its replica (the RDB payload, then the stream, byte for byte what
    the offset counts) is total_net_repl_output_bytes, and is within total_net_output_bytes;
    instantaneous_output_repl_kbps is its rate (and the replica's
    instantaneous_input_repl_kbps the rate it reads at)."""

    def scenario(mp: ServerProcess, rp: ServerProcess) -> list[Any]:
        m, r = client(mp.port), client(rp.port)
        r.execute_command("REPLICAOF", "NO", "ONE")
        for c in (m, r):
            c.execute_command("CONFIG", "RESETSTAT")
        for i in range(300):
            m.execute_command("SET", f"k{i}", "x" * 50)
        r.execute_command("REPLICAOF", "127.0.0.1", mp.port)

        def synced() -> dict[str, str]:
            wait_for(lambda: info(r)["slave_repl_offset"] == info(m)["master_repl_offset"], what="replica synced")
            return info(m, "default")  # stats and replication read at one moment

        first = synced()
        for i in range(50):
            m.execute_command("SET", f"j{i}", i)
        second = synced()
        sent = [int(x["total_net_repl_output_bytes"]) for x in (first, second)]
        stream = int(second["master_repl_offset"]) - int(first["master_repl_offset"])

        def flowing() -> bool:  # the instantaneous rates follow the stream, on both sides
            m.execute_command("SET", "big", "x" * 10000)
            return (float(info(m, "stats")["instantaneous_output_repl_kbps"]) > 0
                    and float(info(r, "stats")["instantaneous_input_repl_kbps"]) > 0)

        wait_for(flowing, what="instantaneous_output_repl_kbps and instantaneous_input_repl_kbps above 0")
        return [sent[0] > 300 * 50, sent[1] - sent[0] == stream, int(second["total_net_output_bytes"]) > sent[1],
                info(r, "stats")["total_net_repl_output_bytes"]]

    differential(nodes, scenario)
