"""`make bench`'s start-up line: from process spawn to the first PONG, raxdb against redis-server 7.0.

Beside the wall time, the CPU the server process spent until that PONG (user + system, /proc; in
10 ms ticks), the steadier figure on a loaded host.  Each server is started `--runs` times (alternating, so that a burst of load on a shared machine
falls on both), each time on a free loopback port in a fresh empty directory with persistence off
(`--save "" --appendonly no`), its log discarded.  The time runs from just before the spawn to the
first `+PONG` read: the client retries the connection and the PING every millisecond until the
server answers.  The report gives the median, the fastest and the slowest of each, and the ratio
of the medians (raxdb / redis).  One uncounted start of each comes first, and raxdb runs with
PYTHONDONTWRITEBYTECODE unset: what is measured is a start with the bytecode cached and the files
in the page cache, as every start after an install (pip compiles the bytecode) or after the first
`make run` is.  A benchmark, not a test: nothing here passes or fails.

The serve() rows: `--runs` starts of raxdb.serve() (process mode) in this one Python process, from
the call to start() to the first PONG (start() returns once the server serves; the PING confirms
it), then stop().  The first start in a process spawns the template (raxdb/embed/template.py: an
interpreter and the server's imports) and is reported apart; later starts fork from it.  Their
median is compared with redis-server's; thread mode's later starts are shown beside for comparison.

`--floor` adds the floors under raxdb, each beside redis-server in the same alternation: the
interpreter alone (`python -c pass`, with site, with `-S`, with `-I`; spawn to exit), and a bare
asyncio server on uvloop that answers `+PONG` to anything (`FLOOR_SERVER`, no raxdb module; spawn to
first PONG as above).  The floor server is the least any server on raxdb's front end (CPython,
asyncio, uvloop) can take to its first PONG; raxdb's own share is its time minus the floor's.

    .venv/bin/python bench/startup.py [--runs N] [--server-args "--databases 1"] [--floor] [--no-serve]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cpuclock import cpu_seconds  # noqa: E402
from tests.support.servers import free_port, redis_binary  # noqa: E402

PERSISTENCE_OFF = ["--save", "", "--appendonly", "no"]

# The floor as a server: asyncio on uvloop, as raxdb runs (an asyncio.Runner with uvloop's loop),
# answering +PONG to each read; the options after `--port` are ignored.
FLOOR_SERVER = """
import asyncio, sys, uvloop
class Pong(asyncio.Protocol):
    def connection_made(self, transport): self.transport = transport
    def data_received(self, data): self.transport.write(b"+PONG\\r\\n")
async def serve(port):
    server = await asyncio.get_running_loop().create_server(Pong, "127.0.0.1", port)
    await server.serve_forever()
with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
    runner.run(serve(int(sys.argv[sys.argv.index("--port") + 1])))
"""


def _pong(port: int) -> bool:
    """One connection and one PING: True on +PONG, False while the server does not listen yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def time_to_pong(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds from spawning `argv` (which gets `--port <free>` and the options above) to its first
    PONG, and the CPU seconds the server spent until then (steadier than the wall time on a loaded
    host: it does not count the time the server waited for a core)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="startup-") as cwd:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*argv, "--port", str(port), "--bind", "127.0.0.1", *PERSISTENCE_OFF], cwd=cwd,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = t0 + 60
            while not _pong(port):
                if proc.poll() is not None or time.perf_counter() > deadline:
                    raise RuntimeError(f"{argv[0]} did not answer PING (exit status {proc.poll()})")
                time.sleep(0.001)
            return time.perf_counter() - t0, cpu_seconds(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)


def time_to_exit(argv: list[str]) -> float:
    """Seconds from spawning `argv` to its exit (status 0)."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def floor_rows(runs: int, redis_argv: list[str]) -> None:
    """The floors under raxdb's start, each beside redis-server's start (alternating, `runs`
    times, after one uncounted round): medians in ms and the ratio to redis-server's."""
    py = sys.executable
    exits = {"python -c pass": [py, "-c", "pass"], "python -S -c pass": [py, "-S", "-c", "pass"],
             "python -I -c pass": [py, "-I", "-c", "pass"],
             "import uvloop": [py, "-c", "import asyncio, uvloop"]}
    rows: dict[str, list[float]] = {name: [] for name in [*exits, "uvloop PONG", "redis"]}
    for counted in (False, *[True] * runs):
        sample = {name: time_to_exit(argv) for name, argv in exits.items()}
        sample["uvloop PONG"] = time_to_pong([py, "-c", FLOOR_SERVER])[0]
        sample["redis"] = time_to_pong(redis_argv)[0]
        if counted:
            for name, sec in sample.items():
                rows[name].append(sec * 1000)
    redis_ms = statistics.median(rows["redis"])
    for name, ms in rows.items():
        med = statistics.median(ms)
        print(f"{name:18s} {runs:4d} {redis_ms:9.1f} {med:9.1f} {med / redis_ms:6.1f}x"
              f"   (median, min-max {min(ms):.1f}-{max(ms):.1f})", flush=True)


def serve_times(runs: int, mode: str) -> list[float]:
    """Milliseconds from serve().start() to the first PONG, `runs` + 1 times in this process (the
    first start first: it pays for the template, or in thread mode for the imports)."""
    import raxdb

    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        srv = raxdb.serve(mode=mode).start()  # type: ignore[arg-type]
        try:
            if not _pong(srv.port):
                raise RuntimeError(f"serve() returned before the server answered PING:\n{srv.log}")
            times.append((time.perf_counter() - t0) * 1000)
        finally:
            srv.stop()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--server-args", default="", help="options for both servers")
    ap.add_argument("--floor", action="store_true", help="also the interpreter's and a bare uvloop server's start")
    ap.add_argument("--no-serve", action="store_true", help="skip the raxdb.serve() rows")
    opts = ap.parse_args()
    extra = opts.server_args.split()
    binary = redis_binary()
    if binary is None:
        sys.exit("redis-server not found: `make redis-oracle` installs it")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    servers = {"redis": ([binary, *extra], None), "raxdb": ([sys.executable, "-m", "raxdb.server", *extra], env)}
    for argv, server_env in servers.values():
        time_to_pong(argv, server_env)
    times: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(opts.runs):
        for name, (argv, server_env) in servers.items():
            wall, used = time_to_pong(argv, server_env)
            times[name].append(wall * 1000)
            cpu[name].append(used * 1000)
    med = {name: statistics.median(t) for name, t in times.items()}
    cpu_med = {name: statistics.median(t) for name, t in cpu.items()}
    print(f"{'start-up':16s} {'runs':>4s} {'redis ms':>9s} {'raxdb ms':>9s} {'ratio':>7s}"
          f"   (spawn to first PONG, median; raxdb min-max {min(times['raxdb']):.0f}-{max(times['raxdb']):.0f},"
          f" redis {min(times['redis']):.0f}-{max(times['redis']):.0f})")
    print(f"{'PING':16s} {opts.runs:4d} {med['redis']:9.1f} {med['raxdb']:9.1f} {med['raxdb'] / med['redis']:6.1f}x",
          flush=True)
    print(f"{'PING (CPU ms)':16s} {opts.runs:4d} {cpu_med['redis']:9.1f} {cpu_med['raxdb']:9.1f}"
          f" {cpu_med['raxdb'] / max(cpu_med['redis'], 1.0):6.1f}x   (server CPU to first PONG, median; /proc,"
          " 10 ms ticks; the ratio's floor is 10 ms)", flush=True)
    if opts.floor:
        print(f"{'floor':18s} {'runs':>4s} {'redis ms':>9s} {'ms':>9s} {'ratio':>7s}"
              "   (the interpreter: spawn to exit; uvloop PONG and redis: spawn to first PONG)")
        floor_rows(opts.runs, [binary, *extra])
    for mode in () if opts.no_serve else ("process", "thread"):
        first, *later = serve_times(opts.runs, mode)
        ms = statistics.median(later)
        print(f"{'serve() ' + mode:16s} {opts.runs:4d} {med['redis']:9.1f} {ms:9.1f} {ms / med['redis']:6.1f}x"
              f"   (later starts, median, min-max {min(later):.0f}-{max(later):.0f}; first start {first:.0f})",
              flush=True)


if __name__ == "__main__":
    main()
