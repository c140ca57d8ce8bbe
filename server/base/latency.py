"""Latency monitoring (Redis's latency.c and sparkline.c) and per-command latency histograms
(7.0's latency-tracking: INFO latencystats, LATENCY HISTOGRAM).

The monitor.  With latency-monitor-threshold (ms) above 0, an event that took at least that long
is logged in its time series: "command" / "fast-command" (a command's run, by its fast flag),
"expire-cycle" (one active-expire pass of the cron), "eviction-cycle" (one round of evictions
before a command) and "eviction-del" (one evicted key's deletion).  A series keeps the last 160
seconds that had an event, one sample (the worst) per second, and the worst ever; LATENCY LATEST,
HISTORY, GRAPH, DOCTOR and RESET read them as Redis's do, texts and ASCII graph byte for byte.
Commands reach the monitor through the slow-log check they already pay (`Server._sync_slowlog`
lowers its threshold to the monitor's), so the monitor costs the hot loop nothing, and fast
commands are seen when timed: one call in eight, as the slow log sees them.

The histograms.  Each timed command call adds its duration, in whole microseconds as Redis records
it, to the command's histogram (`Command.latency_histogram()`: microseconds -> calls).  Percentiles
and LATENCY HISTOGRAM's buckets are computed from it on demand with HdrHistogram's arithmetic at
Redis's settings (values in ns from 1 to 1e9, two significant digits: sub-buckets of 1/128 of a
power of two), so INFO's p50/p99/p99.9 print the values Redis would for the same durations.  Fast
commands are timed one call in eight, so their histogram holds a sample of their calls; LATENCY
HISTOGRAM reports every call (`Command.calls`) and scales the sample's cumulative counts to it.
Redis times every call, so a command called once after latency-tracking is switched on has
percentiles there: switching it on (`time_next_calls`) times every call of each sampled command
whose next call would not be, until the cron tick after its first timed call (`resume_sampling`),
which costs the hot loop nothing (it already reads `Command.sampled`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from raxdb.server.base import clock

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Command, Server

TS_LEN = 160  # LATENCY_TS_LEN: samples kept per event
GRAPH_COLS = 80
HIST_MIN, HIST_MAX = 1, 1_000_000_000  # LATENCY_HISTOGRAM_MIN_VALUE / MAX_VALUE, in ns


class Series:
    """One event's time series: a ring of (unix time, ms) samples and the all-time worst."""

    __slots__ = ("times", "latencies", "idx", "max")

    def __init__(self) -> None:
        self.times = [0] * TS_LEN
        self.latencies = [0] * TS_LEN
        self.idx = 0
        self.max = 0

    def add(self, ms: int, now: int) -> None:
        if ms > self.max:
            self.max = ms
        prev = (self.idx + TS_LEN - 1) % TS_LEN
        if self.times[prev] == now:  # one sample per second: the worst
            if ms > self.latencies[prev]:
                self.latencies[prev] = ms
            return
        self.times[self.idx] = now
        self.latencies[self.idx] = ms
        self.idx = (self.idx + 1) % TS_LEN

    def samples(self) -> list[tuple[int, int]]:
        """(time, ms), oldest first."""
        out = []
        for j in range(TS_LEN):
            i = (self.idx + j) % TS_LEN
            if self.times[i]:
                out.append((self.times[i], self.latencies[i]))
        return out

    def latest(self) -> tuple[int, int]:
        last = (self.idx + TS_LEN - 1) % TS_LEN
        return self.times[last], self.latencies[last]


def events(srv: Server) -> dict[str, Series]:
    ev = getattr(srv, "latency_events", None)
    if ev is None:
        ev = srv.latency_events = {}  # type: ignore[attr-defined]
    return ev


def add_sample_if_needed(srv: Server, event: str, ms: int) -> None:
    """latencyAddSampleIfNeeded: log `ms` under `event` if the monitor is on and it is that slow."""
    threshold = srv.config.latency_monitor_threshold
    if threshold and ms >= threshold:
        ev = events(srv)
        series = ev.get(event)
        if series is None:
            series = ev[event] = Series()
        series.add(ms, int(clock.seconds(srv)))


def reset(srv: Server, names: list[bytes] | None) -> int:
    """LATENCY RESET: drop the named events (any case), or all; how many were dropped."""
    ev = events(srv)
    if names is None:
        n = len(ev)
        ev.clear()
        return n
    n = 0
    for name in names:
        for event in [e for e in ev if e.lower().encode() == name.lower()]:
            del ev[event]
            n += 1
    return n


# ---- LATENCY DOCTOR ----------------------------------------------------------------------------

_DISABLED = ("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may "
             "use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't "
             "in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
_CALM = ("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest "
         "bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
_NO_FIX = ("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis "
           "community to get some help, providing this report in your help request.\n")
# The advices raxdb's events can call for, in the report's order.
_ADVICE = {
    "slowlog_enabled": "- There are latency issues with potentially slow commands you are using. Try to enable "
                       "the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If "
                       "the Slow log is disabled Redis is not able to log slow commands execution for you.\n",
    "slowlog_tuning": "- Your current Slow Log configuration only logs events that are slower than your configured "
                      "latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n",
    "slowlog_inspect": "- Check your Slow Log to understand what are the commands you are running which are too "
                       "slow to execute. Please check https://redis.io/commands/slowlog for more information.\n",
    "scheduler": "- The system is slow to execute Redis code paths not containing system calls. This usually means "
                 "the system does not provide Redis CPU time to run for long periods. You should try to:\n"
                 "  1) Lower the system load.\n"
                 "  2) Use a computer / VM just for Redis if you are running other software in the same system.\n"
                 "  3) Check if you have a \"noisy neighbour\" problem.\n"
                 "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your "
                 "system.\n"
                 "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are "
                 "using Jemalloc. However this may create fragmentation problems.\n",
    "hz": "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration "
          "parameter to 100 using 'CONFIG SET hz 100'.\n",
    "large_objects": "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking "
                     "operation. If you have very large objects that are often deleted, expired, or evicted, try "
                     "to fragment those objects into multiple smaller objects.\n",
    "mass_eviction": "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects "
                     "via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys "
                     "migrations (RESTORE command), may create sudden memory pressure forcing the server to block "
                     "trying to evict keys. \n",
    "disable_thp": "- I detected a non zero amount of anonymous huge pages used by your process. This creates very "
                   "serious latency events in different conditions, especially when Redis is persisting on disk. "
                   "To disable THP support use the command 'echo never > "
                   "/sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so "
                   "that the command will be executed again after a reboot. Note that even if you have already "
                   "disabled THP, you still need to restart the Redis process to get rid of the huge pages "
                   "already created.\n",
}


# The advices each event calls for ("command" also gets one about the slow log's settings).
_EVENT_ADVICE = {"command": ("slowlog_inspect", "large_objects"), "fast-command": ("scheduler",),
                 "expire-cycle": ("hz", "large_objects"), "eviction-del": ("large_objects",),
                 "eviction-cycle": ("mass_eviction",)}


def _anon_huge_pages() -> int:
    """THPGetAnonHugePagesSize: the process's AnonHugePages (kB as /proc reports them)."""
    try:
        with open(f"/proc/{os.getpid()}/smaps") as f:
            return sum(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))
    except (OSError, ValueError, IndexError):
        return 0


def _stats(series: Series, now: int) -> tuple[int, int, int, float]:
    """analyzeLatencyForEvent: (samples, average, mean absolute deviation, seconds per sample)."""
    samples = series.samples()
    if not samples:
        return 0, 0, 0, 0.0
    n = len(samples)
    avg = sum(ms for _, ms in samples) // n
    mad = sum(abs(avg - ms) for _, ms in samples) // n
    period = now - samples[0][0] or 1  # oldest first
    return n, avg, mad, period / n


def report(srv: Server) -> str:
    """createLatencyReport, for the events raxdb logs."""
    ev = events(srv)
    threshold = srv.config.latency_monitor_threshold
    if not ev and threshold == 0:
        return _DISABLED
    now = int(clock.seconds(srv))
    out = ""
    advise: set[str] = set()
    advices = 0
    for n, (event, series) in enumerate(ev.items(), 1):
        if n == 1:
            out += "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n"
        samples, avg, mad, per = _stats(series, now)
        out += (f"{n}. {event}: {samples} latency spikes (average {avg}ms, mean deviation {mad}ms, period "
                f"{per:.2f} sec). Worst all time event {series.max}ms.")
        if event == "command":
            slower = srv.config.slowlog_log_slower_than
            if slower < 0:
                advise.add("slowlog_enabled")
                advices += 1
            elif slower // 1000 > threshold:
                advise.add("slowlog_tuning")
                advices += 1
        advised = _EVENT_ADVICE.get(event, ())
        advise.update(advised)
        advices += len(advised)
        out += "\n"
    if _anon_huge_pages() > 0:
        advise.add("disable_thp")
        advices += 1
    if not ev and not advices:
        return out + _CALM
    if not advices:
        return out + _NO_FIX
    out += "\nI have a few advices for you:\n\n"
    for key, text in _ADVICE.items():
        if key not in advise or (key == "hz" and srv.config.hz >= 100):
            continue
        out += text % (threshold * 1000) if "%d" in text else text  # the slow-log settings to use
    return out


# ---- LATENCY GRAPH -----------------------------------------------------------------------------

def graph(event: str, series: Series, now: int) -> str:
    """latencyCommandGenSparkeline: a title, a rule, and the samples as a filled sparkline of four
    rows with the samples' ages (at `now`, the server's clock in seconds) as vertical labels."""
    values, labels = [], []
    for t, ms in series.samples():
        values.append(ms)
        ago = now - t
        labels.append(f"{ago}s" if ago < 60 else f"{ago // 60}m" if ago < 3600 else
                      f"{ago // 3600}h" if ago < 86400 else f"{ago // 86400}d")
    high, low = (max(values), min(values)) if values else (0, 0)
    out = f"{event} - high {high} ms, low {low} ms (all time high {series.max} ms)\n" + "-" * GRAPH_COLS + "\n"
    for j in range(0, len(values), GRAPH_COLS):
        if j:
            out += "\n"
        out += _render(values, labels, j, min(GRAPH_COLS, len(values) - j), 4)
    return out


def _render(values: list[int], labels: list[str], offset: int, length: int, rows: int) -> str:
    """sparklineRenderRange with SPARKLINE_FILL, one label margin row."""
    lo, hi = min(values), max(values)
    relmax = (hi - lo) or 1
    steps = 3 * rows
    out = ""
    row = 0
    while True:
        chars = [" "] * length
        more = False
        for j in range(length):
            if row < rows:
                step = int(int((values[offset + j] - lo) * steps) / relmax)
                step = min(max(step, 0), steps - 1)
                idx = step - (rows - row - 1) * 3
                more = True
                if 0 <= idx < 3:
                    chars[j] = "_o#"[idx]
                elif idx >= 3:
                    chars[j] = "|"
            else:
                if row - rows < 1:  # the margin above the labels
                    more = True
                    break
                label = labels[offset + j]
                k = row - rows - 1
                if len(label) > k:
                    more = True
                    chars[j] = label[k]
        if not more:
            return out
        row += 1
        out += "".join(chars) + "\n"


# ---- histograms --------------------------------------------------------------------------------

def _bucket(ns: int) -> int:
    """HdrHistogram's bucket index at two significant digits: values share a sub-bucket of width
    1 << index."""
    return max((ns | 255).bit_length() - 8, 0)


def _highest_equivalent(ns: int) -> int:
    b = _bucket(ns)
    return ((ns >> b) << b) + (1 << b) - 1


def _clamp_ns(us: int) -> int:
    return min(max(us * 1000, HIST_MIN), HIST_MAX)


def _sub_buckets(hist: dict[int, int]) -> list[tuple[int, int]]:
    """The histogram as HdrHistogram holds it: (lowest value in ns, count) per sub-bucket, in
    order (durations in the same sub-bucket pool their counts)."""
    pooled: dict[int, int] = {}
    for us, n in hist.items():
        ns = _clamp_ns(us)
        b = _bucket(ns)
        low = (ns >> b) << b
        pooled[low] = pooled.get(low, 0) + n
    return sorted(pooled.items())


def percentile(buckets: list[tuple[int, int]], total: int, p: float) -> int:
    """hdr_value_at_percentile (ns) over `_sub_buckets`' list: the highest value equivalent to
    the one at percentile `p` (the lowest, for p 0)."""
    wanted = max(int((min(p, 100.0) / 100) * total + 0.5), 1)
    seen = 0
    for low, n in buckets:
        seen += n
        if seen >= wanted:
            return low if p == 0.0 else _highest_equivalent(low)
    return 0


def info_line(cmd: Command, hist: dict[int, int], percentiles: list[tuple[str, float]]) -> str:
    """INFO latencystats: latency_percentiles_usec_<command>:p50=...,p99=...,p99.9=...
    (`hist`: the command's latency_histogram(); `percentiles`: latency-tracking-info-percentiles'
    labels, as the config prints them, and values)."""
    buckets = _sub_buckets(hist)
    total = sum(hist.values())
    parts = [f"p{label}={percentile(buckets, total, p) / 1000.0:.3f}" for label, p in percentiles]
    return f"latency_percentiles_usec_{cmd.fullname}:" + ",".join(parts)


def cdf(cmd: Command, hist: dict[int, int]) -> list[tuple[int, int]]:
    """LATENCY HISTOGRAM's histogram_usec: (bucket, cumulative calls) for the powers-of-two levels
    from 1024 ns up (hdr_iter_log from 1024, base 2), where the count grows; the sample's counts
    scaled to every call (`hist`: the command's latency_histogram())."""
    sampled = sum(hist.values())
    if not sampled:
        return []
    levels: dict[int, int] = {}
    for us, n in hist.items():
        k = (_clamp_ns(us) >> 10).bit_length()  # the first level 1024 << k above the value
        levels[k] = levels.get(k, 0) + n
    out = []
    cumulative = 0
    for k in sorted(levels):
        cumulative += levels[k]
        bound = _highest_equivalent(1024 << k) // 1000
        out.append((bound, cumulative * cmd.calls // sampled))
    return out


def time_next_calls(srv: Server) -> None:
    """latency-tracking switched on: the next call of every sampled command is timed."""
    for cmd in srv.table.every_command():
        if cmd.sampled and cmd.calls & 7:
            cmd.sampled = False
            srv.sampling_paused.append((cmd, cmd.timed_calls))


def resume_sampling(srv: Server) -> None:
    """The cron's part: sampling again for the commands timed since time_next_calls."""
    waiting = []
    for cmd, timed in srv.sampling_paused:
        if cmd.timed_calls > timed:
            cmd.sampled = True
        else:
            waiting.append((cmd, timed))
    srv.sampling_paused = waiting
