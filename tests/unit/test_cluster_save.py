"""nodes.conf is saved once per event-loop pass (clusterDoBeforeSleep / clusterBeforeSleep), before
any reply; what a SIGKILL right after the reply leaves on disk is what redis-server 7.0 leaves.

In process: a Server with a Cluster on the test's running loop (its `call_soon`, as serve() sets
it) takes changes, and each test awaits one loop pass (a callback scheduled after the change) or
the reply's write, never a sleep.  Out of process: a raxdb and a redis-server with
cluster-enabled yes each get the same commands, are killed with SIGKILL as each reply arrives,
and restart from their own nodes.conf."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from raxdb.server.cluster import nodesconf
from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import free_port, start_raxdb, start_redis
from tests.support.transport import SinkTransport

pytestmark = pytest.mark.oracle


class _Transport(SinkTransport):
    """A client's transport that records, at each write, the slots nodes.conf gives myself."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writes: list[tuple[bytes, str]] = []

    def write(self, data: bytes) -> None:
        self.writes.append((data, _my_line(self.path)))


def _my_line(path: Path) -> str:
    return next(line for line in path.read_text().splitlines() if "myself" in line)


def _slots(line: str) -> list[str]:
    return line.split()[8:]


async def _loop_pass() -> None:
    """One pass of the running loop: the callbacks scheduled before this one have run."""
    done = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(done.set_result, None)
    await done


def _server(tmp_path: Path, saves: list[bool], monkeypatch: pytest.MonkeyPatch):
    """A Server in cluster mode on the running loop, its nodes.conf in tmp_path; `saves` gets
    each save's fsync flag (the one at start-up included)."""
    import raxdb.server.commands  # noqa: F401
    from raxdb.server.cluster.manager import Cluster
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server

    real = nodesconf.save

    def counted(st, path, fsync=True):  # noqa: ANN001
        saves.append(fsync)
        return real(st, path, fsync)

    monkeypatch.setattr(nodesconf, "save", counted)
    config = Config()
    config.values["cluster-enabled"] = "yes"
    config.values["cluster-config-file"] = str(tmp_path / "nodes.conf")
    srv = Server(config)
    loop = asyncio.get_running_loop()
    srv.loop, srv.call_soon = loop, loop.call_soon
    srv.cluster = Cluster(srv)
    return srv, srv.cluster


async def test_changes_saved_once_at_the_end_of_the_loop_pass(tmp_path, monkeypatch):
    """Two changes in one pass: nothing written until the pass ends, then one save, not fsynced;
    a change that asks for an fsync gets one."""
    saves: list[bool] = []
    srv, cl = _server(tmp_path, saves, monkeypatch)
    path = tmp_path / "nodes.conf"
    try:
        assert saves == [True]  # start-up's save, at once (clusterInit)
        cl.st.add_slot(cl.st.myself, 7)
        cl.changed()
        cl.st.add_slot(cl.st.myself, 8)
        cl.changed()
        assert _slots(_my_line(path)) == [] and cl.todo
        await _loop_pass()
        assert _slots(_my_line(path)) == ["7-8"]
        assert saves == [True, False] and cl.todo == 0
        cl.st.current_epoch += 1
        cl.changed(state=False, fsync=True)
        await _loop_pass()
        assert saves == [True, False, True]
        assert path.read_text().splitlines()[-1] == "vars currentEpoch 1 lastVoteEpoch 0"
        await _loop_pass()
        assert len(saves) == 3  # nothing left to do: no save
        from raxdb.server.cluster.conflock import ConfigLock

        with pytest.raises(SystemExit):  # the saves in place and the replacing one kept the lock
            ConfigLock(str(path)).acquire()
    finally:
        cl.lock.release()


def test_save_in_place_and_replacing(tmp_path):
    """A save in place over a longer file leaves exactly the new text (the padding truncated); an
    fsynced save replaces the file (a new inode, which the lock follows)."""
    from raxdb.server.cluster.state import MASTER, MYSELF, ClusterState, Node

    path = tmp_path / "nodes.conf"
    st = ClusterState(Node(None, MYSELF | MASTER))
    for _ in range(5):
        st.add_node(Node(None, MASTER))
    assert nodesconf.save(st, str(path), fsync=False) is False
    long_inode = path.stat().st_ino
    st.nodes = {st.myself.name: st.myself}
    assert nodesconf.save(st, str(path), fsync=False) is False
    assert path.read_text() == nodesconf.render(st) and path.stat().st_ino == long_inode
    st.current_epoch = 3
    assert nodesconf.save(st, str(path), fsync=True) is True
    assert path.read_text() == nodesconf.render(st) and path.stat().st_ino != long_inode


async def test_reply_written_after_the_save(tmp_path, monkeypatch):
    """CLUSTER ADDSLOTS then CLUSTER SETSLOT ... NODE, in one read: the replies are written once
    nodes.conf holds both changes (the flush runs the cluster's work first, as Redis's beforeSleep
    runs clusterBeforeSleep before it writes replies), with a single save."""
    from raxdb.server.net.client import Client

    saves: list[bool] = []
    srv, cl = _server(tmp_path, saves, monkeypatch)
    path = tmp_path / "nodes.conf"
    try:
        transport = _Transport(path)
        c = Client(srv)
        c.connection_made(transport)  # type: ignore[arg-type]
        c.data_received(encode_command(("CLUSTER", "ADDSLOTSRANGE", "0", "9"))
                        + encode_command(("CLUSTER", "SETSLOT", "20", "NODE", cl.st.myself.name)))
        assert transport.writes == [] and _slots(_my_line(path)) == []
        await _loop_pass()
        assert transport.writes == [(b"+OK\r\n+OK\r\n", _my_line(path))]
        assert _slots(transport.writes[0][1]) == ["0-9", "20"]
        assert saves == [True, False]
        # QUIT after a change in the same read: the connection's last flush saves first too
        c.data_received(encode_command(("CLUSTER", "DELSLOTS", "20")) + encode_command(("QUIT",)))
        assert transport.writes[-1] == (b"+OK\r\n+OK\r\n", _my_line(path))
        assert _slots(transport.writes[-1][1]) == ["0-9"]
    finally:
        cl.lock.release()


def _node_args() -> tuple[str, ...]:
    return ("--cluster-enabled", "yes", "--cluster-port", str(free_port()), "--cluster-node-timeout", "1000")


def _kept(start, cwd: Path, steps: list[tuple[str, ...]]) -> list[tuple[list[str], str]]:
    """Each step sent to a fresh start of the node on `cwd` (the first also makes its slots
    0-99), the node killed with SIGKILL as the reply arrives; what each restart finds: myself's
    flags, epoch and slots from CLUSTER NODES, and nodes.conf's vars line."""
    out = []
    for i, step in enumerate([("CLUSTER", "ADDSLOTSRANGE", "0", "99"), *steps]):
        srv = start(*_node_args(), cwd=str(cwd))
        try:
            conn = RawConnection(srv.port)
            if i:  # the state the last kill left, as this start-up loaded it
                line = next(x for x in parse(conn.call("CLUSTER", "NODES")).decode().splitlines() if "myself" in x)
                fields = line.split()
                out.append(([fields[2], fields[6], *fields[8:]], (cwd / "nodes.conf").read_text().splitlines()[-1]))
            assert conn.call(*step).startswith((b"+", b":"))
            srv.proc.kill()
            srv.proc.wait(30)
            conn.close()
        finally:
            srv.stop()
    return out


def test_sigkill_after_the_reply_keeps_what_redis_keeps(tmp_path):
    """A SIGKILL as the reply arrives: the restarted node has the change (slots added and deleted,
    a config epoch bumped, a hard reset), as redis-server does."""
    steps = [("CLUSTER", "DELSLOTSRANGE", "50", "59"), ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "ADDSLOTS", "200"),
             ("CLUSTER", "DELSLOTS", "200"), ("CLUSTER", "FLUSHSLOTS"), ("CLUSTER", "ADDSLOTS", "7"),
             ("CLUSTER", "RESET", "HARD"), ("PING",)]
    results = {}
    for start in (start_raxdb, start_redis):
        cwd = tmp_path / start.__name__
        cwd.mkdir()
        results[start.__name__] = _kept(start, cwd, steps)
    assert results["start_raxdb"] == results["start_redis"]
    ours = results["start_raxdb"]
    assert ours[0] == (["myself,master", "0", "0-99"], "vars currentEpoch 0 lastVoteEpoch 0")
    assert ours[2] == (["myself,master", "1", "0-49", "60-99"], "vars currentEpoch 1 lastVoteEpoch 0")
    assert ours[-1] == (["myself,master", "0"], "vars currentEpoch 0 lastVoteEpoch 0")
