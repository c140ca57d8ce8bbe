#!/usr/bin/env bash
# Instructions per request of a live server, the event loop included: raxdb-server runs under
# callgrind, redis-benchmark drives it over loopback, the counters are zeroed after a warm-up and
# dumped after N requests.  bench/instr.sh feeds a client in process instead (no uvloop, no
# transport); this counts what -P 1 costs end to end in user space (the system calls are the
# same as redis-server's: one read and one write per request).  Under callgrind a command runs
# ~50x slower, so time-based work (the cron, latency buckets) weighs more than it does live; the
# cron runs at hz 1, and the slow log and the latency monitor are off, as in instr.sh (a command
# slowed past their thresholds would run their code a load-dependent number of times).
# Usage: bench/live_instr.sh P N [-r KEYSPACE] [-w WARMUP] -- COMMAND ARG...
#   e.g. bench/live_instr.sh 1 6000 -- INCR counter:__rand_int__
# The scripts and the library of bench/lua_workloads.py are loaded first (EVALSHA <sha>, FCALL).
# KEEP=path keeps the window's callgrind file there, for `callgrind_annotate --inclusive=yes` (by
# function, the loop and the transport included); the cron's ticks in the window are
# timer.c:uv__run_timers's (their number varies from run to run under callgrind's slowness).
# SERVER_ARGS adds options to the server's command line, e.g. SERVER_ARGS="--maxmemory 1gb";
# with "--cluster-enabled yes" the server is a one-node cluster given every slot first.
# TLS=1 drives the server's tls-port instead (redis-benchmark --tls with a client certificate, the
# certificates made for the run as bench.py --tls makes them); OpenSSL's own work is counted too.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYTHONHASHSEED=${PYTHONHASHSEED:-0}
p=$1; n=$2; shift 2
keys=100000; warm=2000
while [ "$1" != "--" ]; do
  case $1 in -r) keys=$2; shift 2 ;; -w) warm=$2; shift 2 ;; *) echo "unknown option $1" >&2; exit 2 ;; esac
done
shift
port=$("$PY" -c "from tests.support.servers import free_port; print(free_port())")
out=$(mktemp -d)
tls_server=(); tls_client=(); bport=$port
if [ -n "${TLS:-}" ]; then
  bport=$("$PY" -c "from tests.support.servers import free_port; print(free_port())")
  read -r -a tls_server < <("$PY" -c "import sys; from pathlib import Path; from tests.support.tlscerts import \
make_certs, tls_args; print(' '.join(tls_args(make_certs(Path(sys.argv[1])), int(sys.argv[2]))))" "$out" "$bport")
  tls_client=(--tls --cacert "$out/ca.crt" --cert "$out/client.crt" --key "$out/client.key")
fi
valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" "$PY" -m raxdb.server --port "$port" --bind 127.0.0.1 \
  --dir "$out" --save "" --appendonly no --hz 1 --slowlog-log-slower-than -1 --latency-monitor-threshold 0 \
  ${tls_server[@]+"${tls_server[@]}"} ${SERVER_ARGS:-} >"$out/log" 2>&1 &
vg=$!
for _ in $(seq 120); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 1; done
"$PY" - "$port" <<'EOF'
import sys
import redis
from bench.lua_workloads import setup_commands
r = redis.Redis(port=int(sys.argv[1]))
if r.info("cluster").get("cluster_enabled"):
    r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    while r.execute_command("CLUSTER", "INFO").decode().find("cluster_state:ok") < 0:
        r.execute_command("WAIT", 0, 100)
for cmd in setup_commands():
    r.execute_command(*cmd)
EOF
redis-benchmark -p "$bport" ${tls_client[@]+"${tls_client[@]}"} -c 50 -n "$warm" -P "$p" -r "$keys" "$@" >/dev/null
callgrind_control -z "$vg" >/dev/null 2>&1
redis-benchmark -p "$bport" ${tls_client[@]+"${tls_client[@]}"} -c 50 -n "$n" -P "$p" -r "$keys" "$@" >/dev/null
callgrind_control -d "$vg" >/dev/null 2>&1
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$vg" || true
total=$(callgrind_annotate "$(ls "$out"/cg.*.1 | head -1)" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
if [ -n "${KEEP:-}" ]; then cp "$(ls "$out"/cg.*.1 | head -1)" "$KEEP"; fi
rm -r "$out"
echo "$* -P $p${TLS:+ (TLS)}: $((total / n)) instructions/request (live, $n requests)"
