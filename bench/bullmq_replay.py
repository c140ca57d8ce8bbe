"""BullMQ's command stream replayed into both servers: server CPU per job, and commandstats.

bench/bullmq_bench.mjs (addBulk of N jobs, then a Worker of concurrency 50) runs once against
redis-server under MONITOR; the clients' own commands (EVALSHA / EVAL of BullMQ's scripts, a few
others; not the scripts' inner calls, not BZPOPMIN and the connection set-up) are then sent again,
pipelined 50 deep over one connection, into each server in turn, `--rounds` times.  The figure is
the server process's CPU (/proc) per job: no Node.js and no blocking in the measured part, so it
moves less with the host's load than the live BULLMQ rows of bench/bench.py do.  The scripts'
timestamps are replayed as recorded, so every round does the same work (it starts with FLUSHALL).

    .venv/bin/python bench/bullmq_replay.py [--jobs 5000] [--rounds 3] [--save FILE]

`--save FILE` also writes the captured commands (a JSON list of argument lists, latin-1 text) for
bench/bullmq_instr.sh, which replays them in process and counts instructions per job.

Needs node and tests/libraries' packages, as the BULLMQ rows do.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import hiredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cpuclock import cpu_seconds  # noqa: E402
from tests.support.diff import encode_command  # noqa: E402
from tests.support.servers import start_raxdb, start_redis  # noqa: E402

SKIP = {b"BZPOPMIN", b"QUIT", b"CLIENT", b"HELLO", b"INFO"}  # blocking, or the connections' set-up
DEPTH = 50
_TOKEN = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {ord("\\"): b"\\", ord('"'): b'"', ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("a"): b"\a",
            ord("b"): b"\b"}


def unrepr(tok: bytes) -> bytes:
    """An argument as MONITOR prints it (sdscatrepr) back to its bytes."""
    out = bytearray()
    i = 0
    while i < len(tok):
        c = tok[i]
        if c == 0x5C:  # backslash
            d = tok[i + 1]
            if d == ord("x"):
                out.append(int(tok[i + 2:i + 4], 16))
                i += 4
                continue
            out += _ESCAPES[d]
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def capture(port: int, jobs: int) -> list[list[bytes]]:
    """The clients' commands while bullmq_bench.mjs runs against the server on `port`."""
    mon = socket.create_connection(("127.0.0.1", port))
    mon.sendall(b"MONITOR\r\n")
    buf = bytearray()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            data = mon.recv(1 << 20)
            if not data:
                return
            buf.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.3)
    script = Path(__file__).with_name("bullmq_bench.mjs")
    subprocess.run(["node", str(script), str(port), str(jobs)], check=True, capture_output=True, timeout=600)
    time.sleep(0.5)
    done.set()
    mon.close()
    reader.join(timeout=5)
    cmds = []
    for line in bytes(buf).split(b"\r\n"):
        head, _, rest = line.partition(b"] ")
        if not line.startswith(b"+") or not rest or b" lua]" in head + b"]":
            continue
        argv = [unrepr(m.group(1)) for m in _TOKEN.finditer(rest)]
        if argv and argv[0].upper() not in SKIP:
            cmds.append(argv)
    return cmds


def replay(port: int, batches: list[bytes], counts: list[int]) -> None:
    conn = socket.create_connection(("127.0.0.1", port))
    reader = hiredis.Reader()
    for blob, n in zip(batches, counts, strict=True):
        conn.sendall(blob)
        got = 0
        while got < n:
            reader.feed(conn.recv(1 << 20))
            while reader.gets() is not False:
                got += 1
    conn.close()


def commandstats(port: int) -> str:
    out = subprocess.run(["redis-cli", "-p", str(port), "info", "commandstats"], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[8:].split(":", 1)
            d = dict(kv.split("=") for kv in rest.split(","))
            rows.append((int(d["calls"]) * float(d["usec_per_call"]), name, int(d["calls"]), float(d["usec_per_call"])))
    return " ".join(f"{name}={calls}x{us:.2f}" for _, name, calls, us in sorted(rows, reverse=True)[:20])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--save", help="write the captured commands to this file (JSON) for bullmq_instr.sh")
    opts = ap.parse_args()
    ours, theirs = start_raxdb(), start_redis()
    try:
        cmds = capture(theirs.port, opts.jobs)
        if opts.save:
            Path(opts.save).write_text(json.dumps([[a.decode("latin-1") for a in argv] for argv in cmds]))
        batches = [b"".join(encode_command(a) for a in cmds[i:i + DEPTH]) for i in range(0, len(cmds), DEPTH)]
        counts = [len(cmds[i:i + DEPTH]) for i in range(0, len(cmds), DEPTH)]
        print(f"{len(cmds)} commands for {opts.jobs} jobs")
        cpu: dict[str, list[float]] = {"redis": [], "raxdb": []}
        for _ in range(opts.rounds):
            for label, srv in (("redis", theirs), ("raxdb", ours)):
                c0 = cpu_seconds(srv.proc.pid)
                replay(srv.port, batches, counts)
                cpu[label].append((cpu_seconds(srv.proc.pid) - c0) * 1e6 / opts.jobs)
        for label, srv in (("redis", theirs), ("raxdb", ours)):
            subprocess.run(["redis-cli", "-p", str(srv.port), "config", "resetstat"], capture_output=True)
            replay(srv.port, batches, counts)
            print(f"{label}: us of CPU per job min {min(cpu[label]):.1f} median {statistics.median(cpu[label]):.1f}"
                  f"\n  commandstats (calls x us): {commandstats(srv.port)}")
        print(f"CPU ratio (median): {statistics.median(cpu['redis']) / statistics.median(cpu['raxdb']):.2f}"
              f"  (of the rounds' own ratios, each pair run back to back: median "
              f"{statistics.median(r / o for r, o in zip(cpu['redis'], cpu['raxdb'], strict=True)):.2f})")
    finally:
        ours.stop()
        theirs.stop()


if __name__ == "__main__":
    main()
