"""What a new connection costs the server: redis-benchmark's start, 50 clients at once, repeated.

Each round opens `--clients` connections together (non-blocking connects, as redis-benchmark's
createClient), writes one request on each as soon as it is connected, reads every reply, then
closes them all.  Reported per server (redis-server 7.0 and raxdb, alternating rounds, each on a
free loopback port with persistence off): the server process's CPU per connection (user + system
from /proc over all rounds, in 10 ms ticks: the figure a loaded host moves least), and the wall
time from the first write to the last first reply in a round (median and max over the rounds): the
wait of the request redis-benchmark's max latency at -P 1 is made of when the server sets up every
connection before it serves the first request (issue #56).  A benchmark, not a test.

    .venv/bin/python bench/connect_cost.py [--rounds 200] [--clients 50] [--only raxdb] [--tree /path/to/raxdb]
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.startup import PERSISTENCE_OFF, _pong, cpu_seconds  # noqa: E402
from tests.support.servers import free_port, redis_binary  # noqa: E402

REQUEST = b"*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n"


def one_round(port: int, clients: int) -> float:
    """Connect `clients` sockets together, one INCR on each; the seconds from the first write to
    the last reply."""
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(clients):
        s = socket.socket()
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_WRITE)
        socks.append(s)
    first = 0.0
    waiting = clients
    while waiting:
        for key, ev in sel.select(10):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            if ev & selectors.EVENT_WRITE:
                s.send(REQUEST)
                if not first:
                    first = time.perf_counter()
                sel.modify(s, selectors.EVENT_READ)
            elif s.recv(64):
                sel.unregister(s)
                waiting -= 1
    last = time.perf_counter()
    for s in socks:
        s.close()
    sel.close()
    return last - first


def start(kind: str, port: int, cwd: str, tree: str) -> subprocess.Popen[bytes]:
    argv = [redis_binary()] if kind == "redis" else [sys.executable, "-m", "raxdb.server"]
    env = {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.Popen([*argv, "--port", str(port), "--bind", "127.0.0.1", *PERSISTENCE_OFF],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not _pong(port):
        time.sleep(0.01)
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--only", choices=("redis", "raxdb"))
    ap.add_argument("--tree", default=str(ROOT), help="the raxdb tree to serve from (default: this one)")
    args = ap.parse_args()
    kinds = [args.only] if args.only else ["redis", "raxdb"]
    procs, ports, cpu0, walls = {}, {}, {}, {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for k in kinds:
                ports[k] = free_port()
                os.makedirs(f"{tmp}/{k}")
                procs[k] = start(k, ports[k], f"{tmp}/{k}", args.tree)
                one_round(ports[k], args.clients)  # uncounted: the first command's imports
                time.sleep(0.2)
                cpu0[k] = cpu_seconds(procs[k].pid)
            for _ in range(args.rounds):
                for k in kinds:
                    walls[k].append(one_round(ports[k], args.clients))
            time.sleep(0.5)  # the last closes reach the servers
            for k in kinds:
                cpu = cpu_seconds(procs[k].pid) - cpu0[k]
                w = walls[k]
                print(f"{k:6} CPU per connection {cpu / (args.rounds * args.clients) * 1e6:7.1f} us   "
                      f"first write to last reply: median {statistics.median(w) * 1e3:.2f} ms, "
                      f"max {max(w) * 1e3:.2f} ms ({args.rounds} rounds of {args.clients})")
        finally:
            for p in procs.values():
                p.terminate()
                p.wait()


if __name__ == "__main__":
    main()
