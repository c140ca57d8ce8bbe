"""Serving clients while a dataset loads: Redis's LOADING state (rdb.c startLoading / stopLoading,
rdbLoadProgressCallback, aof.c's loop, networking.c processEventsWhileBlocked).

Redis loads on its one thread and, every `loading-process-events-interval-bytes` of an RDB (and
every 1024 commands of an AOF), runs its event loop once without waiting: clients connect, and
are answered -LOADING unless their command is flagged `loading` (INFO, CONFIG, AUTH, HELLO,
CLIENT, SHUTDOWN, ...), which runs.  raxdb does the same on asyncio's loop.

How.  A running asyncio loop cannot be re-entered from inside a callback, so the loaders are
written as generators (`Steps`): Persistence.load_steps, aofload's load_*_steps, each `yield`ing
at the points where Redis processes events, and `yield from` composing them (the AOF's RDB base
inside the AOF's files).  `drive` runs such a generator from a coroutine (start-up, the replica's
link): between slices it flushes the replies queued meanwhile (beforeSleep's part) and awaits one
loop iteration, which polls the sockets without blocking and runs what is ready.  `run` drives
the same generator to its end at once, for the loads that happen inside a command (DEBUG RELOAD,
DEBUG LOADAOF), where the loop cannot run until the command returns.  A replica's diskless
payload is parsed as it arrives, as Redis's is (rdb.Arriving): when the parse runs past the bytes
received, the generator yields how many more it needs and `drive` awaits them from the socket
(the loop serves clients meanwhile), so a slow load reads its master's socket slowly and the
payload is never held whole; its clients see the loading state from the payload's first byte.

Why generators and not a loader thread: one thread, as Redis has.  A thread would pay the GIL
on every key (the loader and the loop contending for it), and everything the loop runs while
loading would have to be proven never to touch the databases being built.  With the generator,
what runs between slices runs exactly where Redis runs it, against the same state, and the cost
of loading is one comparison per key (rdb.read_file's tick) and one counter per AOF command: a
yield happens every 2 MB by default.

Invariants.  While a load runs (`stats["loading"]`: 1, or 2 for the replica's asynchronous
swapdb load), no client takes the fast path (`Client.plain` is False, so `execute` applies
processCommand's loading check), nothing is propagated, nothing in the databases being loaded
expires, and the cron's work is skipped (Redis runs no time events while loading).  A shutdown
(SIGTERM, SHUTDOWN) during a load saves nothing (prepareForShutdown forces NOSAVE while loading):
a signal only schedules it (server/admin/shutdown.py), and `drive` starts it at the next pause, as
whileBlockedCron does; then it stops the generator, whose `finally` blocks leave the loading state.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

T = TypeVar("T")
# a load's pauses: None where clients are served, or (an arriving RDB) the bytes it waits for
Steps = Generator[int | None, None, T]

AOF_EVENTS_EVERY = 1024  # loadSingleAppendOnlyFile serves clients once in this many commands


class Aborted(Exception):
    """The server is shutting down: the load stopped half-way, and its data must not be used."""


def run(steps: Steps[T]) -> T:
    """The whole load at once, its pauses ignored (a load inside a running command)."""
    while True:
        try:
            want = next(steps)
        except StopIteration as done:
            return done.value
        assert want is None, "an arriving RDB needs drive()"


async def drive(srv: Server, steps: Steps[T], on_pause: Callable[[], None] | None = None,
                fill: Callable[[int], Awaitable[None]] | None = None) -> T:
    """The load, with the event loop serving clients at each of its pauses
    (processEventsWhileBlocked), where `on_pause` is called first (a replica's newline to its
    master).  Aborted when a shutdown was requested meanwhile.  `fill(n)` awaits at least n
    more bytes of an arriving RDB (or its end), when the load asks for them."""
    try:
        while True:
            try:
                want = next(steps)
            except StopIteration as done:
                return done.value
            if want is not None:
                assert fill is not None, "an arriving RDB needs its fill"
                await fill(want)  # awaiting the socket serves the loop, as a pause does
                continue
            if on_pause is not None:
                on_pause()
            await asyncio.sleep(0)
            # what the clients' commands queued in the iteration just run goes out now: the
            # loop's own flush (scheduled behind this task) would wait for the next slice
            if srv.pending_writes or srv.aof.buf:
                srv.flush_writes()
            # whileBlockedCron: the cron does not run while loading, so a signal's shutdown
            # starts here (nothing is saved: Shutdown.prepare while loading)
            srv.shutdown.cron()
            if srv.shutting_down:
                raise Aborted
    finally:
        steps.close()  # a cancelled or aborted load leaves the loading state (its finally blocks)


def debug_delay(us: int) -> None:
    """debugDelay (key-load-delay, rdb-key-save-delay): `us` microseconds, or for -N a 1 us
    sleep once in N calls on average (the shortest sleep costs a context switch)."""
    if us < 0:
        us = int(random.randrange(-us) == 0)
    if us:
        time.sleep(us / 1e6)


def started(srv: Server, state: int, total: int) -> None:
    """startLoading: INFO's loading fields start again; every client leaves the fast path."""
    srv.persistence.stats.update(loading=state, rdb_last_load_keys_loaded=0, rdb_last_load_keys_expired=0,
                                 loading_start_time=int(time.time()), loading_total_bytes=total,
                                 loading_rdb_used_mem=0, loading_loaded_bytes=0)
    srv.config.loading = True
    for c in srv.clients.values():
        c.plain = False


def stopped(srv: Server) -> None:
    """stopLoading."""
    srv.persistence.stats["loading"] = 0
    srv.config.loading = False
    srv.update_plain_all()


def progress(srv: Server, loaded: int) -> None:
    """loadingAbsProgress: the bytes loaded so far, and the memory peak as Redis updates it, under a
    memory limit (where the figure is kept; without one it is estimated by sampling keys, which at
    every progress step would cost a load ~10%: the peak is then taken when INFO asks)."""
    srv.persistence.stats["loading_loaded_bytes"] = loaded
    if srv.maxmemory:
        used = srv.used_memory()
        if used > srv.memory_peak:
            srv.memory_peak = used


def info_lines(srv: Server) -> list[str]:
    """INFO persistence's loading_* fields, shown only while loading (genRedisInfoString)."""
    g: Any = srv.persistence.stats.get
    total, used_mem, loaded = g("loading_total_bytes", 0), g("loading_rdb_used_mem", 0), g("loading_loaded_bytes", 0)
    perc = 0.0
    remaining = 1
    if total:
        perc = loaded / total * 100
        remaining = total - loaded
    elif used_mem:
        # used-mem is only a (bad) estimate of the file's size: never past 99.99%
        perc = min(99.99, loaded / used_mem * 100)
        remaining = max(1, used_mem - loaded)
    start = g("loading_start_time", 0)
    elapsed = int(time.time()) - start
    eta = 1 if elapsed == 0 else elapsed * remaining // (loaded + 1)
    return [f"loading_start_time:{start}", f"loading_total_bytes:{total}", f"loading_rdb_used_mem:{used_mem}",
            f"loading_loaded_bytes:{loaded}", "loading_loaded_perc:%.2f" % perc, f"loading_eta_seconds:{eta}"]
