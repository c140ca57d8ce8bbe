"""`make bench`: raxdb against redis-server 7.0, side by side, with redis-benchmark.

Both servers run on this machine with the same options; each workload runs against each server in
turn (alternating, best of `--rounds`), with 50 clients at -P 1 and -P 16, and the report gives
ops/s for both and the ratio raxdb/redis of the best rounds, then the median of each round's own
ratio ("paired": the two servers' runs of a round are back to back, so a slow minute on the host
weighs on both; steadier than the best rounds' ratio when ops/s swing).  It also reports each server's CPU time (user + system, from
/proc) per request, averaged over the rounds, and their ratio (redis CPU / raxdb CPU, "cpu ratio"):
at -P 1 ops/s is bound by the client and by latency, and on a shared or virtual machine ops/s swings
by 10-20% between identical runs, while CPU per request moves much less.  A benchmark, not a test:
nothing here passes or fails.

Latency: each row also gives redis-benchmark's p99 and max latency (its --csv columns) for redis and
raxdb, each the median of the rounds, the max's spread over the rounds (lowest-highest), and the
ratio of the max medians (raxdb / redis; issue #56's target is 2x at -P 1).  On a loaded host the
max is the scheduler's more than either server's: `--pauses` starts raxdb with its pause recorder
(server/admin/pauses.py) and prints, under each row, raxdb's own longest pauses in wall and CPU ms
(collections by generation, cron ticks, loop iterations), which the host's load does not lengthen,
and the heartbeat's latest firing in wall ms beside the CPU the loop spent meanwhile ("loop late"):
a wall far over its CPU is the host's scheduler holding the server.

    .venv/bin/python bench/bench.py [--quick] [--rounds N] [--only SET,GET] [--memory] [--tls] [--pauses] [--client]
                                    [--server-args "--maxmemory 1gb --maxmemory-policy allkeys-lru"]

`--client` also prints, under each redis-benchmark row, the client's CPU per request against each
server (redis-benchmark's user + system time, from its rusage) and how often each server went to
sleep per request (its voluntary context switches).  At -P 1 a row whose replies are big to parse
(HGETALL_100, LRANGE_600) is bound by the client, a single thread on the same two cores: its ops/s
follow the client's CPU per request, which grows with each time the server had gone to sleep and
the client's next request had to wake it (docs/speed-log.md, 2026-11-29, h-deliver).

`--tls` runs the workloads over TLS instead (redis-benchmark --tls, with a client certificate,
against each server's tls-port; certificates made for the run as tests/support/tlscerts.py makes
them); `make bench` runs a few workloads that way after the plain table.

`--server-args` starts both servers with those options (a memory limit, say, under which raxdb
counts memory after every write as server/memory/evict.py describes).  `--cluster` starts both in
cluster mode, each a one-node cluster that owns every slot: what a key's slot costs each server
per command (its slot's check, the per-slot key index), with no redirection; rows whose keys fall
in different slots (MSET, SINTER_100, SUNION_100, the BullMQ rows) only measure CROSSSLOT errors.

`--replica` attaches a replica of its own kind to each server once the set-up's data is in (a
second redis-server replicating redis-server, a second raxdb replicating raxdb; neither gets
`--server-args`), and waits until each master sees its replica online: every write is then fed to
the replication backlog and the replica's output.  The CPU columns stay the masters'.

The scripting rows (EVALSHA_*, FCALL_*) run bench/lua_workloads.py's scripts, loaded by `prepare`;
the queue rows (BULLMQ_ADD, BULLMQ_WORK; `--only BULLMQ`) run bench/bullmq_bench.mjs with Node.js
and tests/libraries' packages (BullMQ on ioredis), and give jobs/s instead of ops/s.

`--memory` also runs bench/keyspace_memory.py (bytes per key of every key shape, SAVE and load
times) and bench/stream_memory.py (bytes per stream entry), raxdb beside Redis.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import collection_workloads, lua_workloads  # noqa: E402
from bench.cpuclock import cpu_seconds  # noqa: E402
from tests.support.diff import RawConnection, encode_command  # noqa: E402
from tests.support.servers import free_port, start_raxdb, start_redis  # noqa: E402
from tests.support.tlscerts import make_certs, tls_args  # noqa: E402

# name -> redis-benchmark arguments (-t test, or a literal command after the options)
WORKLOADS: dict[str, list[str]] = {
    "SET": ["-t", "set"],
    "GET": ["-t", "get"],
    "INCR": ["-t", "incr"],
    "MSET": ["-t", "mset"],
    "LPUSH": ["-t", "lpush"],
    "RPUSH": ["-t", "rpush"],
    "LPOP": ["-t", "lpop"],
    "RPOP": ["-t", "rpop"],
    "SADD": ["-t", "sadd"],
    "HSET": ["-t", "hset"],
    "SPOP": ["-t", "spop"],
    "ZADD": ["-t", "zadd"],
    "LRANGE_100": ["-t", "lrange_100"],
    # many small keys (prepared: 100,000 hashes and sorted sets of 10, as a job queue keeps them)
    "HSET_SMALL": ["--", "HSET", "h:__rand_int__", "field:3", "value:new"],
    "HGET_SMALL": ["--", "HGET", "h:__rand_int__", "field:3"],
    "ZADD_SMALL": ["--", "ZADD", "z:__rand_int__", "5", "member:5"],
    "ZSCORE_SMALL": ["--", "ZSCORE", "z:__rand_int__", "member:7"],
    "XADD": ["--", "XADD", "bench:stream", "MAXLEN", "~", "100000", "*", "field", "value", "f2", "v2"],
    "XRANGE_10": ["--", "XRANGE", "bench:stream", "-", "+", "COUNT", "10"],
    # large pages (what a Spark read task asks for) from a random place in a 100,000-entry stream
    # whose field values are integers (stored as listpack integers) or strings (prepared)
    "XRANGE_1000_INT": ["--", "XRANGE", "bench:xint", "__rand_int__", "+", "COUNT", "1000"],
    "XRANGE_1000_STR": ["--", "XRANGE", "bench:xstr", "__rand_int__", "+", "COUNT", "1000"],
    # scripts (bench/lua_workloads.py, loaded by prepare): the bridge between Lua and the server
    **{name: ["--", *(a.decode() for a in cmd)] for name, cmd in lua_workloads.WORKLOADS.items()},
    # collections, large values, pub/sub, cursors, GEO, BITFIELD, expiry (bench/collection_workloads.py)
    **collection_workloads.WORKLOADS,
    # driven by bench/collection_workloads.py rather than redis-benchmark (DRIVERS)
    **{name: [] for name in collection_workloads.DRIVERS},
    # a growing dataset of containers (up to 100,000 new streams of one entry, ~7 objects the
    # collector tracks each in raxdb): the collector's pauses in the latency columns; last, so
    # the rows above run on the prepared dataset alone
    "XADD_NEW": ["--", "XADD", "new:__rand_int__", "*", "field", "value"],
}
# Requests per run where a request is much bigger than the usual one (default: 100,000 at -P 1,
# 1,000,000 at -P 16).
REQUESTS = {"XRANGE_1000_INT": 5000, "XRANGE_1000_STR": 5000, **collection_workloads.REQUESTS}
PIPELINES = (1, 16)
# Rows run at -P 1 only (1 MB values: 50 clients x 16 would hold 800 MB in flight)
ROW_PIPELINES = collection_workloads.PIPELINES
# BullMQ (bench/bullmq_bench.mjs): jobs added with addBulk, then processed by a Worker of concurrency 50
BULLMQ_JOBS = 5000
NODE_MODULES = Path(__file__).resolve().parent.parent / "tests" / "libraries" / "node_modules"


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's finished, waited-for children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def sleeps(pid: int) -> int:
    """How often a process has gone to sleep so far: its voluntary context switches (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


class Result(NamedTuple):
    """One run: ops/s, and the latencies (ms) redis-benchmark's --csv reports (7.0: avg, min, p50,
    p95, p99, max); 0.0 where a driver reports ops/s only."""
    ops: float
    p99: float = 0.0
    max: float = 0.0


def run_benchmark(port: int, args: list[str], pipeline: int, requests: int, tls: list[str],
                  random_keys: bool = True) -> Result:
    """One workload's run; `tls`: redis-benchmark's TLS options, [] for plain TCP; `random_keys`
    False: one key (no -r), for the large values."""
    opts = ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(requests), "-P", str(pipeline), "--csv",
            "--precision", "3", *(["-r", "100000"] if random_keys else []), *tls]
    if args and args[0] == "--":
        cmd = opts + args[1:]
    else:
        cmd = opts + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    rows = list(csv.reader(io.StringIO(out)))
    header = next((r for r in rows if r and r[0] == "test"), [])
    rows = [r for r in rows if r and r[0] != "test"]
    if not rows:
        raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out}")
    row = dict(zip(header, rows[-1], strict=False))
    return Result(float(rows[-1][1]), float(row.get("p99_latency_ms", 0.0)), float(row.get("max_latency_ms", 0.0)))


def run_workload(name: str, port: int, pipeline: int, requests: int, tls: list[str]) -> Result:
    """The row `name`'s run: redis-benchmark's, or its driver's (plain TCP only; ops/s alone)."""
    driver = collection_workloads.DRIVERS.get(name)
    if driver is not None:
        if tls:
            raise RuntimeError("driven rows run over plain TCP only")
        return Result(driver(port, pipeline, requests))
    return run_benchmark(port, WORKLOADS[name], pipeline, requests, tls, name not in collection_workloads.NO_RANDOM)


def latency_columns(p99s: dict[str, list[float]], maxes: dict[str, list[float]]) -> str:
    """p99 (median of the rounds) of redis and raxdb, max latency (median of the rounds, and the
    lowest-highest round), and the ratio of the max medians; empty where a row has no latencies."""
    if not maxes["redis"] or not maxes["raxdb"]:
        return ""
    med = {k: statistics.median(v) for k, v in maxes.items()}
    p99 = {k: statistics.median(v) for k, v in p99s.items()}
    spread = {k: f"{min(v):.1f}-{max(v):.1f}" for k, v in maxes.items()}
    return (f" {p99['redis']:5.2f}/{p99['raxdb']:5.2f}"
            f" {med['redis']:5.1f} ({spread['redis']:>9s}) {med['raxdb']:5.1f} ({spread['raxdb']:>10s})"
            f" {med['raxdb'] / med['redis'] if med['redis'] else 0.0:8.2f}x")


def server_pauses(port: int) -> str:
    """raxdb's own longest pauses during the last run, from its pause recorder (server/admin/pauses.py,
    on with --pauses): the longest collection of each generation, cron tick and loop iteration
    (by the CPU the loop spent in it, which the host's load does not lengthen), wall/CPU ms; then
    the latest heartbeat in wall ms, with the loop's CPU over the same gap."""
    conn = RawConnection(port, timeout=60)
    report = json.loads(conn.call(b"DEBUG", b"PAUSES").split(b"\r\n", 1)[1])
    conn.close()
    parts = []
    for kind, got in report["kinds"].items():
        if kind == "loop" or not got["worst_cpu"]:
            continue
        w = got["worst_cpu"][0]  # the longest by CPU: the server's own (the wall's is the host's too)
        parts.append(f"{kind} x{got['n']} max {w['ms']:.2f}/{w['cpu_ms']:.2f}" + (f" [{w['what']}]" if w["what"] else ""))
    late = report["kinds"].get("loop", {}).get("worst")
    if late:  # the heartbeat's latest firing, wall ms over its period / the loop's CPU meanwhile:
        # a wall far over the CPU is the host's scheduler, not the server's work
        parts.append(f"loop late max {late[0]['ms']:.2f}/{late[0]['cpu_ms']:.2f}")
    return "; ".join(parts)


def evicted_keys(port: int) -> int:
    """A server's evicted_keys so far (INFO stats): under a memory limit, a row's evictions are
    the difference across its run."""
    conn = RawConnection(port, timeout=60)
    text = conn.call(b"INFO", b"stats")
    conn.close()
    for line in text.split(b"\r\n"):
        if line.startswith(b"evicted_keys:"):
            return int(line.split(b":")[1])
    return 0


def deadlines_left(port: int) -> int:
    """How many keys with a deadline a server still holds (INFO keyspace's expires=, every db):
    after an expiring row (SET_PX), the keys its expire cycle has not reclaimed yet."""
    conn = RawConnection(port, timeout=60)
    text = conn.call(b"INFO", b"keyspace")
    conn.close()
    total = 0
    for line in text.split(b"\r\n"):  # db0:keys=...,expires=...,avg_ttl=...
        for field in line.partition(b":")[2].split(b","):
            name, _, value = field.partition(b"=")
            if name == b"expires":
                total += int(value)
    return total


# Rows whose keys expire as they run: after each, the keys with a deadline each server still holds
# (the expired ones its active expire cycle has not reclaimed yet, and the last 100 ms' writes).
EXPIRING_ROWS = {"SET_PX"}
SMALL_KEYS = 100_000  # the -r of every workload: __rand_int__ is 12 digits below it


def own_every_slot(port: int) -> None:
    """`--cluster`: a one-node cluster, the server given every slot (CLUSTER ADDSLOTSRANGE), awaited
    until CLUSTER INFO says the cluster is ok, so every key is served here without a redirection."""
    conn = RawConnection(port, timeout=60)
    conn.call(b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383")
    while b"cluster_state:ok" not in conn.call(b"CLUSTER", b"INFO"):
        conn.call(b"WAIT", b"0", b"10")  # (no replicas: WAIT returns 0 after its 10 ms)
    conn.close()


def prepare(port: int) -> None:
    """Data the read workloads need: streams for XRANGE, lists for LRANGE (redis-benchmark's own
    LRANGE test pushes first), the small hashes and sorted sets of the *_SMALL and EVALSHA_MIX
    workloads, and the scripts and functions library of the scripting rows."""
    subprocess.run(["redis-benchmark", "-p", str(port), "-c", "10", "-n", "2000", "-q", "XADD", "bench:stream",
                    "*", "field", "value", "f2", "v2"], capture_output=True, timeout=120)
    conn = RawConnection(port, timeout=600)
    fields = [x for j in range(10) for x in (b"field:%d" % j, b"value:%d" % j)]
    members = [x for j in range(10) for x in (b"%d" % j, b"member:%d" % j)]
    for start in range(0, SMALL_KEYS, 1000):
        batch = range(start, start + 1000)
        conn.send(b"".join(encode_command([b"HSET", b"h:%012d" % i, *fields]) for i in batch)
                  + b"".join(encode_command([b"ZADD", b"z:%012d" % i, *members]) for i in batch))
        for _ in range(2 * len(batch)):
            conn.read_frame()
    # One entry per ms 1..SMALL_KEYS (so __rand_int__ is a place in the stream), three fields:
    # integers of 1 to 10 digits, or strings of the same lengths.
    for start in range(1, SMALL_KEYS + 1, 1000):
        batch = range(start, min(start + 1000, SMALL_KEYS + 1))
        conn.send(b"".join(encode_command([b"XADD", b"bench:xint", b"%d-0" % i, b"n", b"%d" % i, b"kind", b"%d" % (i % 7),
                                           b"ts", b"%d" % (1_700_000_000 + i)]) for i in batch)
                  + b"".join(encode_command([b"XADD", b"bench:xstr", b"%d-0" % i, b"n", b"v%d" % i, b"kind", b"k%d" % (i % 7),
                                             b"ts", b"t%d" % (1_700_000_000 + i)]) for i in batch))
        for _ in range(2 * len(batch)):
            conn.read_frame()
    for cmd in [*lua_workloads.setup_commands(), *collection_workloads.setup_commands()]:
        conn.send(encode_command(cmd))
        conn.read_frame()
    conn.close()


def wait_replica_online(port: int, timeout: float = 300.0) -> None:
    """Until the server at `port` reports a replica online (INFO replication's `state=online`): the
    full sync of the set-up's data is over and every write now goes to it."""
    conn = RawConnection(port, timeout=30)
    deadline = time.monotonic() + timeout
    try:
        while True:
            conn.send(encode_command([b"INFO", b"replication"]))
            if b"state=online" in conn.read_frame():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no replica online at port {port} after {timeout:.0f} s")
            time.sleep(0.2)
    finally:
        conn.close()


def bullmq_seconds(port: int, jobs: int) -> tuple[float, float]:
    """BullMQ's addBulk and a Worker's processing of `jobs` jobs against a server: seconds each."""
    script = Path(__file__).with_name("bullmq_bench.mjs")
    out = subprocess.run(["node", str(script), str(port), str(jobs)], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"bullmq_bench.mjs failed:\n{out.stderr[-2000:]}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["add_s"], got["process_s"]


def bench_bullmq(ours, theirs, rounds: int, jobs: int) -> None:
    """The queue row: jobs/s of BullMQ's add and process on both servers, best of `rounds`, and
    their ratio.  Skipped, saying why, without Node.js or tests/libraries' packages (`make test`
    installs them)."""
    if not shutil.which("node") or not (NODE_MODULES / "bullmq").is_dir():
        print("BULLMQ: skipped (needs node and tests/libraries/node_modules: npm ci --prefix tests/libraries)")
        return
    best = {"redis": [0.0, 0.0], "raxdb": [0.0, 0.0]}
    for _ in range(rounds):
        for label, srv in (("redis", theirs), ("raxdb", ours)):
            try:
                secs = bullmq_seconds(srv.port, jobs)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                print(f"  BULLMQ on {label}: {exc}", file=sys.stderr)
                continue
            best[label] = [max(b, jobs / s) for b, s in zip(best[label], secs, strict=True)]
    for i, what in enumerate(("BULLMQ_ADD", "BULLMQ_WORK")):
        r, x = best["redis"][i], best["raxdb"][i]
        print(f"{what:12s} {'':>3s} {r:13,.0f} {x:13,.0f} {(x / r if r else 0.0):7.2f}x   (jobs/s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer requests (a rough look)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--tls", action="store_true", help="over TLS (each server's tls-port)")
    ap.add_argument("--server-args", default="", help="options for both servers")
    ap.add_argument("--cluster", action="store_true",
                    help="both servers in cluster mode, each a one-node cluster owning every slot (single-key rows only:"
                         " a multi-key row's keys are in different slots, CROSSSLOT)")
    ap.add_argument("--pauses", action="store_true",
                    help="run raxdb with its pause recorder and print its longest pauses after each row")
    ap.add_argument("--replica", action="store_true",
                    help="attach a replica of its own kind to each server after the set-up (the CPU columns stay the masters')")
    ap.add_argument("--client", action="store_true",
                    help="print the client's CPU per request against each server and each server's sleeps per request")
    opts = ap.parse_args()
    only = opts.only.upper().split(",") if opts.only else []
    names = [n for n in WORKLOADS if not only or n in only]
    extra = opts.server_args.split()
    bus = {"raxdb": [], "redis": []}
    if opts.cluster:
        extra += ["--cluster-enabled", "yes"]
        # each server's bus port its own free one: the default, the port + 10000, is no port for a
        # server port above 55535, and neither server would start
        bus = {name: ["--cluster-port", str(free_port())] for name in bus}
    tls: list[str] = []
    tls_ports = {}
    if opts.pauses:
        os.environ["RAXDB_PAUSES"] = "1"  # server/admin/pauses.py, in the servers this process starts
    if opts.tls:
        certs = make_certs(Path(tempfile.mkdtemp(prefix="bench-tls-")))
        tls = ["--tls", "--cacert", certs["ca_crt"], "--cert", certs["client_crt"], "--key", certs["client_key"]]
        tls_ports = {"raxdb": free_port(), "redis": free_port()}
        ours = start_raxdb(*tls_args(certs, tls_ports["raxdb"]), *extra, *bus["raxdb"])
        theirs = start_redis(*tls_args(certs, tls_ports["redis"]), *extra, *bus["redis"])
        print("over TLS (redis-benchmark --tls, a client certificate)")
    else:
        ours, theirs = start_raxdb(*extra, *bus["raxdb"]), start_redis(*extra, *bus["redis"])
    if extra:
        print("both servers with", " ".join(extra))
    replicas = []
    try:
        for srv in (ours, theirs):
            if opts.cluster:
                own_every_slot(srv.port)
            prepare(srv.port)
        if opts.replica:
            replicas += [start_raxdb("--replicaof", "127.0.0.1", str(ours.port)),
                         start_redis("--replicaof", "127.0.0.1", str(theirs.port))]
            for srv in (ours, theirs):
                wait_replica_online(srv.port)
            print("each server with a replica of its own kind attached")
        if opts.pauses:
            server_pauses(ours.port)  # start the recorder's report afresh: prepare's pauses are not a row's
        print(f"{'workload':12s} {'-P':>3s} {'redis ops/s':>13s} {'raxdb ops/s':>13s} {'ratio':>7s} {'paired':>7s}"
              f" {'redis us/op':>12s} {'raxdb us/op':>12s} {'cpu ratio':>10s}"
              f" {'p99 ms':>11s} {'max ms (median, spread)':>27s} {'max ratio':>9s}")
        for name in names:
            for p in ROW_PIPELINES.get(name, PIPELINES):
                requests = REQUESTS.get(name, 100_000 if p == 1 else 1_000_000) // (5 if opts.quick else 1)
                best = {"redis": 0.0, "raxdb": 0.0}
                cpu = {"redis": 0.0, "raxdb": 0.0}
                client = {"redis": 0.0, "raxdb": 0.0}  # redis-benchmark's CPU against each (--client)
                slept = {"redis": 0, "raxdb": 0}  # each server's sleeps (--client)
                p99s: dict[str, list[float]] = {"redis": [], "raxdb": []}
                maxes: dict[str, list[float]] = {"redis": [], "raxdb": []}
                pairs = []  # each round's raxdb/redis ratio, when both of its runs gave a result
                left = {"redis": 0, "raxdb": 0}  # keys with a deadline held right after the last run
                evicted = {"redis": 0, "raxdb": 0}  # keys evicted over the rounds (under a memory limit)
                limited = "--maxmemory" in extra
                for _ in range(opts.rounds):
                    got = {}
                    for label, srv in (("redis", theirs), ("raxdb", ours)):
                        try:
                            c0, k0, s0 = cpu_seconds(srv.proc.pid), children_cpu_seconds(), sleeps(srv.proc.pid)
                            e0 = evicted_keys(srv.port) if limited and not tls else 0
                            port = tls_ports.get(label, srv.port)
                            with collection_workloads.beside(name, port):
                                res = run_workload(name, port, p, requests, tls)
                            got[label] = res.ops
                            best[label] = max(best[label], res.ops)
                            cpu[label] += cpu_seconds(srv.proc.pid) - c0
                            client[label] += children_cpu_seconds() - k0
                            slept[label] += sleeps(srv.proc.pid) - s0
                            if limited and not tls:
                                evicted[label] += evicted_keys(srv.port) - e0
                            if name in EXPIRING_ROWS:
                                left[label] = deadlines_left(port)
                            if res.max:
                                p99s[label].append(res.p99)
                                maxes[label].append(res.max)
                        except (RuntimeError, subprocess.TimeoutExpired) as exc:
                            print(f"  {name} -P {p} on {label}: {exc}", file=sys.stderr)
                    if got.get("redis") and "raxdb" in got:
                        pairs.append(got["raxdb"] / got["redis"])
                ratio = best["raxdb"] / best["redis"] if best["redis"] else 0.0
                paired = statistics.median(pairs) if pairs else 0.0
                us = {k: v * 1e6 / (requests * opts.rounds) for k, v in cpu.items()}
                cpu_ratio = us["redis"] / us["raxdb"] if us["raxdb"] else 0.0
                print(f"{name:12s} {p:3d} {best['redis']:13,.0f} {best['raxdb']:13,.0f} {ratio:7.2f}x {paired:6.2f}x"
                      f" {us['redis']:12.2f} {us['raxdb']:12.2f} {cpu_ratio:9.2f}x{latency_columns(p99s, maxes)}",
                      flush=True)
                if name in EXPIRING_ROWS:
                    print(f"{'':17s}keys with a deadline left after the run: redis {left['redis']:,}"
                          f" raxdb {left['raxdb']:,}", flush=True)
                if limited and not tls:
                    n = requests * opts.rounds
                    print(f"{'':17s}evicted keys/request redis {evicted['redis'] / n:.3f}, raxdb"
                          f" {evicted['raxdb'] / n:.3f}", flush=True)
                if opts.client and name not in collection_workloads.DRIVERS:
                    n = requests * opts.rounds
                    print(f"{'':17s}client CPU us/op against redis {client['redis'] * 1e6 / n:.2f}, raxdb"
                          f" {client['raxdb'] * 1e6 / n:.2f}; server sleeps/op redis {slept['redis'] / n:.3f},"
                          f" raxdb {slept['raxdb'] / n:.3f}", flush=True)
                if opts.pauses:
                    print(f"{'':17s}raxdb's own pauses (wall/cpu ms): {server_pauses(ours.port)}", flush=True)
        if not only or "BULLMQ" in only:
            bench_bullmq(ours, theirs, opts.rounds, BULLMQ_JOBS // (5 if opts.quick else 1))
    finally:
        for srv in (*replicas, ours, theirs):
            srv.stop()
    if opts.memory:
        for script in ("keyspace_memory.py", "stream_memory.py"):
            subprocess.run([sys.executable, str(Path(__file__).with_name(script))], check=False)


if __name__ == "__main__":
    main()
