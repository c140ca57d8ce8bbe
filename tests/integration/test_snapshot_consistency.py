"""A snapshot is the dataset at the moment it began, whatever writes it (issue #53): BGSAVE, a
full resync (disk and diskless) and an AOF rewrite's RDB preamble, against redis-server 7.0.15.

Each test builds the same dataset of every type and encoding (tests/support/snapshots.py) on
raxdb, takes its whole state (DEBUG DIGEST, every key's DIGEST-VALUE and deadline, the streams'
groups and PELs, the libraries), starts the snapshot slowed by rdb-key-save-delay, and while it
runs sends a seeded mix of writes (in place, conversions, deletes, renames, expiries, a flushed
and swapped database, a replaced library, ...).  Then:

- the file the snapshot wrote, loaded by a fresh raxdb and by a fresh redis-server, gives the
  state taken when it began, in both; both load it to the same encodings;
- the same dataset built in redis-server has the same DEBUG DIGEST, and after the same writes
  the same state (DEBUG DIGEST is Redis's on every type here);
- a replica (redis-server or raxdb) that synced meanwhile, disk-based or diskless, ends with the
  master's dataset, and the RDB it received (a replica loading from disk keeps it as its
  dump.rdb) is the state at the fork;
- after the rewrite, the AOF's base is the state at the fork and a restart from the whole AOF
  directory (in raxdb and in redis-server) gives the state after the writes.

Replayed commands (a replica's stream, an AOF) lose a stream group's entries-read in Redis 7.0
as in raxdb (XREADGROUP goes out as XCLAIM ... LASTID), and set seen-times from the replaying
server's clock: those comparisons leave them out (snapshots.without_times).

The first writes go in the same packet as the command that starts the snapshot, so they reach
the server right after the fork; a run is only counted when INFO, read after them, still shows
the snapshot running (else it is run again with a longer delay).  Ends are awaited on log lines
or INFO, never by sleeping, and nothing is timed.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.support import snapshots as S
from tests.support.diff import RawConnection, parse
from tests.support.servers import ServerProcess, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

DELAYS = (20, 200, 2000)  # rdb-key-save-delay (us a key) of the first run, and of the reruns
SEED = 53
FAST = ("--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1")


@contextmanager
def running(srv: ServerProcess) -> Iterator[tuple[ServerProcess, RawConnection]]:
    conn = RawConnection(srv.port)
    try:
        yield srv, conn
    finally:
        conn.close()
        srv.stop()


def wait_for(cond: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def assert_same(got: dict, want: dict, what: str, got_conn: RawConnection | None = None,
                want_conn: RawConnection | None = None) -> None:
    assert not (diff := S.same(got, want, got_conn, want_conn)), f"{what}: {diff}"


def assert_loads_as(files: dict[str, str], want: dict, *args: str, loaded_text: str = "DB loaded from",
                    replayed: bool = False) -> None:
    """`files` loaded by a fresh raxdb and a fresh redis-server: each gives `want`, and both give
    the same encodings.  `replayed`: `want` is compared as S.without_times(replayed=True) says."""
    loaded = {start.__name__: S.loaded_state(start, files, *args, loaded_text=loaded_text, want=want)
              for start in (start_raxdb, start_redis)}
    for name, st in loaded.items():
        if replayed:
            st, want = S.without_times(st, replayed=True), S.without_times(want, replayed=True)
        assert_same(st, want, f"loaded by {name}")
    assert loaded["start_raxdb"]["encodings"] == loaded["start_redis"]["encodings"]


def snapshot_while_writing(srv: ServerProcess, conn: RawConnection, start: list[str], started: bytes,
                           busy: bytes, done: str) -> tuple[dict, S.During]:
    """Build the dataset, take its state, then `start` the snapshot with the writes behind it
    until `done` is logged; rerun with a longer rdb-key-save-delay while the snapshot had
    already ended when the first writes' INFO was read.  (state at the start, the writes)."""
    for delay in DELAYS:
        S.build(conn)
        at_start = S.state(conn, values=True)
        assert conn.call("CONFIG", "SET", "rdb-key-save-delay", str(delay)) == b"+OK\r\n"
        n = S.count_log(srv, done)
        during = S.During(conn, start, S.writes(SEED), busy)
        assert during.start_reply == started
        S.wait_count(srv, done, n + 1)
        conn.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        if during.inside:
            return at_start, during
    pytest.fail(f"the snapshot always ended before the first writes reached the server (delays {DELAYS})")


def test_bgsave_writes_the_dataset_of_its_fork(tmp_path):
    d = tmp_path / "ours"
    d.mkdir()
    with running(start_raxdb(cwd=str(d))) as (srv, conn), running(start_redis()) as (_, theirs):
        at_fork, during = snapshot_while_writing(srv, conn, ["BGSAVE"], b"+Background saving started\r\n",
                                                 b"rdb_bgsave_in_progress:1", "Background saving terminated with success")
        assert b"rdb_last_bgsave_status:ok" in conn.call("INFO", "persistence")
        # the same data gives the same digest in redis-server, before the writes and after them
        S.build(theirs)
        assert parse(theirs.call("DEBUG", "DIGEST")) == at_fork["digest"]
        S.replay(theirs, during.applied)
        S.expire_touched([conn, theirs], during.applied)
        assert parse(conn.call("DEBUG", "DIGEST")) != at_fork["digest"]
        assert_same(S.without_times(S.state(theirs)), S.without_times(S.state(conn)),
                    "after the writes, redis-server against raxdb", theirs, conn)
    assert_loads_as({"dump.rdb": str(d / "dump.rdb")}, at_fork)


def _sync_while_writing(master: ServerProcess, m: RawConnection, start_replica: Callable[..., ServerProcess],
                        delay: int) -> tuple[dict, dict, S.During, ServerProcess]:
    """A replica joins the master (which holds the dataset) while the writes go on: (the
    master's state at the fork, after the writes, the writes, the replica, still running)."""
    S.build(m)
    at_fork = S.state(m, values=True)
    m.call("CONFIG", "SET", "rdb-key-save-delay", str(delay))
    forks = int(S.info(m, "stats")["total_forks"])
    rep = start_replica("--replicaof", "127.0.0.1", str(master.port))
    try:
        # nothing is written until the snapshot's fork: it saw `at_fork` (whether it still runs
        # when the writes arrive, During's INFO says)
        wait_for(lambda: int(S.info(m, "stats")["total_forks"]) > forks, "the full resync's fork")
        during = S.During(m, None, S.writes(SEED), b"rdb_bgsave_in_progress:1")
        m.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        r = RawConnection(rep.port)

        def caught_up() -> bool:
            mi, ri = S.info(m, "replication"), S.info(r, "replication")
            return ri.get("master_link_status") == "up" and mi["master_repl_offset"] == ri.get("slave_repl_offset")

        wait_for(caught_up, "the replica to catch up")
        S.expire_touched([m], during.applied)  # the master's DELs reach the replica
        wait_for(caught_up, "the replica to catch up")
        r.close()
        return at_fork, S.state(m), during, rep
    except BaseException:
        rep.stop()
        raise


@pytest.mark.parametrize("replica", [start_redis, start_raxdb], ids=["redis-replica", "raxdb-replica"])
@pytest.mark.parametrize("diskless", ["no", "yes"])
def test_full_resync_while_writes_go_on(diskless: str, replica: Callable[..., ServerProcess]):
    with running(start_raxdb(*FAST, "--repl-diskless-sync", diskless)) as (master, m):
        for delay in DELAYS:
            at_fork, after, during, rep = _sync_while_writing(master, m, replica, delay)
            if during.inside:
                break
            rep.stop()
        else:
            pytest.fail("the full resync's snapshot always ended before the first writes")
        target = "replicas sockets" if diskless == "yes" else "disk"
        assert master.wait_log(f"Starting BGSAVE for SYNC with target: {target}", 5)
        with running(rep) as (_, r):
            assert_same(S.without_times(S.state(r), replayed=True), S.without_times(after, replayed=True),
                        "the replica against its master", r, m)
        assert after["digest"] != at_fork["digest"]
    # a replica loading from disk (repl-diskless-load disabled) keeps what it received as its dump file
    assert_loads_as({"dump.rdb": os.path.join(rep.cwd, "dump.rdb")}, at_fork)


def test_aof_rewrite_preamble_is_the_dataset_of_its_fork(tmp_path):
    d = tmp_path / "ours"
    d.mkdir()
    with running(start_raxdb("--appendonly", "yes", "--aof-use-rdb-preamble", "yes", cwd=str(d))) as (srv, conn):
        at_fork, during = snapshot_while_writing(
            srv, conn, ["BGREWRITEAOF"], b"+Background append only file rewriting started\r\n",
            b"aof_rewrite_in_progress:1", "Background AOF rewrite finished successfully")
        S.expire_touched([conn], during.applied)
        after = S.state(conn, values=True)  # the server stops before the AOF is loaded
        assert after["digest"] != at_fork["digest"]
        with open(d / "appendonlydir" / "appendonly.aof.manifest") as f:
            manifest = f.read()
        base = re.search(r"file (\S+) seq \d+ type b", manifest).group(1)
        assert base.endswith(".base.rdb"), manifest
    # the base alone is the fork's dataset; with the increments, the dataset after the writes
    assert_loads_as({"dump.rdb": str(d / "appendonlydir" / base)}, at_fork)
    assert_loads_as({"appendonlydir": str(d / "appendonlydir")}, after, "--appendonly", "yes",
                    loaded_text="DB loaded from append only file", replayed=True)
