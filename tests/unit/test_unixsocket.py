"""Unix domain sockets (`unixsocket`, `unixsocketperm`) against redis-server 7.0.15.

raxdb and redis-server each listen on their own socket under a temporary directory (and on TCP);
the same scenario runs on both and the replies are compared, with only what must differ put
aside: client ids, ages, fds, the socket paths and the memory figures CLIENT LIST shows for any
client (Redis's query and reply buffers).  Start-up and shut-down (the socket file's mode, a
stale file replaced, failures, `port 0` with a unix socket only, removal at exit) are compared
through the servers' logs and exit codes.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time

import pytest
import redis

from tests.integration.test_startup import run_both
from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import ServerProcess, start_raxdb, start_redis
from tests.unit.test_client_cmd import client_lines, fields

pytestmark = pytest.mark.oracle

MEMORY = ("qbuf-free", "rbs", "rbp", "tot-mem")  # buffer internals, for TCP clients as much as these


class Side:
    """One server of the pair and its socket path."""

    def __init__(self, srv: ServerProcess, path: str) -> None:
        self.srv, self.path = srv, path

    def stop(self) -> None:
        self.srv.stop()
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def unix(self) -> RawConnection:
        return RawConnection(self.path)

    def tcp(self) -> RawConnection:
        return RawConnection(self.srv.port)

    def norm(self, text: bytes | str) -> str:
        text = text.decode() if isinstance(text, bytes) else text
        return text.replace(self.path, "<sock>")


def _socket_dir() -> str:
    return tempfile.mkdtemp(prefix="rx-ux-", dir="/tmp")  # short: a socket path has 107 bytes at most


def _start(start, *extra: str) -> Side:  # type: ignore[no-untyped-def]
    path = os.path.join(_socket_dir(), "s.sock")
    return Side(start("--unixsocket", path, "--unixsocketperm", "700", "--enable-debug-command", "local", *extra),
                path)


@pytest.fixture(scope="module")
def pair():
    sides = (_start(start_raxdb), _start(start_redis))
    yield sides
    for side in sides:
        side.stop()


def both(pair, *args: str) -> tuple[str, str]:
    """One command over each side's unix socket, the replies with the paths put aside."""
    out = []
    for side in pair:
        c = side.unix()
        out.append(side.norm(c.call(*args)))
        c.close()
    return out[0], out[1]


def test_socket_file_mode_and_config(pair):
    for side in pair:
        mode = os.stat(side.path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o700, oct(mode)
    ours, theirs = ({k.decode(): side.norm(v) for k, v in zip(got[::2], got[1::2], strict=True)}
                    for side in pair for got in [parse(side.unix().call("CONFIG", "GET", "unixsocket*"))])
    assert ours == theirs == {"unixsocket": "<sock>", "unixsocketperm": "700"}  # matches' order differs
    for args in (("CONFIG", "GET", "unixsocket"), ("CONFIG", "SET", "unixsocket", "/tmp/other.sock"),
                 ("CONFIG", "SET", "unixsocketperm", "777"), ("CONFIG", "GET", "unixsocketperm")):
        ours, theirs = both(pair, *args)
        assert ours == theirs, args
    assert "<sock>" in both(pair, "CONFIG", "GET", "unixsocket")[0]


def _normalised(side: Side, line: bytes, name_of: dict[str, str]) -> dict[str, str]:
    f = fields(line)
    f["id"] = name_of.get(f["id"], "?")
    for key in ("age", "fd", *MEMORY):
        f[key] = "-"
    f["addr"], f["laddr"] = side.norm(f["addr"]), side.norm(f["laddr"])
    if f["addr"].startswith("127.0.0.1:"):
        f["addr"] = "127.0.0.1:<port>"
        f["laddr"] = "127.0.0.1:<port>"
    return f


def _scenario(side: Side) -> dict[str, dict[str, str] | list[dict[str, str]]]:
    """A unix client in MULTI, one blocked, one TCP, and the lister: CLIENT LIST and INFO as the
    lister sees them, by client name."""
    lister, multi, blocked, tcp = side.unix(), side.unix(), side.unix(), side.tcp()
    name_of = {}
    for conn, name in ((lister, "lister"), (multi, "multi"), (blocked, "blocked"), (tcp, "tcp")):
        assert conn.call("CLIENT", "SETNAME", name) == b"+OK\r\n"
        name_of[str(parse(conn.call("CLIENT", "ID")))] = name
    multi.call("MULTI")
    blocked.send(encode_command(["BLPOP", "nolist", "0"]))
    deadline = time.monotonic() + 10  # blocked, and earlier tests' connections gone
    while (b"blocked_clients:1\r\n" not in lister.call("INFO", "clients")
           or len(client_lines(lister.call("CLIENT", "LIST"))) != 4):
        assert time.monotonic() < deadline
    got: dict[str, dict[str, str] | list[dict[str, str]]] = {}
    got["info"] = _normalised(side, client_lines(lister.call("CLIENT", "INFO"))[0], name_of)
    listed = [_normalised(side, line, name_of) for line in client_lines(lister.call("CLIENT", "LIST"))]
    got["list"] = sorted(listed, key=lambda f: f["name"])
    for conn in (lister, multi, blocked, tcp):
        conn.close()
    return got


def test_client_list_and_info_fields_match_redis(pair):
    ours, theirs = (_scenario(side) for side in pair)
    assert ours == theirs
    info = ours["info"]
    assert isinstance(info, dict) and info["addr"] == info["laddr"] == "<sock>:0" and info["flags"] == "U"
    flags = {f["name"]: f["flags"] for f in ours["list"]}  # type: ignore[union-attr]
    assert flags == {"blocked": "bU", "lister": "U", "multi": "xU", "tcp": "N"}


def _alive(conn: RawConnection) -> bool:
    try:
        return conn.call("PING") == b"+PONG\r\n"
    except (ConnectionError, OSError):
        return False


def _wait_unix_clients(side: Side, conn: RawConnection, n: int) -> None:
    """Connections closed by earlier tests may still be listed for a moment: wait them out."""
    deadline = time.monotonic() + 10
    while sum(f["flags"].endswith("U") for f in map(fields, client_lines(conn.call("CLIENT", "LIST")))) != n:
        assert time.monotonic() < deadline


@pytest.mark.parametrize("args", [["ADDR", "<sock>:0", "SKIPME", "yes"], ["LADDR", "<sock>:0", "SKIPME", "no"],
                                  ["<sock>:0"]], ids=["addr", "laddr", "old form"])
def test_client_kill_by_unix_address(pair, args):
    """The filters kill every unix client (the TCP killer is spared: its laddr differs); the old
    form kills the first client with that address."""
    seen = []
    for side in pair:
        victims = [side.unix() for _ in range(2)]
        killer = side.tcp()
        _wait_unix_clients(side, killer, 2)
        reply = killer.call("CLIENT", "KILL", *[a.replace("<sock>", side.path) for a in args])
        seen.append((reply, sum(not _alive(v) for v in victims)))
        for conn in (*victims, killer):
            conn.close()
    assert seen[0] == seen[1]
    assert seen[0] == ((b"+OK\r\n", 2) if len(args) == 1 else (b":2\r\n", 2))


def test_monitor_slowlog_and_acl_log_name_the_socket(pair):
    seen = []
    for side in pair:
        mon, cmd = side.tcp(), side.unix()
        assert mon.call("MONITOR") == b"+OK\r\n"
        cmd.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        cmd.call("SLOWLOG", "RESET")
        cmd.call("CLIENT", "SETNAME", "slow")
        cmd.call("SET", "k", "v")
        line = mon.read_frame()
        while b'"SET"' not in line:
            line = mon.read_frame()
        monitor = side.norm(line).split(" ", 1)[1]  # the time put aside
        slow = [parse(cmd.call("SLOWLOG", "GET", "100"))]
        slow_entry = next(e for e in slow[0] if e[3][0] == b"SET")
        cmd.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
        cmd.call("ACL", "LOG", "RESET")
        assert cmd.call("AUTH", "nouser", "nopass").startswith(b"-WRONGPASS")
        entry = parse(cmd.call("ACL", "LOG", "1"))[0]
        info = dict(zip(entry[::2], entry[1::2], strict=True))
        client_info = _normalised(side, info[b"client-info"], {})
        seen.append((monitor, side.norm(slow_entry[4]), slow_entry[5], client_info))
        mon.close()
        cmd.close()
    assert seen[0] == seen[1]
    assert seen[0][0] == '[0 unix:<sock>] "SET" "k" "v"\r\n'
    assert seen[0][1] == "<sock>:0" and seen[0][3]["flags"] == "U"


def test_debug_command_local_allows_unix_clients(pair):
    """enable-debug-command local: a unix socket client is local (islocalClient)."""
    ours, theirs = both(pair, "DEBUG", "SLEEP", "0")
    assert ours == theirs == "+OK\r\n"


def test_protected_mode_spares_unix_clients_only(pair):
    """Protected mode (on, no password): a TCP client from 127.0.0.2 is not local (Redis compares
    the address with 127.0.0.1 and ::1) and gets the same DENIED text; a unix client is local."""
    seen = []
    for side in pair:
        try:
            sock = socket.create_connection(("127.0.0.1", side.srv.port), timeout=10,
                                            source_address=("127.0.0.2", 0))
        except OSError:
            pytest.skip("no 127.0.0.2 source address here")
        denied = b""  # sent on accept, before any command (one sent unread would make the close a reset)
        while chunk := sock.recv(4096):
            denied += chunk
        sock.close()
        seen.append((denied, side.unix().call("PING")))
    assert seen[0] == seen[1]
    assert seen[0][0].startswith(b"-DENIED Redis is running in protected mode") and seen[0][1] == b"+PONG\r\n"


def test_replica_on_unix_socket_shows_its_ip_as_redis_does(pair):
    seen = []
    for side in pair:
        replica = side.unix()
        assert replica.call("REPLCONF", "listening-port", "4321") == b"+OK\r\n"
        replica.send(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
        assert replica.read_frame().startswith(b"+FULLRESYNC")
        info = side.tcp()
        deadline = time.monotonic() + 10
        while b"slave0:" not in (text := info.call("INFO", "replication")):
            assert time.monotonic() < deadline
        line = next(x for x in parse(text).decode().splitlines() if x.startswith("slave0:"))
        seen.append(line.split(",")[:2])
        replica.close()
        info.close()
    assert seen[0] == seen[1] == ["slave0:ip=/unixsocket", "port=4321"]


def test_clients_over_the_socket(pair):
    for side in pair:
        cli = subprocess.run(["redis-cli", "-s", side.path, "SET", "cli", "x"], capture_output=True, text=True,
                             timeout=30)
        assert cli.stdout == "OK\n"
        r = redis.Redis(unix_socket_path=side.path, protocol=3)
        assert r.get("cli") == b"x"
        big = bytes(range(256)) * 4096  # 1 MB: read in pieces, straight into its own buffer
        assert r.set("big", big) and r.get("big") == big
        p = r.pubsub()
        p.subscribe("ch")
        assert p.get_message(timeout=10)["type"] == "subscribe"
        assert r.publish("ch", "hi") == 1
        msg = p.get_message(timeout=10)
        assert msg is not None and msg["data"] == b"hi"
        p.close()
        r.close()


def test_port_0_with_a_unix_socket_only():
    """A stale file at the path is replaced; the readiness line names the path, a connection is
    logged at verbose level; shutdown removes the file, as redis-server does, with the same log
    lines."""
    logs = []
    for start in (start_raxdb, start_redis):
        path = os.path.join(_socket_dir(), "s.sock")
        with open(path, "w") as stale:
            stale.write("left by a crash")
        srv = start("--unixsocket", path, "--port", "0", "--loglevel", "verbose")
        try:
            assert stat.S_ISSOCK(os.stat(path).st_mode)
            RawConnection(path).send(encode_command(["SHUTDOWN", "NOSAVE"]))
            srv.proc.wait(30)
            assert srv.proc.returncode == 0
            assert srv.wait_log("bye bye")
            assert not os.path.exists(path)
        finally:
            srv.stop()
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        wanted = ("ready to accept", "Ready to accept", "Accepted", "unix socket", "bye bye")
        logs.append([line.split(" ", 5)[5].rstrip("\n").replace(path, "<sock>") for line in srv.log
                     if any(w in line for w in wanted)])
    assert logs[0] == logs[1] == ["* The server is now ready to accept connections at <sock>",
                                  "- Accepted connection to <sock>", "* Removing the unix socket file.", "# Redis is now ready to exit, bye bye..."]


@pytest.mark.parametrize("case", ["missing dir", "too long", "nowhere", "bad perm", "perm range"])
def test_start_up_failures_match_redis(case):
    cwd = _socket_dir()
    args = {
        "missing dir": ["--port", "0", "--unixsocket", os.path.join(cwd, "no", "such", "dir.sock")],
        "too long": ["--port", "0", "--unixsocket", os.path.join(cwd, "x" * 120)],
        "nowhere": ["--port", "0"],
        "bad perm": ["--port", "0", "--unixsocket", os.path.join(cwd, "s"), "--unixsocketperm", "0o7"],
        "perm range": ["--port", "0", "--unixsocket", os.path.join(cwd, "s"), "--unixsocketperm", "1000"],
    }[case]
    ours, theirs = run_both(args, cwd)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr
    if not theirs.stderr:
        ours_last = ours.stdout.splitlines()[-1].split(" ", 5)[5]
        theirs_last = theirs.stdout.splitlines()[-1].split(" ", 5)[5]
        assert ours_last == theirs_last
        assert "Ready to accept" not in ours.stdout
    shutil.rmtree(cwd, ignore_errors=True)


def test_accepted_connections_are_logged_at_verbose():
    """acceptTcpHandler's and acceptUnixHandler's verbose lines, for a TCP and a unix client."""
    logs = []
    for start in (start_raxdb, start_redis):
        side = _start(start, "--loglevel", "verbose")
        try:
            for conn in (side.tcp(), side.unix()):
                assert conn.call("PING") == b"+PONG\r\n"
                conn.close()
            assert side.srv.wait_log("Accepted connection to")
            lines = [side.norm(line.split(" ", 5)[5].rstrip("\n")) for line in side.srv.log if "Accepted" in line]
            logs.append([line.rsplit(":", 1)[0] + ":<port>" if "127.0.0.1" in line else line for line in lines])
        finally:
            side.stop()
    assert logs[0] == logs[1] == ["- Accepted 127.0.0.1:<port>", "- Accepted connection to <sock>"]
