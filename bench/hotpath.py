"""Server CPU per command on the hot path (parse -> dispatch -> reply), without sockets.

Feeds pipelined batches into a real `Client` with a stub transport and reports CPU microseconds per
command (process time, so other load on the machine barely moves it).  This is the number to
watch when touching server/client.py: redis-server spends about 1.0 us per command, a minimal
uvloop + hiredis server about 3.3 us (with socket I/O, which this leaves out).

    .venv/bin/python bench/hotpath.py [--profile]
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import server.commands  # noqa: E402,F401
from server.client import Client  # noqa: E402
from server.config import Config  # noqa: E402
from server.core import Server  # noqa: E402
from tests.diff import encode_command  # noqa: E402


class StubTransport:
    def __init__(self) -> None:
        # A C-level sink, so the harness adds no Python frames per write (uvloop's write is C too).
        self.sink: collections.deque[bytes] = collections.deque(maxlen=1)
        self.write = self.sink.append

    def get_extra_info(self, name: str, default=None):  # noqa: ANN001
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def close(self) -> None:
        pass


def make_client() -> Client:
    import gc

    srv = Server(Config())
    gc.collect()
    gc.freeze()
    gc.set_threshold(10000, 20, 20)  # as server/main.py
    c = Client(srv)
    c.connection_made(StubTransport())  # type: ignore[arg-type]
    return c


WORKLOADS = {
    "SET": [b"SET", b"key:000000000001", b"xxx"],
    "GET": [b"GET", b"key:000000000001"],
    "INCR": [b"INCR", b"counter:000000000001"],
    "MSET": [b"MSET"] + [b"key:000000000001", b"xxx"] * 10,
}


def run(name: str, pipeline: int, batches: int) -> float:
    c = make_client()
    c.data_received(encode_command(WORKLOADS["SET"]))
    chunk = encode_command(WORKLOADS[name]) * pipeline
    t = time.process_time()
    for _ in range(batches):
        c.data_received(chunk)
    dt = time.process_time() - t
    return dt / (batches * pipeline) * 1e6


def instructions_mode(name: str, pipeline: int, commands: int) -> None:
    """Run one workload once (under `valgrind --tool=callgrind` for deterministic counts)."""
    c = make_client()
    c.data_received(encode_command(WORKLOADS["SET"]))
    chunk = encode_command(WORKLOADS[name]) * pipeline
    for _ in range(commands // pipeline):
        c.data_received(chunk)


def main() -> None:
    if "--once" in sys.argv:
        i = sys.argv.index("--once")
        instructions_mode(sys.argv[i + 1], int(sys.argv[i + 2]), int(sys.argv[i + 3]))
        return
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        cProfile.run("run('SET', 16, 20000)", "/tmp/hotpath.prof")
        pstats.Stats("/tmp/hotpath.prof").sort_stats("tottime").print_stats(15)
        return
    for name in WORKLOADS:
        for p in (1, 16):
            us = min(run(name, p, 200000 // p) for _ in range(3))
            print(f"{name:5s} -P {p:2d}: {us:.3f} us/command")


if __name__ == "__main__":
    main()
