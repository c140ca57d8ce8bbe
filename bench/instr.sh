#!/usr/bin/env bash
# Instructions per command on the hot path, deterministic (callgrind counts instructions, so other
# load on the machine does not move it).  Two runs differing only in the number of measured
# commands; their difference is divided out, so set-up and interpreter start-up cancel.  hotpath.py's
# --once turns the slow log and the latency monitor off: under callgrind commands run ~50x slower,
# and those crossing the slow log's 10 ms would run its interpreted code a load-dependent number of times.
# Usage: bench/instr.sh [WORKLOAD PIPELINE]   (workloads: bench/hotpath.py)
# Environment: N1, N2 the two runs' command counts (default 1600 and 9600; fewer for slow commands,
# e.g. N1=160 N2=960 for GEOSEARCH_10, N1=20 N2=120 for SET_1M and GET_1M; N1=100000 N2=300000
# for SET_PX, whose simulated cron ticks every 20,000 commands: both runs whole ticks, the first
# past the start, when no key has expired yet).
# INSTR_READS=1 counts only inside the client's read events (Client.data_received, compiled
# build; not a big argument's reads, server/net/bigread.py): the process's count outside them
# (start-up, the set-up's fill, the harness) is not the same from run to run, by ~17.5 million
# instructions between two runs of SET_10K_CUT at N 160, where the read events' counts differed
# by 72 thousand (docs/speed-log.md, 2026-11-28, h-read3), which swamps a workload of few
# commands (SET_10K_CUT: INSTR_READS=1 HOTPATH_LIGHT=1 N1=160 N2=960).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# A fixed hash seed: with a random one, dict layouts of the 100k-key set-up differ from run to run
# and the same code measured 6,380 to 10,783 instructions per GET; pinned, two trees agree to 0.1%.
export PYTHONHASHSEED=${PYTHONHASHSEED:-0}
w=${1:-SET}; p=${2:-16}
collect=()
if [ -n "${INSTR_READS:-}" ]; then collect=(--toggle-collect='*6Client_*data_received'); fi
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "${collect[@]}" "$PY" bench/hotpath.py --once "$w" "$p" "$1" 2000 2>&1 \
    | awk '/Collected/ {print $4}'
}
# both runs at once: callgrind is single-threaded and each takes minutes
n1=${N1:-1600}; n2=${N2:-9600}
tmp=$(mktemp -d); count "$n1" >"$tmp/a" & count "$n2" >"$tmp/b"; wait
a=$(cat "$tmp/a"); b=$(cat "$tmp/b"); rm -r "$tmp"
echo "$w -P $p: $(( (b - a) / (n2 - n1) )) instructions/command"
