"""A command of many small arguments trickled in small segments: the server's CPU for it.

What it is: a robustness measure, not a speed row.  One client writes RPUSH with ARGS arguments
of 3 bytes (~9 bytes each on the wire, ~54 KB for 6,000) SEGMENT bytes at a time with
TCP_NODELAY, pausing PAUSE seconds after each write so that the server reads each segment on its
own, and the server's user + system CPU (from /proc) over the whole command is reported beside
redis-server's, each measured ROUNDS times.  A server that walks what it holds of the command
again at every read pays the square of its length here (docs/speed-log.md, 2026-11-28, h-read4).

Usage: bench/trickle.py [--tree PATH] [--args N] [--segment BYTES] [--pause S] [--rounds N]
(`--tree`: the raxdb tree to run, by default this one; its compiled modules are used if built.)
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import cpu_seconds  # noqa: E402
from tests.support import servers  # noqa: E402
from tests.support.diff import encode_command  # noqa: E402


def trickle(port: int, pid: int, cmd: bytes, segment: int, pause: float) -> tuple[float, bytes]:
    """Send `cmd` `segment` bytes at a time; the server's CPU seconds until its reply, and it."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"PING\r\n")
        assert s.recv(100) == b"+PONG\r\n"
        before = cpu_seconds(pid)
        for i in range(0, len(cmd), segment):
            s.sendall(cmd[i:i + segment])
            time.sleep(pause)
        reply = s.recv(100)
        spent = cpu_seconds(pid) - before
        s.sendall(b"DEL l\r\n")
        s.recv(100)
    return spent, reply


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", default=str(servers.ROOT))
    ap.add_argument("--args", type=int, default=6000)
    ap.add_argument("--segment", type=int, default=16)
    ap.add_argument("--pause", type=float, default=0.0002)
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    cmd = encode_command([b"RPUSH", b"l", *(b"%03d" % (i % 1000) for i in range(opts.args))])
    servers.ROOT = Path(opts.tree)  # start_raxdb's PYTHONPATH
    segments = -(-len(cmd) // opts.segment)
    print(f"RPUSH of {opts.args} 3-byte arguments, {len(cmd)} bytes in {segments} segments of "
          f"{opts.segment} (pause {opts.pause * 1e6:.0f} us); server CPU ms for the command")
    for label, start in (("raxdb", servers.start_raxdb), ("redis", servers.start_redis)):
        srv = start()
        try:
            runs = [trickle(srv.port, srv.proc.pid, cmd, opts.segment, opts.pause) for _ in range(opts.rounds)]
        finally:
            srv.stop()
        assert all(r == b":%d\r\n" % opts.args for _, r in runs), runs
        print(f"{label:6} " + " ".join(f"{t * 1000:8.0f}" for t, _ in runs))


if __name__ == "__main__":
    main()
