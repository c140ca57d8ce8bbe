"""Blocking timeouts timed at the client: how many replies come before the timeout, raxdb and redis-server side by side.

    .venv/bin/python bench/blocking_timeouts.py [--tries 1000] [--conns 25] [--timeout 0.2] [--servers raxdb,redis]

A measurement, not a test (tests/integration/test_clock.py asserts "never early" at the edges).
For each server, started here: `--conns` connections each send blocking commands on keys that
never get a value, one after another, cycling through BRPOP, BZPOPMIN, BLMOVE and XREAD BLOCK
with the same timeout, until `--tries` replies arrived in all.  Each reply's time is taken at the
client, from just before the command is written to just after its reply is read, so the figure
can only be longer than the server's own; a reply is early when that time is below the timeout.
Redis times a blocked client out on its first check after the deadline (checkBlockedClientTimeout:
`timeout < now`), so it is never early; the target for raxdb is the same: 0 early (issue #55).
Prints, for each server: tries, early replies, and the minimum / median / p99 / maximum in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import hiredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import encode_command  # noqa: E402
from tests.support.servers import start_raxdb, start_redis  # noqa: E402


def commands(conn: int, timeout: float) -> list[bytes]:
    t = repr(timeout)
    key = f"bt:nokey:{conn}"
    return [encode_command(a) for a in (
        ("BRPOP", key, t),
        ("BZPOPMIN", key, t),
        ("BLMOVE", key, f"bt:dst:{conn}", "LEFT", "RIGHT", t),
        ("XREAD", "BLOCK", str(round(timeout * 1000)), "STREAMS", key, "$"),
    )]


async def one_connection(port: int, conn: int, timeout: float, tries: list[int], times: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    parser = hiredis.Reader()
    cmds = commands(conn, timeout)
    i = 0
    while tries[0] > 0:
        tries[0] -= 1
        t0 = time.perf_counter()
        writer.write(cmds[i % len(cmds)])
        reply = parser.gets()
        while reply is False:
            parser.feed(await reader.read(4096))
            reply = parser.gets()
        times.append(time.perf_counter() - t0)
        if reply is not None:
            raise RuntimeError(f"expected a timeout's nil, got {reply!r}")
        i += 1
    writer.close()


async def measure(port: int, n: int, conns: int, timeout: float) -> list[float]:
    tries, times = [n], []
    await asyncio.gather(*(one_connection(port, k, timeout, tries, times) for k in range(conns)))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tries", type=int, default=1000)
    ap.add_argument("--conns", type=int, default=25)
    ap.add_argument("--timeout", type=float, default=0.2)
    ap.add_argument("--servers", default="raxdb,redis")
    args = ap.parse_args()
    starters = {"raxdb": start_raxdb, "redis": start_redis}
    for name in args.servers.split(","):
        srv = starters[name]()
        try:
            times = asyncio.run(measure(srv.port, args.tries, args.conns, args.timeout))
        finally:
            srv.stop()
        ms = sorted(t * 1000 for t in times)
        early = sum(1 for t in times if t < args.timeout)
        print(f"{name:6} timeout {args.timeout * 1000:g} ms: {len(ms)} tries, {early} early; "
              f"min {ms[0]:.2f} median {statistics.median(ms):.2f} p99 {ms[int(len(ms) * 0.99) - 1]:.2f} "
              f"max {ms[-1]:.2f} ms")


if __name__ == "__main__":
    main()
