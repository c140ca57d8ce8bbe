"""Snapshots at scale (issue #53's proof): raxdb against redis-server 7.0, side by side, under a writer.

Each server in turn (redis-server first, then raxdb; never both at once, so their memory figures do
not crowd each other) is filled with `--keys` strings of 100 bytes (`DEBUG POPULATE <n> key 100`)
and `--hashes` small hashes of four fields (pipelined HSETs), persistence off (`save ""`,
`appendonly no`).  Then, while ONE writer client SETs random existing keys to new 100-byte values
as fast as it can over its own connection, it measures:

1. BGSAVE: its duration (from the BGSAVE reply to INFO persistence `rdb_bgsave_in_progress:0`,
   polled every 10 ms), the fork's `latest_fork_usec`, the extra memory while it runs and the
   writer's p99 and max SET latency meanwhile (SETs overlapping the time from BGSAVE sent to done,
   so a stall of the fork counts).  Extra memory = the parent's resident-set growth (peak of
   /proc/<pid>/status VmRSS, sampled every 50 ms, minus its value just before) plus the child's
   private dirty pages: INFO `rdb_last_cow_size` after the save, and the peak of the child's
   /proc/<child>/smaps_rollup Private_Dirty sampled here (the child found through
   /proc/<pid>/task/*/children); the total takes the larger of those two.  A page either side
   changes after the fork ends up private to one of them: the child's copy when the parent wrote
   it, so the child's Private_Dirty counts the copies both sides made, and the parent's growth
   counts what it allocated besides (output buffers, new objects).
2. Start-up load: SHUTDOWN NOSAVE (the BGSAVE wrote dump.rdb), a fresh server on the same
   directory, and the server's own "DB loaded from disk: X seconds" log figure.
3. Full resync: a fresh replica of the same kind in its own directory, `REPLICAOF`, the time from
   the command to the replica's INFO replication `master_link_status:up` with
   `master_sync_in_progress:0`, and the master's extra memory meanwhile (as in 1; the writer keeps
   writing to the master).  Disk (`repl-diskless-sync no`), and with `--diskless` also diskless
   (`repl-diskless-sync yes`, `repl-diskless-sync-delay 0`).
4. Copy per operation: the pages a save's child ends up holding per GET, then per SET, of a
   random key (`measure_copy_per_op`): the extra memory of 1 grows with how many writes each
   server's save lets in, this is per write.

The report is a table, both servers' figures and the ratio raxdb/redis-server per row, headed by
the date, the commit and the 1-minute load average before and after (the host is shared: a loaded
host stretches every duration).  `--json FILE` also writes the figures as JSON.  MB are 10^6 bytes.

    .venv/bin/python bench/snapshot_bench.py [--keys 2000000] [--hashes N] [--diskless]
                                             [--json out.json] [--servers redis,raxdb]

`--keys 10000000` is the 10M run.  A benchmark, not a test: nothing here passes or fails, but a
wrong step (a failed BGSAVE, a key count that does not match) stops the run with the reason.  Every
wait is bounded by `--timeout`; servers, the writer and the sampler are stopped on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import RawConnection, encode_command, parse  # noqa: E402
from tests.support.servers import ServerProcess, redis_binary, start_raxdb, start_redis  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MB = 1e6
SAMPLE_S = 0.05  # the /proc sampler's period
POLL_S = 0.01  # INFO polling: the durations' resolution
VALUE_SIZE = 100
COPY_OPS = 20_000  # operations per copy-per-operation figure

# --- /proc ----------------------------------------------------------------------------------------


def _proc_kb(path: str, field: str) -> int:
    """A `field:  N kB` line of a /proc file, in bytes (0 once the process is gone)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int) -> int:
    """VmRSS of a process (0 once it is gone)."""
    return _proc_kb(f"/proc/{pid}/status", "VmRSS:")


def children(pid: int) -> set[int]:
    """The processes any thread of `pid` has forked and not yet reaped."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found.update(int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
        except OSError:
            continue
    return found


def private_dirty_bytes(pid: int) -> int:
    """Private_Dirty of a process from smaps_rollup (0 once it is gone)."""
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Private_Dirty:")


class Sampler:
    """A thread that reads, every SAMPLE_S seconds, the server's VmRSS and each child's
    Private_Dirty, and keeps their peaks (a `with` block: started on entry, stopped and joined on
    exit, so it never outlives the measurement)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.rss_peak = 0
        self.child_dirty_peak = 0
        self.child_pids: set[int] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        self.rss_peak = max(self.rss_peak, rss_bytes(self.pid))
        for child in children(self.pid):
            self.child_pids.add(child)
            self.child_dirty_peak = max(self.child_dirty_peak, private_dirty_bytes(child))
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(SAMPLE_S)

    def __enter__(self) -> Sampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._sample()


# --- the writer -----------------------------------------------------------------------------------


class Writer:
    """One client SETting random existing keys (`key:<n>`, n < `keys`) to new 100-byte values, one
    request at a time, as fast as the server answers, in a thread with its own connection; it
    records each SET's start and latency (perf_counter seconds) for `window`.  A connection that
    fails ends the thread and is kept in `error`."""

    def __init__(self, port: int, keys: int, timeout: float) -> None:
        self.port = port
        self.keys = keys
        self.timeout = timeout
        self.starts = array("d")
        self.latencies = array("d")
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(53)
        try:
            conn = RawConnection(self.port, timeout=self.timeout)
        except OSError as exc:
            self.error = f"connect: {exc}"
            return
        n = 0
        clock = time.perf_counter
        try:
            while not self._stop.is_set():
                key = b"key:%d" % rng.randrange(self.keys)
                value = (b"w%d:" % n).ljust(VALUE_SIZE, b"x")
                request = b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, VALUE_SIZE, value)
                t = clock()
                conn.send(request)
                reply = conn.read_frame()
                self.latencies.append(clock() - t)
                self.starts.append(t)
                if reply != b"+OK\r\n":
                    self.error = f"SET answered {reply[:200]!r}"
                    return
                n += 1
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 5)

    def window(self, t0: float, t1: float) -> dict[str, float]:
        """p99 and max latency (ms) and the count of the SETs that overlap [t0, t1]."""
        lat = sorted(lat for start, lat in zip(self.starts, self.latencies, strict=False)
                     if start < t1 and start + lat > t0)
        if not lat:
            return {"p99_ms": math.nan, "max_ms": math.nan, "sets": 0}
        p99 = lat[min(len(lat) - 1, math.ceil(0.99 * len(lat)) - 1)]
        return {"p99_ms": p99 * 1e3, "max_ms": lat[-1] * 1e3, "sets": len(lat)}


@contextlib.contextmanager
def writing(port: int, keys: int, timeout: float, warmup: float) -> Iterator[Writer]:
    """A Writer running for the block (after `warmup` seconds of writing first, so the block's
    measurement starts with it at its pace), stopped on the way out whatever happens."""
    w = Writer(port, keys, timeout)
    w.start()
    try:
        time.sleep(warmup)  # a warm-up, not a synchronisation: the writer is already answered
        if w.error:
            raise RuntimeError(f"writer: {w.error}")
        yield w
    finally:
        w.stop()
    if w.error:
        raise RuntimeError(f"writer: {w.error}")


# --- talking to a server --------------------------------------------------------------------------


def info(conn: RawConnection, section: str) -> dict[str, str]:
    reply = parse(conn.call("INFO", section))
    if isinstance(reply, Exception):
        raise RuntimeError(f"INFO {section}: {reply}")
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def call_ok(conn: RawConnection, *args: Any) -> None:
    reply = conn.call(*args)
    if not reply.startswith(b"+"):
        raise RuntimeError(f"{' '.join(map(str, args))}: {reply[:200]!r}")


def poll(what: str, check: Callable[[], bool], timeout: float) -> float:
    """Call `check` every POLL_S seconds until it holds; the perf_counter time it first held.
    RuntimeError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return time.perf_counter()
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL_S)


def launch(start: Callable[..., ServerProcess], cwd: str, timeout: float, extra: list[str]) -> ServerProcess:
    """A server on `cwd`, once it says it is ready (a start-up that loads a big file may take
    longer than ServerProcess's own minute, so the wait is ours, bounded by `timeout`)."""
    srv = start(*extra, cwd=cwd, ready_text=None)
    deadline = time.monotonic() + timeout
    while not srv.wait_log("eady to accept connections", 1.0):
        if srv.proc.poll() is not None or time.monotonic() > deadline:
            srv.stop()
            raise RuntimeError(f"{srv.name} did not start:\n" + "".join(srv.log[-30:]))
    return srv


def populate(conn: RawConnection, keys: int, hashes: int, batch: int = 1000) -> None:
    call_ok(conn, "DEBUG", "POPULATE", keys, "key", VALUE_SIZE)
    fields = [b"name", b"n", b"age", b"42", b"city", b"somewhere", b"id", b"0"]
    for first in range(0, hashes, batch):
        ids = range(first, min(first + batch, hashes))
        conn.send(b"".join(encode_command([b"HSET", b"hash:%d" % i, *fields[:-1], b"%d" % i]) for i in ids))
        for _ in ids:
            reply = conn.read_frame()
            if not reply.startswith(b":"):
                raise RuntimeError(f"HSET: {reply[:200]!r}")


def dbsize(conn: RawConnection) -> int:
    return int(conn.call("DBSIZE")[1:-2])


# --- the three measurements -----------------------------------------------------------------------


def memory_figures(out: dict[str, float], prefix: str, rss_before: int, s: Sampler, cow: float) -> None:
    """The extra-memory rows of one snapshot: parent growth, the child's dirty pages (INFO's, NaN
    when INFO had no fresh figure, and sampled) and their total."""
    growth = max(0, s.rss_peak - rss_before)
    out[f"{prefix}_parent_growth_mb"] = growth / MB
    out[f"{prefix}_cow_info_mb"] = cow / MB
    out[f"{prefix}_child_dirty_peak_mb"] = s.child_dirty_peak / MB
    child = s.child_dirty_peak if math.isnan(cow) else max(cow, s.child_dirty_peak)
    out[f"{prefix}_extra_mb"] = (growth + child) / MB


def measure_bgsave(srv: ServerProcess, conn: RawConnection, opts: argparse.Namespace, out: dict[str, float]) -> None:
    pid = srv.proc.pid
    with writing(srv.port, opts.keys, opts.timeout, opts.warmup) as w:
        before = rss_bytes(pid)
        with Sampler(pid) as s:
            sent = time.perf_counter()
            reply = conn.call("BGSAVE")
            replied = time.perf_counter()
            if not reply.startswith(b"+Background saving started"):
                raise RuntimeError(f"BGSAVE: {reply[:200]!r}")
            done = poll("rdb_bgsave_in_progress:0",
                        lambda: info(conn, "persistence").get("rdb_bgsave_in_progress") == "0", opts.timeout)
        lat = w.window(sent, done)
    if not srv.wait_log("Background saving terminated with success", 30):
        raise RuntimeError(f"{srv.name}: no 'Background saving terminated with success' in its log")
    pers = info(conn, "persistence")
    stats = info(conn, "stats")
    if pers.get("rdb_last_bgsave_status") != "ok":
        raise RuntimeError(f"{srv.name}: rdb_last_bgsave_status:{pers.get('rdb_last_bgsave_status')}")
    out["bgsave_s"] = done - replied
    out["bgsave_fork_ms"] = int(stats.get("latest_fork_usec", "0")) / 1e3
    memory_figures(out, "bgsave", before, s, int(pers.get("rdb_last_cow_size", "0")))
    out["bgsave_writer_p99_ms"] = lat["p99_ms"]
    out["bgsave_writer_max_ms"] = lat["max_ms"]
    out["bgsave_writer_sets"] = lat["sets"]
    out["bgsave_children_seen"] = len(s.child_pids)
    out["dump_mb"] = os.path.getsize(os.path.join(srv.cwd, "dump.rdb")) / MB


def measure_copy_per_op(srv: ServerProcess, conn: RawConnection, opts: argparse.Namespace,
                        out: dict[str, float]) -> None:
    """Pages the child's copy grows by per GET, then per SET, of a random existing key: a BGSAVE
    slowed by rdb-key-save-delay (it outlasts the operations), its child's Private_Dirty read
    before and after OPS pipelined operations, then the child stopped with SIGUSR1 (a save
    stopped on purpose, as FLUSHALL stops one).  Unlike the extra-memory rows this does not
    depend on how many writes the writer fits into each server's save."""
    import random
    import signal

    rnd = random.Random(53)
    call_ok(conn, "CONFIG", "SET", "rdb-key-save-delay", "100")
    before = children(srv.proc.pid)
    reply = conn.call("BGSAVE")
    if not reply.startswith(b"+Background saving started"):
        raise RuntimeError(f"BGSAVE: {reply[:200]!r}")
    poll("the BGSAVE child", lambda: bool(children(srv.proc.pid) - before), opts.timeout)
    child = min(children(srv.proc.pid) - before)
    value = b"v" * VALUE_SIZE
    # GETs first: pages the SETs copied would otherwise be counted as already copied for them
    for name, make in (("get", lambda k: [b"GET", k]), ("set", lambda k: [b"SET", k, value])):
        start = private_dirty_bytes(child)
        for _ in range(0, COPY_OPS, 1000):
            conn.send(b"".join(encode_command(make(b"key:%d" % rnd.randrange(opts.keys))) for _ in range(1000)))
            for _ in range(1000):
                conn.read_frame()
        end = private_dirty_bytes(child)
        if not end:
            raise RuntimeError("the BGSAVE child ended before the operations did")
        out[f"copy_pages_per_{name}"] = (end - start) / 4096 / COPY_OPS
    os.kill(child, signal.SIGUSR1)
    poll("the stopped BGSAVE", lambda: info(conn, "persistence").get("rdb_bgsave_in_progress") == "0", opts.timeout)
    call_ok(conn, "CONFIG", "SET", "rdb-key-save-delay", "0")


def shutdown_nosave(srv: ServerProcess, conn: RawConnection, timeout: float) -> None:
    with contextlib.suppress(OSError):  # the server closes the connection without a reply
        conn.call("SHUTDOWN", "NOSAVE")
    conn.close()
    try:
        srv.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        srv.stop()


def measure_load(srv: ServerProcess, opts: argparse.Namespace, out: dict[str, float]) -> None:
    if not srv.wait_log("DB loaded from disk", 10):
        raise RuntimeError(f"{srv.name}: no 'DB loaded from disk' in its log:\n" + "".join(srv.log[-30:]))
    line = next(x for x in srv.log if "DB loaded from disk" in x)
    found = re.search(r"DB loaded from disk: ([\d.]+) seconds", line)
    if found is None:
        raise RuntimeError(f"{srv.name}: unexpected log line {line!r}")
    out["load_s"] = float(found.group(1))
    out["rss_loaded_mb"] = rss_bytes(srv.proc.pid) / MB


def measure_resync(kind: str, start: Callable[..., ServerProcess], master: ServerProcess, conn: RawConnection,
                   mode: str, opts: argparse.Namespace, out: dict[str, float]) -> None:
    call_ok(conn, "CONFIG", "SET", "repl-diskless-sync", "yes" if mode == "diskless" else "no")
    call_ok(conn, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
    expected = dbsize(conn)
    # the BGSAVE's figure until the resync's child reports its own
    cow_before = int(info(conn, "persistence").get("rdb_last_cow_size", "0"))
    rdir = tempfile.mkdtemp(prefix=f"snapbench-{kind}-replica-")
    replica: ServerProcess | None = None
    prefix = f"resync_{mode}"
    try:
        replica = launch(start, rdir, opts.timeout, opts.extra)
        rconn = RawConnection(replica.port, timeout=opts.timeout)
        pid = master.proc.pid

        def synced() -> bool:
            repl = info(rconn, "replication")
            return repl.get("master_link_status") == "up" and repl.get("master_sync_in_progress") == "0"

        with writing(master.port, opts.keys, opts.timeout, opts.warmup) as w:
            before = rss_bytes(pid)
            with Sampler(pid) as s:
                sent = time.perf_counter()
                call_ok(rconn, "REPLICAOF", "127.0.0.1", master.port)
                done = poll(f"the {mode} resync of the {kind} replica", synced, opts.timeout)
            lat = w.window(sent, done)
        got = dbsize(rconn)
        if got != expected:
            raise RuntimeError(f"{kind} replica ({mode}) holds {got} keys, its master {expected}")
        out[f"{prefix}_s"] = done - sent
        # the master reaps its child once the file is out, which may be a moment after the
        # replica says it is up: its INFO figure comes then
        poll("the master's child to be reaped",
             lambda: info(conn, "persistence").get("rdb_bgsave_in_progress") == "0", opts.timeout)
        cow = int(info(conn, "persistence").get("rdb_last_cow_size", "0"))
        memory_figures(out, prefix, before, s, math.nan if cow == cow_before else cow)
        out[f"{prefix}_writer_p99_ms"] = lat["p99_ms"]
        out[f"{prefix}_writer_max_ms"] = lat["max_ms"]
        out[f"{prefix}_replica_rss_mb"] = rss_bytes(replica.proc.pid) / MB
        rconn.close()
    finally:
        if replica is not None:
            replica.stop()
        shutil.rmtree(rdir, ignore_errors=True)


def run_server(kind: str, opts: argparse.Namespace) -> dict[str, float]:
    """The whole sequence on one kind of server; its figures."""
    start = start_raxdb if kind == "raxdb" else start_redis
    out: dict[str, float] = {}
    d = tempfile.mkdtemp(prefix=f"snapbench-{kind}-")
    srv: ServerProcess | None = None
    try:
        srv = launch(start, d, opts.timeout, opts.extra)
        conn = RawConnection(srv.port, timeout=opts.timeout)
        out["rss_empty_mb"] = rss_bytes(srv.proc.pid) / MB
        t = time.perf_counter()
        populate(conn, opts.keys, opts.hashes)
        out["populate_s"] = time.perf_counter() - t
        if dbsize(conn) != opts.keys + opts.hashes:
            raise RuntimeError(f"{kind} holds {dbsize(conn)} keys after populating, not {opts.keys + opts.hashes}")
        out["rss_data_mb"] = rss_bytes(srv.proc.pid) / MB
        print(f"  {kind}: populated in {out['populate_s']:.1f} s; BGSAVE", flush=True)
        measure_bgsave(srv, conn, opts, out)
        print(f"  {kind}: BGSAVE {out['bgsave_s']:.2f} s; restart", flush=True)
        shutdown_nosave(srv, conn, opts.timeout)
        srv = launch(start, d, opts.timeout, opts.extra)
        measure_load(srv, opts, out)
        conn = RawConnection(srv.port, timeout=opts.timeout)
        if dbsize(conn) != opts.keys + opts.hashes:
            raise RuntimeError(f"{kind} loaded {dbsize(conn)} keys, not {opts.keys + opts.hashes}")
        print(f"  {kind}: loaded in {out['load_s']:.2f} s; full resync", flush=True)
        for mode in ("disk", "diskless") if opts.diskless else ("disk",):
            measure_resync(kind, start, srv, conn, mode, opts, out)
            print(f"  {kind}: {mode} resync {out[f'resync_{mode}_s']:.2f} s", flush=True)
        measure_copy_per_op(srv, conn, opts, out)
        conn.close()
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(d, ignore_errors=True)
    return out


# --- the report -----------------------------------------------------------------------------------

ROWS: list[tuple[str, str, str]] = [
    # (key, label, format)
    ("rss_data_mb", "resident set with the data (MB)", ".1f"),
    ("bgsave_s", "BGSAVE duration (s)", ".2f"),
    ("bgsave_fork_ms", "BGSAVE fork (latest_fork_usec, ms)", ".1f"),
    ("bgsave_extra_mb", "BGSAVE extra memory (MB)", ".1f"),
    ("bgsave_parent_growth_mb", "  parent's resident-set growth (MB)", ".1f"),
    ("bgsave_cow_info_mb", "  child's dirty pages, rdb_last_cow_size (MB)", ".1f"),
    ("bgsave_child_dirty_peak_mb", "  child's Private_Dirty peak, sampled (MB)", ".1f"),
    ("bgsave_writer_p99_ms", "BGSAVE writer p99 SET latency (ms)", ".2f"),
    ("bgsave_writer_max_ms", "BGSAVE writer max SET latency (ms)", ".1f"),
    ("bgsave_writer_sets", "BGSAVE writer SETs during the save", ".0f"),
    ("copy_pages_per_set", "copy during a save per SET of a random key (pages)", ".2f"),
    ("copy_pages_per_get", "copy during a save per GET of a random key (pages)", ".2f"),
    ("dump_mb", "dump.rdb size (MB)", ".1f"),
    ("load_s", "start-up load, 'DB loaded from disk' (s)", ".2f"),
    ("rss_loaded_mb", "resident set after the load (MB)", ".1f"),
]
for _mode in ("disk", "diskless"):
    ROWS += [
        (f"resync_{_mode}_s", f"full resync, {_mode} (s)", ".2f"),
        (f"resync_{_mode}_extra_mb", f"  master's extra memory, {_mode} (MB)", ".1f"),
        (f"resync_{_mode}_parent_growth_mb", "    parent's resident-set growth (MB)", ".1f"),
        (f"resync_{_mode}_child_dirty_peak_mb", "    child's Private_Dirty peak, sampled (MB)", ".1f"),
        (f"resync_{_mode}_cow_info_mb", "    child's dirty pages, rdb_last_cow_size (MB)", ".1f"),
        (f"resync_{_mode}_writer_p99_ms", f"  writer p99 SET latency, {_mode} (ms)", ".2f"),
        (f"resync_{_mode}_writer_max_ms", f"  writer max SET latency, {_mode} (ms)", ".1f"),
    ]


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or not theirs or math.isnan(ours) or math.isnan(theirs):
        return None
    return ours / theirs


def report(results: dict[str, dict[str, float]]) -> tuple[str, dict[str, float | None]]:
    theirs, ours = results.get("redis", {}), results.get("raxdb", {})
    ratios: dict[str, float | None] = {}
    lines = [f"{'':46s} {'redis-server':>13s} {'raxdb':>13s} {'ratio':>8s}"]
    for key, label, fmt in ROWS:
        if key not in theirs and key not in ours:
            continue
        r = ratios[key] = ratio(ours.get(key), theirs.get(key))
        cells = [format(v[key], fmt) if key in v else "-" for v in (theirs, ours)]
        lines.append(f"{label:46s} {cells[0]:>13s} {cells[1]:>13s} {(f'{r:.2f}x' if r is not None else '-'):>8s}")
    return "\n".join(lines), ratios


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def redis_version() -> str:
    binary = redis_binary()
    if binary is None:
        return "?"
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    found = re.search(r"v=(\S+)", out)
    return found.group(1) if found else out.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=2_000_000, help="100-byte strings (DEBUG POPULATE)")
    ap.add_argument("--hashes", type=int, default=None, help="small hashes (default: keys / 10)")
    ap.add_argument("--diskless", action="store_true", help="also a diskless full resync")
    ap.add_argument("--json", default="", help="write the figures to this file")
    ap.add_argument("--servers", default="redis,raxdb", help="which servers, in order (default both)")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds of writing before each measurement")
    ap.add_argument("--timeout", type=float, default=900.0, help="bound of every wait, seconds")
    ap.add_argument("--server-args", default="", help="options for every server started")
    opts = ap.parse_args()
    if opts.hashes is None:
        opts.hashes = opts.keys // 10
    opts.extra = opts.server_args.split()
    kinds = [k.strip() for k in opts.servers.split(",") if k.strip()]
    if any(k not in ("redis", "raxdb") for k in kinds):
        ap.error("--servers: redis and/or raxdb")
    compiled = any((ROOT / "raxdb" / "storage").glob("keyspace.*.so"))
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = os.getloadavg()[0]
    print(f"snapshot_bench {when}, commit {commit()}, redis-server {redis_version()}, raxdb "
          f"{'compiled' if compiled else 'interpreted'}; {opts.keys:,} strings of {VALUE_SIZE} bytes + "
          f"{opts.hashes:,} hashes; load average (1 min) before {load_before:.2f}", flush=True)
    results: dict[str, dict[str, float]] = {}
    for kind in kinds:
        results[kind] = run_server(kind, opts)
    load_after = os.getloadavg()[0]
    table, ratios = report(results)
    print(table)
    print(f"load average (1 min): before {load_before:.2f}, after {load_after:.2f}")
    if opts.json:
        doc = {"date": when, "commit": commit(), "redis_version": redis_version(), "raxdb_compiled": compiled,
               "keys": opts.keys, "hashes": opts.hashes, "value_size": VALUE_SIZE, "diskless": opts.diskless,
               "loadavg_1m_before": load_before, "loadavg_1m_after": load_after, **results, "ratio": ratios}
        Path(opts.json).write_text(json.dumps(_nulls(doc), indent=2) + "\n")
        print(f"written {opts.json}")


def _nulls(doc: Any) -> Any:
    """The document with NaN (a figure that could not be taken; not JSON) as null."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return None
    if isinstance(doc, dict):
        return {k: _nulls(v) for k, v in doc.items()}
    return doc


if __name__ == "__main__":
    main()
