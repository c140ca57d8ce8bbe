"""TLS for the connections a server opens (issue #35): replication over TLS in both roles with
`tls-replication yes`, and MIGRATE over TLS with `tls-cluster yes`.

- a raxdb replica of a TLS redis-server master, beside a redis-server replica of the same master
  (the oracle): the dataset, the port the replicas announce, full and partial resyncs;
- a redis-server replica of a TLS raxdb master, the same scenario run with a redis-server
  master: what the replica and the master report is compared;
- a replica whose client certificate the master's CA did not sign never gets its link up;
- MIGRATE from raxdb and from redis-server, with tls-cluster yes, to a TLS port and to a plain one.

Certificates are made by the test (tests/support/tlscerts.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests.integration.test_repl_replica import FAST, client, info, wait_for
from tests.support.servers import ServerProcess, free_port, start_raxdb, start_redis
from tests.support.tlscerts import HAVE_TOOLS, Certs, make_certs, tls_args

pytestmark = [pytest.mark.oracle, pytest.mark.skipif(not HAVE_TOOLS, reason="needs the openssl command and redis-cli")]

Start = Callable[..., ServerProcess]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tlsrepl"))


class Tls:
    """A server started with a TLS port (`tls_port`) beside its plain one (`c`, a plain client
    handing back replies as they come)."""

    def __init__(self, start: Start, certs: Certs, *extra: str) -> None:
        self.tls_port = free_port()
        self.proc = start(*tls_args(certs, self.tls_port, *FAST, *extra))
        self.c = client(self.proc.port)


def replica_args(certs: Certs, cert: str = "client") -> list[str]:
    """tls-replication yes, presenting the client certificate `cert`."""
    return ["--tls-replication", "yes", "--tls-client-cert-file", certs[f"{cert}_crt"], "--tls-client-key-file",
            certs[f"{cert}_key"]]


def fill(m: redis.Redis, prefix: str, n: int = 200) -> None:
    p = m.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:{i}", i)
    p.rpush(f"{prefix}:list", *range(50))
    p.hset(f"{prefix}:hash", mapping={"a": 1, "b": 2})
    p.set(f"{prefix}:ttl", "v", ex=5000)
    p.set(f"{prefix}:big", "x" * 100_000)
    p.execute()


def stat(c: redis.Redis, field: str) -> int:
    return int(info(c, "stats")[field])


def synced(master: redis.Redis, replica: redis.Redis) -> bool:
    r = info(replica)
    return (r.get("master_link_status") == "up"
            and int(r["slave_repl_offset"]) >= int(info(master)["master_repl_offset"]))


def slave_lines(master: redis.Redis) -> list[str]:
    return [v for k, v in info(master).items() if re.fullmatch(r"slave\d+", k)]


def resync_partially(master: redis.Redis, replicas: list[redis.Redis]) -> int:
    """Each replica's link is dropped (CLIENT KILL TYPE master) and comes back by PSYNC, a write
    made meanwhile; how many partial resyncs the master counted."""
    before = stat(master, "sync_partial_ok")
    for r in replicas:
        r.client_kill_filter(_type="master")
    master.set("after-kill", "1")
    wait_for(lambda: stat(master, "sync_partial_ok") >= before + len(replicas), what="partial resyncs")
    for r in replicas:
        wait_for(lambda r=r: synced(master, r), what="replica caught up")
    return stat(master, "sync_partial_ok") - before


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_raxdb_replica_of_a_tls_redis_master(certs: Certs, diskless: str) -> None:
    master = Tls(start_redis, certs, "--repl-diskless-sync", diskless)
    replicas = [Tls(start, certs, *replica_args(certs)) for start in (start_raxdb, start_redis)]
    try:
        fill(master.c, "pre")
        for r in replicas:
            r.c.replicaof("127.0.0.1", master.tls_port)
        for r in replicas:
            wait_for(lambda r=r: synced(master.c, r.c), what="TLS full sync")
        fill(master.c, "stream")  # the stream, over TLS
        master.c.incr("n")
        for r in replicas:
            wait_for(lambda r=r: synced(master.c, r.c), what="stream applied")
        digests = [x.execute_command("DEBUG", "DIGEST") for x in (master.c, *(r.c for r in replicas))]
        assert digests[0] == digests[1] == digests[2]
        assert master.c.get("stream:big") == replicas[0].c.get("stream:big")
        # each replica announced its TLS port (syncWithMaster's choice with tls-replication yes)
        lines = slave_lines(master.c)
        assert sorted(int(re.search(r"port=(\d+)", line).group(1)) for line in lines) == sorted(  # type: ignore[union-attr]
            r.tls_port for r in replicas)
        assert all(",state=online," in line for line in lines)
        # the replicas' own view of the link, ports aside
        views = [{k: v for k, v in info(r.c).items() if k in ("role", "master_host", "master_link_status",
                                                              "master_sync_in_progress")} for r in replicas]
        assert views[0] == views[1]
        assert all(info(r.c)["master_port"] == str(master.tls_port) for r in replicas)
        assert resync_partially(master.c, [r.c for r in replicas]) == 2
        assert replicas[0].c.execute_command("DEBUG", "DIGEST") == master.c.execute_command("DEBUG", "DIGEST")
    finally:
        for x in (*replicas, master):
            x.proc.stop()


def _redis_replica_of(start_master: Start, certs: Certs, diskless: str) -> list[Any]:
    master = Tls(start_master, certs, "--repl-diskless-sync", diskless)
    replica = Tls(start_redis, certs, *replica_args(certs))
    try:
        fill(master.c, "pre")
        replica.c.replicaof("127.0.0.1", master.tls_port)
        wait_for(lambda: synced(master.c, replica.c), what="TLS full sync")
        fill(master.c, "stream")
        wait_for(lambda: synced(master.c, replica.c), what="stream applied")
        same = replica.c.execute_command("DEBUG", "DIGEST") == master.c.execute_command("DEBUG", "DIGEST")
        # ports and offsets differ by server, lag (seconds since the last ACK) by the host's load
        line = re.sub(r"(port|offset|lag)=\d+", r"\1=N", slave_lines(master.c)[0])
        # the replica as the master lists it: a client of the TLS port
        listed = [dict(f.split("=", 1) for f in line.split()) for line in
                  master.c.execute_command("CLIENT", "LIST", "TYPE", "replica").decode().splitlines()]
        partial = resync_partially(master.c, [replica.c])
        same_after = replica.c.execute_command("DEBUG", "DIGEST") == master.c.execute_command("DEBUG", "DIGEST")
        return [same, line, [c["laddr"] == f"127.0.0.1:{master.tls_port}" for c in listed],
                stat(master.c, "sync_full"), partial, same_after, info(replica.c)["master_link_status"]]
    finally:
        replica.proc.stop()
        master.proc.stop()


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_redis_replica_of_a_tls_raxdb_master(certs: Certs, diskless: str) -> None:
    ours = _redis_replica_of(start_raxdb, certs, diskless)
    theirs = _redis_replica_of(start_redis, certs, diskless)
    assert ours == theirs
    assert ours[0] and ours[-1] == "up"


@pytest.mark.parametrize("start_replica", [start_raxdb, start_redis], ids=["raxdb", "redis"])
def test_replica_with_an_untrusted_certificate_never_links(certs: Certs, start_replica: Start) -> None:
    """The master (tls-auth-clients yes) refuses the certificate; under TLS 1.3 the replica learns
    it reading the reply to its PING, logs it as Redis does, and retries."""
    master = Tls(start_redis, certs)
    replica = Tls(start_replica, certs, *replica_args(certs, cert="stranger"))
    try:
        replica.c.replicaof("127.0.0.1", master.tls_port)
        # (Redis's OpenSSL puts its error code before the reason: "error:0A000418:SSL routines::...")
        assert replica.proc.wait_log("Failed to read response from the server: ")
        assert replica.proc.wait_log("SSL routines::tlsv1 alert unknown ca")
        assert replica.proc.wait_log("Master did not respond to command during SYNC handshake")
        # the replica tries again (replicationCron), failing the same way
        wait_for(lambda: sum("MASTER <-> REPLICA sync started" in line for line in replica.proc.log) >= 2,
                 what="a second attempt")
        assert info(replica.c)["master_link_status"] == "down"
        assert info(master.c)["connected_slaves"] == "0"
        assert replica.c.ping()
    finally:
        replica.proc.stop()
        master.proc.stop()


def test_migrate_with_tls_cluster(certs: Certs) -> None:
    """MIGRATE opens a TLS connection when tls-cluster is yes (migrateGetSocket's connCreateTLS):
    to the target's TLS port it works, to its plain port it fails with Redis's IOERR."""
    target = Tls(start_redis, certs)
    try:
        def scenario(start: Start) -> list[Any]:
            source = Tls(start, certs, "--tls-cluster", "yes")
            try:
                out: list[Any] = []
                for i, port in enumerate((target.tls_port, target.proc.port, target.tls_port)):
                    source.c.set(f"k{i}", "v" * 1000)
                    try:
                        out.append(source.c.migrate("127.0.0.1", port, f"k{i}", 0, 2000))
                    except redis.ResponseError as exc:
                        out.append(str(exc))
                    out.append((source.c.exists(f"k{i}"), target.c.exists(f"k{i}")))
                    target.c.delete(f"k{i}")
                out.append(info(source.c, "stats")["migrate_cached_sockets"])
                return out
            finally:
                source.proc.stop()

        ours, theirs = scenario(start_raxdb), scenario(start_redis)
        assert ours == theirs
        assert ours[0] == b"OK" and ours[1] == (0, 1)
    finally:
        target.proc.stop()
