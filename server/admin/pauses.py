"""The pause recorder: the server's own pauses, seen from inside (a bench aid, issue #56).

Off unless the server starts with RAXDB_PAUSES=1 in its environment (server/main.py installs it
then); off, nothing of it runs or is even imported, so it costs the server nothing.  On, it
records three things, each as a histogram of wall milliseconds plus its worst cases (by wall time
and by CPU time):

- "gc-<generation>": every collection, through gc.callbacks (start and stop of each), with the
  objects it freed;
- "cron": every tick of the server cron (Server._cron, wrapped on the instance);
- "loop": how late a 1 ms heartbeat timer fires: the length of the loop iteration that held it,
  whatever ran in it (a read callback serving a batch of requests, a collection, the cron);
  "loop-cpu": the thread's CPU time between two heartbeats (1 ms of a busy loop's work plus the
  iteration that held the timer), the same gaps measured so that the host's load does not
  lengthen them.

Wall time on a shared host includes the scheduler's own pauses (another process on the core), so
each worst case also carries the thread's CPU time over the same span: a pause whose CPU time is
near its wall time is the server's own work, one with little CPU is the host.  A loop gap names
what else the recorder saw inside it (a collection, a cron tick), so a long iteration says what
filled it.  `DEBUG PAUSES` (server/commands/t_server.py) returns the report as JSON and starts a
new one, so a benchmark reads one per workload; it also gives the collector's counts and
thresholds (server/main.py's GC_THRESHOLDS), which bound a collection's walk.
"""

from __future__ import annotations

import gc
import json
import os
import time
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

ENV = "RAXDB_PAUSES"
BEAT_S = 0.001  # the heartbeat's period
WORST = 8  # worst cases kept per kind
# histogram bucket upper bounds, ms (the last bucket is everything above)
BOUNDS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000)


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


class Kind:
    """One kind of pause: a histogram, a count, the total, and the worst cases, by wall time and by
    CPU time (on a loaded host the longest in wall time are the scheduler's, and the longest in
    CPU time the server's own work)."""

    __slots__ = ("counts", "n", "total_ms", "worst", "worst_cpu")

    def __init__(self) -> None:
        self.counts = [0] * (len(BOUNDS) + 1)
        self.n = 0
        self.total_ms = 0.0
        self.worst: list[tuple[float, float, str]] = []  # (wall ms, cpu ms, detail), longest first
        self.worst_cpu: list[tuple[float, float, str]] = []  # the same, by cpu ms

    def add(self, wall_ms: float, cpu_ms: float, detail: str = "") -> None:
        i = 0
        while i < len(BOUNDS) and wall_ms > BOUNDS[i]:
            i += 1
        self.counts[i] += 1
        self.n += 1
        self.total_ms += wall_ms
        _keep(self.worst, (wall_ms, cpu_ms, detail), False)
        _keep(self.worst_cpu, (wall_ms, cpu_ms, detail), True)

    def report(self) -> dict[str, Any]:
        hist = {f"<={b}": n for b, n in zip(BOUNDS, self.counts, strict=False) if n}
        if self.counts[-1]:
            hist[f">{BOUNDS[-1]}"] = self.counts[-1]
        return {"n": self.n, "total_ms": round(self.total_ms, 3), "hist_ms": hist,
                "worst": _cases(self.worst), "worst_cpu": _cases(self.worst_cpu)}


def _keep(worst: list[tuple[float, float, str]], case: tuple[float, float, str], by_cpu: bool) -> None:
    """`case` into `worst` if it is among the WORST longest, by CPU or by wall time (longest first)."""
    length = itemgetter(1 if by_cpu else 0)
    if len(worst) < WORST or length(case) > length(worst[-1]):
        worst.append(case)
        worst.sort(key=length, reverse=True)
        del worst[WORST:]


def _cases(worst: list[tuple[float, float, str]]) -> list[dict[str, Any]]:
    """A report's worst cases: wall and CPU ms, and what filled each."""
    return [{"ms": round(w, 3), "cpu_ms": round(c, 3), "what": d} for w, c, d in worst]


class Recorder:
    """The hooks' state; one per process (the collector's callbacks are process-wide)."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.kinds: dict[str, Kind] = {}
        self.since = time.monotonic()
        self.seen: list[str] = []  # what ran since the last heartbeat (collections, cron ticks)
        self._gc_start = (0.0, 0.0)
        self._beat_due = 0.0
        self._beat_cpu = 0.0

    def kind(self, name: str) -> Kind:
        k = self.kinds.get(name)
        if k is None:
            k = self.kinds[name] = Kind()
        return k

    # ---- the hooks --------------------------------------------------------------------------
    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = (time.perf_counter(), time.thread_time())
            return
        wall = (time.perf_counter() - self._gc_start[0]) * 1000
        cpu = (time.thread_time() - self._gc_start[1]) * 1000
        gen = info["generation"]
        self.kind(f"gc-{gen}").add(wall, cpu, f"{info['collected']} freed")
        self.seen.append(f"gc-{gen} {wall:.1f}ms")

    def wrap_cron(self) -> None:
        srv = self.srv
        cron = srv._cron  # type: ignore[attr-defined]  # the bound method the loop's timer calls

        def timed_cron() -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            cron()
            wall = (time.perf_counter() - t0) * 1000
            self.kind("cron").add(wall, (time.thread_time() - c0) * 1000,
                                  f"clients {len(srv.clients)}, keys {sum(len(db) for db in srv.dbs)}")
            self.seen.append(f"cron {wall:.1f}ms")
            self.start_heartbeat()

        srv._cron = timed_cron  # type: ignore[attr-defined]

    def start_heartbeat(self) -> None:
        """On the loop (the first cron tick or report starts it; the recorder is installed before
        the loop exists)."""
        if self._beat_due == 0.0:
            self._beat_due = time.monotonic()
            self._beat_cpu = time.thread_time()
            loop = self.srv.loop
            assert loop is not None  # called on the loop
            loop.call_later(BEAT_S, self.beat)

    def beat(self) -> None:
        now, cpu = time.monotonic(), time.thread_time()
        late = (now - self._beat_due - BEAT_S) * 1000
        used = (cpu - self._beat_cpu) * 1000
        what = "; ".join(self.seen[-4:])
        self.kind("loop").add(max(late, 0.0), used, what)
        self.kind("loop-cpu").add(used, used, what)
        self.seen.clear()
        self._beat_due, self._beat_cpu = now, cpu
        loop = self.srv.loop
        assert loop is not None
        loop.call_later(BEAT_S, self.beat)

    # ---- the report -------------------------------------------------------------------------
    def take(self) -> str:
        """The report since the last one (JSON), and a new one started."""
        self.start_heartbeat()
        out = {"seconds": round(time.monotonic() - self.since, 3), "gc_counts": gc.get_count(),
               "gc_thresholds": gc.get_threshold(),
               "kinds": {name: k.report() for name, k in sorted(self.kinds.items())}}
        self.kinds = {}
        self.since = time.monotonic()
        return json.dumps(out)


def install(srv: Server) -> Recorder:
    rec = Recorder(srv)
    gc.callbacks.append(rec.on_gc)
    rec.wrap_cron()
    global _recorder
    _recorder = rec
    return rec


_recorder: Recorder | None = None


def current() -> Recorder | None:
    """The process's recorder, None when the server runs without one."""
    return _recorder
