"""Instructions per request of a live server over a steady window: raxdb or redis-server under
callgrind, redis-benchmark's clients connected before the counters are zeroed and still connected
when they are dumped, so the window holds requests only (bench/live_instr.sh's window also holds
redis-benchmark's 50 new connections: ~100 thousand instructions each on raxdb).

    $PY bench/live_window.py [--server raxdb|redis] [-P 1] [--window 20] [-r 3000] [--annotate N]
                             -- COMMAND ARG...

The server runs at hz 1 (the cron weighs ~50x more under callgrind than live), no persistence, the
slow log and latency monitor off (raxdb); bench/lua_workloads.py's scripts and library are loaded
first.  redis-benchmark (50 clients, or -c) runs `--warm` requests on its own connections first (the keys
made, the code warm), then a second run with a request count it cannot finish inside the window:
once its 50 connections are up the counters are zeroed, the command's calls read (INFO
commandstats over a connection made before), and after `--window` seconds read again and the
counters dumped.  Requests = the difference in the command's calls (at -P 16 each is a command).
`--annotate N` prints callgrind_annotate's N biggest inclusive entries of the window, `--calls`
how often the named functions ran a request (the loop's iterations: uv__io_poll, beforeSleep).
The server is the one importable from the current directory (run it from a worktree, or from
main's with PYTHONPATH set there, to count main's).  Under callgrind each iteration serves many
requests of 50 clients (~20-35 at -P 1): `-c 1` makes every request an iteration of its own.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis  # noqa: E402

from bench.lua_workloads import setup_commands  # noqa: E402
from tests.support.servers import free_port  # noqa: E402


def calls(r: redis.Redis, name: str) -> int:
    """The command's calls so far (INFO commandstats)."""
    return int(r.info("commandstats")[f"cmdstat_{name}"]["calls"])


def count_calls(dump: Path, names: list[str]) -> dict[str, int]:
    """Calls of each function whose name contains one of `names`, summed over its call sites, read
    from a callgrind dump (name compression: `cfn=(id) name` once, `cfn=(id)` after)."""
    ids: dict[str, str] = {}
    counts = dict.fromkeys(names, 0)
    current = None
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith(("fn=", "cfn=")):
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m is None:
                current = None
                continue
            if m.group(2) is not None:
                ids[m.group(1)] = m.group(2)
            current = ids.get(m.group(1)) if line[0] == "c" else None
        elif line.startswith("calls=") and current is not None:
            for k in names:
                if k in current:
                    counts[k] += int(line[6:].split()[0])
            current = None
    return counts


def wait_clients(r: redis.Redis, n: int, deadline: float) -> None:
    while int(r.info("clients")["connected_clients"]) < n:
        if time.monotonic() > deadline:
            raise SystemExit("redis-benchmark's clients did not connect")
        time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=("raxdb", "redis"), default="raxdb")
    ap.add_argument("-P", type=int, default=1)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("-r", type=int, default=3000)
    ap.add_argument("-c", type=int, default=50, help="redis-benchmark's clients")
    ap.add_argument("--warm", type=int, default=3000)
    ap.add_argument("--annotate", type=int, default=0)
    ap.add_argument("--calls", default="", help="comma-separated function names: their calls a request")
    ap.add_argument("command", nargs="+")
    a = ap.parse_args()
    port = free_port()
    out = Path(tempfile.mkdtemp(prefix="live-window-"))
    env = dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    if a.server == "raxdb":
        cmd = [sys.executable, "-m", "raxdb.server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--hz", "1", "--slowlog-log-slower-than", "-1",
               "--latency-monitor-threshold", "0"]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
               "--hz", "1", "--slowlog-log-slower-than", "-1", "--latency-monitor-threshold", "0"]
    vg = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p", *cmd],
                          cwd=os.getcwd(), env=env, stdout=subprocess.DEVNULL, stderr=open(out / "log", "wb"))
    bench = None
    try:
        r = redis.Redis(port=port)
        deadline = time.monotonic() + 180
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or vg.poll() is not None:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.5)
        for c in setup_commands():
            r.execute_command(*c)
        rb = ["redis-benchmark", "-p", str(port), "-c", str(a.c), "-P", str(a.P), "-r", str(a.r)]
        subprocess.run([*rb, "-n", str(a.warm), *a.command], stdout=subprocess.DEVNULL, check=True)
        name = a.command[0].lower()
        bench = subprocess.Popen([*rb, "-n", "100000000", *a.command], stdout=subprocess.DEVNULL)
        wait_clients(r, a.c + 1, time.monotonic() + 120)
        time.sleep(1.0)  # every client past its first request
        subprocess.run(["callgrind_control", "-z", str(vg.pid)], stdout=subprocess.DEVNULL, check=True)
        first = calls(r, name)
        time.sleep(a.window)
        last = calls(r, name)
        subprocess.run(["callgrind_control", "-d", str(vg.pid)], stdout=subprocess.DEVNULL, check=True)
        bench.terminate()
        bench.wait()
        bench = None
        dumps = sorted(out.glob("cg.*.1"))
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(dumps[0])], capture_output=True,
                             text=True, check=True).stdout
        total = next(int(line.split()[0].replace(",", "")) for line in ann.splitlines() if "PROGRAM TOTALS" in line)
        n = last - first
        print(f"{a.server} {' '.join(a.command)} -P {a.P}: {total // max(n, 1):,} instructions/request "
              f"({n} requests, {total:,} in the window)")
        if a.calls:
            counted = count_calls(dumps[0], a.calls.split(","))
            print("  calls a request: " + ", ".join(f"{k} {v / max(n, 1):.3f}" for k, v in counted.items()))
        if a.annotate:
            shown = 0
            for line in ann.splitlines():
                if shown >= a.annotate:
                    break
                parts = line.split()
                if parts and parts[0].replace(",", "").isdigit() and "PROGRAM TOTALS" not in line:
                    ir = int(parts[0].replace(",", ""))
                    print(f"{ir // max(n, 1):>9,} {' '.join(parts[2:]) if parts[1].startswith('(') else ' '.join(parts[1:])}")
                    shown += 1
    finally:
        if bench is not None:
            bench.terminate()
            bench.wait()
        try:
            redis.Redis(port=port).shutdown(nosave=True)
        except Exception:
            pass
        try:
            vg.wait(timeout=60)
        except subprocess.TimeoutExpired:
            vg.kill()
            vg.wait()
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
