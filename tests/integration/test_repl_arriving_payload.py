"""A replica's diskless load parses the payload as it arrives, as Redis's does: each scenario runs
against a raxdb replica and a redis-server 7.0.15 replica (the oracle), which must behave alike.

- A replica stopped (SIGSTOP) while it loads stops reading its master's socket, so the master's
  transfer stalls and the master drops it after repl-timeout as a full-sync timeout.  A
  replica that read the whole payload before parsing it would have let the transfer finish.
- With an EOF-marked payload, the mark must follow the RDB: a master (a fake one here, speaking
  the handshake and sending a hand-made payload) that sends another mark gets "Replication
  stream EOF marker is broken" and no dataset; the right one loads.

Waits are on events (log lines, INFO fields), never on time."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import hiredis
import pytest
import redis

from tests.integration.test_repl_master import info, wait_for
from tests.support.servers import ServerProcess, start_raxdb, start_redis

STARTERS: dict[str, Callable[..., ServerProcess]] = {"raxdb": start_raxdb, "redis": start_redis}


@contextmanager
def running(srv: ServerProcess) -> Iterator[ServerProcess]:
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(STARTERS))
def test_a_stopped_loading_replica_stalls_the_transfer(name: str) -> None:
    with running(start_redis("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                             "--rdbcompression", "no")) as master:
        m = redis.Redis(port=master.port)
        # 80 MB: more than the sockets hold (loopback's receive buffer grows up to tcp_rmem's
        # maximum, 32 MB here: a 20 MB payload could all be in it before the load is stopped)
        m.execute_command("DEBUG", "POPULATE", 8000, "test", 10000)
        with running(STARTERS[name]("--repl-diskless-load", "swapdb", "--key-load-delay", "1000",
                                    "--loading-process-events-interval-bytes", "1024")) as rep:
            r = redis.Redis(port=rep.port)
            r.execute_command("REPLICAOF", "127.0.0.1", master.port)
            # some keys loaded: the transfer is under way and the load behind it
            wait_for(lambda: int(info(rep, "persistence").get("loading_loaded_bytes", "0")) > 0,
                     what="the load to start")
            m.config_set("repl-timeout", 2)
            with rep.stopped():
                assert master.wait_log("Disconnecting timedout replica (full sync)", 30)
                wait_for(lambda: info(master, "persistence")["rdb_bgsave_in_progress"] == "0",
                         what="the transfer's child to end")
                assert not master.wait_log("Disconnecting timedout replica (streaming sync)", 0)


# ---- a fake master sending a hand-made EOF-marked payload ----------------------------------------
EMPTY_RDB = b"REDIS0010\xff" + b"\0" * 8  # no keys; a zero checksum is not checked
MARK = b"m" * 40


class FakeMaster:
    """Answers a replica's handshake and, to PSYNC, a full resync whose payload is EMPTY_RDB
    followed by `trailer` (the mark, or something else), then holds the connection."""

    def __init__(self, trailer: bytes) -> None:
        self.trailer = trailer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = hiredis.Reader()
        try:
            while data := conn.recv(4096):
                reader.feed(data)
                while (cmd := reader.gets()) is not False:
                    name = cmd[0].upper()
                    if name == b"PING":
                        conn.sendall(b"+PONG\r\n")
                    elif name == b"PSYNC":
                        conn.sendall(b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n$EOF:" + MARK + b"\r\n"
                                     + EMPTY_RDB + self.trailer)
                    else:
                        conn.sendall(b"+OK\r\n")
        except OSError:
            return

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("name", ["raxdb", pytest.param("redis", marks=pytest.mark.oracle)])
@pytest.mark.parametrize("trailer", [MARK, b"x" * 40])
def test_the_eof_mark_must_follow_the_rdb(name: str, trailer: bytes) -> None:
    fake = FakeMaster(trailer)
    try:
        with running(STARTERS[name]("--repl-diskless-load", "swapdb")) as rep:
            r = redis.Redis(port=rep.port)
            r.set("old", "1")
            r.execute_command("REPLICAOF", "127.0.0.1", fake.port)
            if trailer == MARK:
                assert rep.wait_log("MASTER <-> REPLICA sync: Finished with success", 30)
                assert r.dbsize() == 0
            else:
                assert rep.wait_log("Replication stream EOF marker is broken", 30)
                assert not rep.wait_log("Finished with success", 0)
                assert r.get("old") == b"1"  # swapdb: the old dataset stays
    finally:
        fake.close()
