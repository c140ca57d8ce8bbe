"""CLIENT LIST's obl / oll / omem under a backlog (server/conn/replylist.py), against redis-server
7.0.15: a client pipelines GETs and reads nothing, and another connection reads its line.

What each server holds depends on what the kernel took, which differs between the two, so each
server's figures are compared with Redis's layout of its own parts: the replies it made (the
client's whole pipeline, one read and one batch on both) laid out as Redis lays them (reply buffer,
then list nodes: replylist.Layout), less what the kernel holds of them, read from /proc/net/tcp
(the server socket's send queue and the client socket's receive queue) once nothing moves.  A
figure that follows from that alone must be the one printed, on both servers, in RESP2 and RESP3.

And client-output-buffer-limit: a client is dropped at the same reply as Redis drops it (the
commands it pipelined after are not run) and kept where Redis keeps it.
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from raxdb.protocol.reply import PIECE_MIN
from raxdb.server.conn.replylist import Layout
from tests.support.diff import RawConnection, encode_command, frame_end
from tests.support.servers import ServerProcess, run_on_both

pytestmark = pytest.mark.oracle

_RESIZING_OFF = ("--enable-debug-command", "yes")


def _queues(port: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(local port, remote port) -> (tx_queue, rx_queue) of loopback TCP sockets."""
    out = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            local, remote = parts[1].split(":"), parts[2].split(":")
            tx, rx = (int(x, 16) for x in parts[4].split(":"))
            lport, rport = int(local[1], 16), int(remote[1], 16)
            if port in (lport, rport):
                out[(lport, rport)] = (tx, rx)
    return out


def _fields(obs: RawConnection, name: str) -> dict[str, str] | None:
    text = obs.call("CLIENT", "LIST").decode()
    for line in text.splitlines():
        if f" name={name} " in line:
            return dict(part.split("=", 1) for part in line.split(" "))
    return None


def _read_frames(s: socket.socket, count: int) -> None:
    buf = b""
    pos = 0
    while count:
        end = frame_end(buf, pos) if len(buf) > pos else None
        if end is None:
            buf += s.recv(1 << 16)
            continue
        pos = end
        count -= 1


def _settled(srv: ServerProcess, obs: RawConnection, s: socket.socket) -> tuple[dict[str, str], int]:
    """The client's CLIENT LIST fields and the bytes the kernel holds of its output, once neither
    moves (three equal looks in a row)."""
    mine = s.getsockname()[1]
    looks: list[object] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        f = _fields(obs, "held")
        q = _queues(srv.port)
        assert f is not None
        look = (f["obl"], f["oll"], f["omem"], f["qbuf"], q.get((srv.port, mine)), q.get((mine, srv.port)))
        looks.append(look)
        if len(looks) >= 3 and looks[-1] == looks[-2] == looks[-3] and f["qbuf"] == "0":
            break
        time.sleep(0.1)
    q = _queues(srv.port)
    return f, q[(srv.port, mine)][0] + q[(mine, srv.port)][1]


def _backlog(srv: ServerProcess, size: int, count: int, resp: int) -> list[object]:
    obs = RawConnection(srv.port)
    obs.call("DEBUG", "REPLYBUFFER", "RESIZING", "0")  # rbs stays 16384 (the cron's resize is timing)
    value = b"v" * size
    obs.call("SET", "big", value)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel's share: mostly the send queue
    s.connect(("127.0.0.1", srv.port))
    s.sendall(encode_command(("HELLO", str(resp), "SETNAME", "held")))
    _read_frames(s, 1)  # read: the backlog starts with the GETs
    s.sendall(encode_command(("GET", "big")) * count)
    f, kernel = _settled(srv, obs, s)
    head = b"$%d\r\n" % size
    pieces = [head, value, b"\r\n"] if size >= PIECE_MIN else [head + value + b"\r\n"]
    layout = Layout(16384, 0, True)
    for _ in range(count):
        layout.add_items(pieces)
    assert layout.taken(kernel), (srv.name, kernel, layout.pos)  # something is held
    want = dict(zip(("obl", "oll", "omem"), map(str, layout.figures()), strict=True))
    got = {k: f[k] for k in want}
    s.close()
    obs.close()
    return [got == want or (srv.name, got, want, kernel), f["events"], f["rbs"]]


@pytest.mark.parametrize("resp", [2, 3])
@pytest.mark.parametrize(("size", "count"), [(10_000, 600), (100_000, 60), (1_000_000, 8), (7_000, 700)])
def test_a_backlog_is_laid_out_as_redis_lays_it(size, count, resp):
    ours, theirs = run_on_both(lambda srv: _backlog(srv, size, count, resp), *_RESIZING_OFF)
    assert ours == theirs == [True, "rw", "16384"]


def _client_id(s: socket.socket) -> int:
    s.sendall(encode_command(("CLIENT", "ID")))
    reply = b""
    while not reply.endswith(b"\r\n"):
        reply += s.recv(64)
    return int(reply[1:-2])


def _limit(srv: ServerProcess, size: int, count: int) -> list[object]:
    """(GET big, INCR n) pipelined `count` times by a client that reads nothing, under a 1 MB hard
    limit: how many INCRs ran (the drop point), and whether the client is still there."""
    admin = RawConnection(srv.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
    admin.call("SET", "big", "x" * size)
    s = socket.create_connection(("127.0.0.1", srv.port))
    cid = _client_id(s)
    s.sendall((encode_command(("GET", "big")) + encode_command(("INCR", "n"))) * count)
    deadline = time.monotonic() + 20
    listed = True
    while time.monotonic() < deadline:  # until it is dropped, or has run all it sent
        ids = {int(m) for m in re.findall(rb"\bid=(\d+)", admin.call("CLIENT", "LIST"))}
        listed = cid in ids
        if not listed or admin.call("GET", "n") == b"$%d\r\n%d\r\n" % (len(str(count)), count):
            break
        time.sleep(0.05)
    n = admin.call("GET", "n")
    s.close()
    admin.close()
    return [n, listed]


# where a big reply's node of its own size (not 16 KiB blocks) decides: dropped at the 15th GET of
# 70 kB, the 7th of 150 kB (6 are kept), the 2nd of 500 kB; 10 kB replies fill 16 KiB nodes
@pytest.mark.parametrize(("size", "count"), [(70_000, 20), (150_000, 7), (150_000, 6), (500_000, 4), (10_000, 120)])
def test_the_output_limit_drops_where_redis_drops(size, count):
    ours, theirs = run_on_both(lambda srv: _limit(srv, size, count))
    assert ours == theirs, (ours, theirs)


def _own_line(srv: ServerProcess) -> list[dict[str, str]]:
    """CLIENT INFO pipelined after other commands: Redis's buffer and list hold their replies, not
    yet written, and its own line shows them."""
    admin = RawConnection(srv.port)
    admin.call("DEBUG", "REPLYBUFFER", "RESIZING", "0")  # before the client exists: its rbs stays 16384
    admin.close()
    c = RawConnection(srv.port)
    c.call("SET", "big", "x" * 100_000)
    c.call("SET", "mid", "x" * 1000)
    out = []
    for before in ([["PING"]], [["GET", "big"]], [["GET", "big"]] * 3, [["GET", "mid"]] * 30):
        c.send(b"".join(encode_command(cmd) for cmd in before) + encode_command(("CLIENT", "INFO")))
        for _ in before:
            c.read_frame()
        line = c.read_frame().decode().split("\r\n", 1)[1].strip()
        fields = dict(part.split("=", 1) for part in line.split(" "))
        out.append({k: fields[k] for k in ("obl", "oll", "omem")})
    c.close()
    return out


def test_its_own_line_counts_the_replies_before_it():
    ours, theirs = run_on_both(_own_line, *_RESIZING_OFF)
    assert ours == theirs
    assert ours[0] == {"obl": "7", "oll": "0", "omem": "0"} and ours[2]["oll"] == "3", ours
