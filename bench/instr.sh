#!/usr/bin/env bash
# Instructions per command on the hot path, deterministic (callgrind counts instructions, so other
# load on the machine does not move it).  Usage: bench/instr.sh [WORKLOAD PIPELINE]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
w=${1:-SET}; p=${2:-16}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PY" bench/hotpath.py --once "$w" "$p" "$1" 2>&1 \
    | awk '/Collected/ {print $4}'
}
a=$(count 2000); b=$(count 12000)
echo "$w -P $p: $(( (b - a) / 10000 )) instructions/command"
