"""Blocking at scale: 10,000 clients blocked with BLPOP on 1,000 keys, raxdb and redis-server side by side.

    .venv/bin/python bench/blocking_bench.py [--keys 1000] [--per-key 10] [--servers raxdb,redis]

A benchmark, not a test (tests/unit/test_blocking_scale.py proves the same properties at a smaller size
with no timing).  For each server, started here with --maxclients 20000 after this process raised
its open-file limit (the servers inherit it; redis-server would otherwise lower maxclients to fit):

1. connect keys * per-key clients (asyncio protocols parsing with hiredis: the client side must stay
   cheap, since it shares the machine's cores with the server under test);
2. block them in per-key rounds: round j sends `BLPOP key_i 0` from the j-th waiter of every key and
   awaits INFO clients blocked_clients == (j + 1) * keys before the next round, so each key's waiters
   blocked in a known order (no fixed sleeps);
3. push, then check that every client got exactly one reply, the element its rank entitles it to
   (first-block-first-serve: the j-th waiter of key i gets element j), and a PING barrier on every
   connection shows no second reply was pending; finally blocked_clients == 0 and DBSIZE == 0.

Two push patterns, each on freshly blocked clients:
- burst: one `RPUSH key_i e0..e9` per key, all 1,000 in one write; wake-up latency is measured from
  that write to each reply's arrival, and "all served" is the time to the last reply;
- paced: one RPUSH per key, the next sent only after the 10 replies of the previous one arrived, so
  each latency is one push's wake-up with 10,000 clients connected (and up to 9,990 still blocked).

The harness (Conn, Tally, connect, block_in_rounds, ...) is shared with the scale test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import hiredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import encode_command  # noqa: E402

HOST = "127.0.0.1"
FD_LIMIT = 65536
MAXCLIENTS = 20000
CONNECT_BATCH = 400  # concurrent connects, below the listen backlog (tcp-backlog 511 by default)
STEP_TIMEOUT = 300.0  # seconds any one awaited event may take before the run is declared stuck


# ---- client side ---------------------------------------------------------------------------------
class Tally:
    """Counts replies arriving on the waiter connections, so one await covers thousands of them."""

    __slots__ = ("count", "target", "future")

    def __init__(self) -> None:
        self.count = 0
        self.target = -1
        self.future: asyncio.Future[None] | None = None

    def arrived(self) -> None:
        self.count += 1
        if self.count == self.target and self.future is not None and not self.future.done():
            self.future.set_result(None)

    async def reach(self, n: int, what: str = "replies") -> None:
        """Await the n-th reply overall (take `count` before sending what it awaits)."""
        if self.count >= n:
            return
        self.target = n
        self.future = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self.future, STEP_TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"{what}: {self.count} arrived, expected {n}") from None
        finally:
            self.future = None
            self.target = -1


class Conn(asyncio.Protocol):
    """One connection: replies parsed by hiredis, each stamped with its arrival time."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.reader = hiredis.Reader()
        self.replies: list[Any] = []
        self.arrivals: list[float] = []
        self.transport: asyncio.Transport | None = None
        self.wake: asyncio.Future[None] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        reader = self.reader
        reader.feed(data)
        reply = reader.gets()
        while reply is not False:
            self.replies.append(reply)
            self.arrivals.append(now)
            self.tally.arrived()
            reply = reader.gets()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    def _wake(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def reply(self, index: int) -> Any:
        """The index-th reply on this connection, once it has arrived."""
        while len(self.replies) <= index:
            if self.lost:
                raise ConnectionError("connection closed by the server")
            self.wake = asyncio.get_running_loop().create_future()
            await asyncio.wait_for(self.wake, STEP_TIMEOUT)
        return self.replies[index]

    async def call(self, *args: Any) -> Any:
        index = len(self.replies)
        self.send(encode_command(args))
        return await self.reply(index)

    def take(self) -> tuple[list[Any], list[float]]:
        """The replies so far (and their arrival times), leaving the connection's lists empty."""
        out = self.replies, self.arrivals
        self.replies, self.arrivals = [], []
        return out

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(port: int, n: int, tally: Tally | None = None, protocol: int = 2) -> list[Conn]:
    """n connections, opened CONNECT_BATCH at a time, each batch PINGed before the next starts:
    a connect completes when the kernel queues it, and piling up connections the server has not
    accepted yet would overflow its listen backlog (dropped SYNs, retried a second later).  With
    protocol 3 each connection has sent HELLO 3."""
    loop = asyncio.get_running_loop()
    tally = tally or Tally()
    conns: list[Conn] = []
    while len(conns) < n:
        made = await asyncio.gather(*(loop.create_connection(lambda: Conn(tally), HOST, port)
                                      for _ in range(min(CONNECT_BATCH, n - len(conns)))))
        batch = [proto for _, proto in made]
        await expect_all(batch, ("PING",), tally, lambda reply: reply == b"PONG")
        if protocol != 2:
            await expect_all(batch, ("HELLO", protocol), tally, lambda reply: isinstance(reply, dict))
        conns.extend(batch)
    return conns


async def expect_all(conns: Sequence[Conn], argv: tuple[Any, ...], tally: Tally, ok) -> None:
    """Send argv on every connection; each must answer with exactly one reply that ok() accepts."""
    await send_all(conns, argv, tally)
    for c in conns:
        replies, _ = c.take()
        if len(replies) != 1 or not ok(replies[0]):
            raise AssertionError(f"{argv[0]}: {replies!r}")


async def send_all(conns: Sequence[Conn], argv: tuple[Any, ...], tally: Tally) -> None:
    """The same command on every connection (all counted by tally); returns when every connection
    has its reply."""
    payload = encode_command(argv)
    base = tally.count
    for c in conns:
        c.send(payload)
    await tally.reach(base + len(conns), f"{argv[0]} on {len(conns)} connections")


async def barrier(conns: Sequence[Conn], tally: Tally) -> int:
    """PING every connection and expect PONG as its only new reply: any reply still pending before
    the PING (a client served twice) would arrive first.  Returns how many connections failed."""
    await send_all(conns, ("PING",), tally)
    bad = 0
    for c in conns:
        replies, _ = c.take()
        if replies != [b"PONG"]:
            bad += 1
    return bad


async def clients_field(admin: Conn, field: str) -> int:
    """An integer field of INFO clients (blocked_clients, connected_clients)."""
    info = (await admin.call("INFO", "clients")).decode()
    for line in info.split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"no {field} in INFO clients:\n{info}")


async def blocked_clients(admin: Conn) -> int:
    return await clients_field(admin, "blocked_clients")


async def await_disconnected(admin: Conn, conns: Sequence[Conn], connected_before: int) -> None:
    """Close conns and await the server's word that they are gone (connected_clients back to
    connected_before), so that whatever runs next finds the server as it was."""
    for c in conns:
        c.close()
    deadline = time.monotonic() + STEP_TIMEOUT
    while (now := await clients_field(admin, "connected_clients")) > connected_before:
        if time.monotonic() > deadline:
            raise AssertionError(f"connected_clients is {now}, expected {connected_before}")
        await asyncio.sleep(0.001)


async def await_blocked(admin: Conn, n: int) -> None:
    """Await the server's word that exactly n clients are blocked (polled: there is no push
    notification for it)."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        now = await blocked_clients(admin)
        if now == n:
            return
        if now > n or time.monotonic() > deadline:
            raise AssertionError(f"blocked_clients is {now}, expected {n}")
        await asyncio.sleep(0.001)


async def block_in_rounds(admin: Conn, rounds: Iterable[Sequence[tuple[Conn, bytes]]], base: int = 0) -> None:
    """Send each round's blocking commands, then await that all of them are blocked before the
    next round: a client of round j blocked after every client of rounds < j."""
    total = base
    for batch in rounds:
        for conn, payload in batch:
            conn.send(payload)
        total += len(batch)
        await await_blocked(admin, total)


# ---- the benchmark ---------------------------------------------------------------------------------
def key_name(i: int) -> bytes:
    return b"bq:%d" % i


def element(i: int, j: int) -> bytes:
    return b"e%d.%d" % (i, j)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


class Run:
    """One server's clients: waiter (i, j) is the j-th client to block on key i."""

    def __init__(self, port: int, keys: int, per_key: int) -> None:
        self.port = port
        self.keys = keys
        self.per_key = per_key
        self.tally = Tally()
        self.timings: dict[str, float] = {}
        self.failures: list[str] = []

    async def open(self) -> None:
        self.admin, self.pusher = await connect(self.port, 2)
        await self.admin.call("FLUSHALL")
        started = time.perf_counter()
        self.waiters = await connect(self.port, self.keys * self.per_key, self.tally)
        self.timings["connect"] = time.perf_counter() - started

    def waiter(self, i: int, j: int) -> Conn:
        return self.waiters[i * self.per_key + j]

    async def block_all(self, label: str) -> None:
        started = time.perf_counter()
        blpop = [encode_command(("BLPOP", key_name(i), 0)) for i in range(self.keys)]
        await block_in_rounds(self.admin, ([(self.waiter(i, j), blpop[i]) for i in range(self.keys)]
                                           for j in range(self.per_key)))
        self.timings[f"{label} block"] = time.perf_counter() - started

    def push_command(self, i: int) -> bytes:
        return encode_command(("RPUSH", key_name(i), *(element(i, j) for j in range(self.per_key))))

    async def burst(self) -> list[float]:
        await self.block_all("burst")
        payload = b"".join(self.push_command(i) for i in range(self.keys))
        base = self.tally.count
        sent = time.perf_counter()
        self.pusher.send(payload)
        await self.tally.reach(base + len(self.waiters), "burst wake-ups")
        latencies = self.collect(lambda i: sent)
        self.timings["burst all served"] = max(latencies)
        return latencies

    async def paced(self) -> list[float]:
        await self.block_all("paced")
        sent_at: list[float] = []
        started = time.perf_counter()
        for i in range(self.keys):
            base = self.tally.count
            sent_at.append(time.perf_counter())
            self.pusher.send(self.push_command(i))
            await self.tally.reach(base + self.per_key, f"paced wake-ups of {key_name(i)!r}")
        self.timings["paced all served"] = time.perf_counter() - started
        return self.collect(lambda i: sent_at[i])

    def collect(self, sent_at) -> list[float]:
        """Check every waiter's one reply (FBFS: waiter j of key i gets element j) and return the
        latencies from its key's push to the reply's arrival."""
        latencies = []
        wrong = []
        for i in range(self.keys):
            for j in range(self.per_key):
                replies, arrivals = self.waiter(i, j).take()
                if replies != [[key_name(i), element(i, j)]]:
                    wrong.append(f"waiter {j} of {key_name(i)!r}: {replies!r}")
                    continue
                latencies.append(arrivals[0] - sent_at(i))
        if wrong:
            self.failures.append(f"{len(wrong)} clients not served as FBFS demands, e.g. {wrong[:3]}")
        return latencies

    async def check_clean(self, pushes: int) -> None:
        bad = await barrier(self.waiters, self.tally)
        if bad:
            self.failures.append(f"{bad} connections had an extra reply before the PING barrier")
        await self.pusher.reply(pushes - 1)
        lengths, _ = self.pusher.take()
        if lengths != [self.per_key] * pushes:
            self.failures.append(f"RPUSH replies: {sorted(set(map(repr, lengths)))[:5]}")
        for what, want in (("blocked_clients", 0), ("dbsize", 0)):
            got = await blocked_clients(self.admin) if what == "blocked_clients" else await self.admin.call("DBSIZE")
            if got != want:
                self.failures.append(f"{what} is {got} after serving, expected {want}")

    def close(self) -> None:
        for c in [self.admin, self.pusher, *self.waiters]:
            c.close()


async def bench_server(port: int, keys: int, per_key: int) -> tuple[Run, dict[str, list[float]]]:
    run = Run(port, keys, per_key)
    await run.open()
    try:
        latencies = {"burst": await run.burst()}
        await run.check_clean(keys)
        latencies["paced"] = await run.paced()
        await run.check_clean(keys)
    finally:
        run.close()
    return run, latencies


def raise_fd_limit(want: int) -> int:
    """Raise this process's open-file limit so that the client side and the servers started from
    it (they inherit it) can hold every connection: to `want` where the hard limit can be raised
    (root with CAP_SYS_RESOURCE), else to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def report(keys: int, per_key: int, results: dict[str, tuple[Run, dict[str, list[float]]]]) -> None:
    n = keys * per_key
    names = list(results)
    ms = 1000.0

    def row(label: str, cells: list[str]) -> None:
        print(f"{label:44s}" + "".join(f"{c:>14s}" for c in cells))

    print(f"\n{n} clients blocked with BLPOP on {keys} keys ({per_key} per key); "
          f"client and servers share this machine's {os.cpu_count()} cores")
    row("", names)
    row("connect all clients (s)", [f"{results[s][0].timings['connect']:.2f}" for s in names])
    row(f"block in {per_key} rounds, burst (s)", [f"{results[s][0].timings['burst block']:.2f}" for s in names])
    print(f"burst: {keys} RPUSH of {per_key} elements in one write")
    for q in (50, 99, 100):
        label = "max" if q == 100 else f"p{q}"
        row(f"  wake-up latency {label} (ms)",
            [f"{percentile(sorted(results[s][1]['burst']), q) * ms:.2f}" if results[s][1]['burst'] else "-"
             for s in names])
    row(f"  all {n} served (ms)", [f"{results[s][0].timings['burst all served'] * ms:.1f}" for s in names])
    print(f"paced: one RPUSH of {per_key} at a time, the next after its {per_key} replies")
    for q in (50, 99, 100):
        label = "max" if q == 100 else f"p{q}"
        row(f"  wake-up latency {label} (ms)",
            [f"{percentile(sorted(results[s][1]['paced']), q) * ms:.3f}" if results[s][1]['paced'] else "-"
             for s in names])
    row(f"  all {n} served (ms)", [f"{results[s][0].timings['paced all served'] * ms:.1f}" for s in names])
    row("served exactly once, FBFS, nothing left", ["yes" if not results[s][0].failures else "NO" for s in names])
    for s in names:
        for f in results[s][0].failures:
            print(f"  {s}: {f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--per-key", type=int, default=10)
    ap.add_argument("--servers", default="redis,raxdb", help="comma-separated: redis, raxdb")
    opts = ap.parse_args()
    limit = raise_fd_limit(FD_LIMIT)
    # redis-server keeps 32 descriptors for itself and would lower a larger maxclients to fit
    maxclients = min(MAXCLIENTS, limit - 32)
    need = opts.keys * opts.per_key + 100
    if maxclients < need:
        sys.exit(f"open-file limit {limit} is too low for the {need} connections this run needs")
    print(f"open-file limit {limit} (inherited by the servers), maxclients {maxclients}")

    from tests.support.servers import start_raxdb, start_redis

    starters = {"redis": start_redis, "raxdb": start_raxdb}
    results: dict[str, tuple[Run, dict[str, list[float]]]] = {}
    try:
        import uvloop
        run_async = uvloop.run
    except ImportError:
        run_async = asyncio.run
    for name in opts.servers.split(","):
        srv = starters[name]("--maxclients", str(maxclients))
        try:
            results[name] = run_async(bench_server(srv.port, opts.keys, opts.per_key))
        finally:
            srv.stop()
    report(opts.keys, opts.per_key, results)
    if any(run.failures for run, _ in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
