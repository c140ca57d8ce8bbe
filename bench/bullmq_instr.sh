#!/usr/bin/env bash
# Instructions per BullMQ job, deterministic: bench/bullmq_hot.py under callgrind with 1 and 4
# measured rounds, the difference divided by 3 rounds' jobs (set-up and warm-up cancel).
# Usage: bench/bullmq_instr.sh COMMANDS.json   (from `bench/bullmq_replay.py --jobs 300 --save FILE`)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYTHONHASHSEED=${PYTHONHASHSEED:-0}  # as instr.sh: pinned dict layouts
cmds=${1:?usage: bench/bullmq_instr.sh COMMANDS.json}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PY" bench/bullmq_hot.py "$cmds" "$1" 2>&1 \
    | awk '/Collected/ {print $4} / jobs a round/ {print $1 > "/dev/stderr"}'
}
tmp=$(mktemp -d); count 1 >"$tmp/a" 2>"$tmp/jobs" & count 4 >"$tmp/b" 2>/dev/null; wait
a=$(cat "$tmp/a"); b=$(cat "$tmp/b"); jobs=$(cat "$tmp/jobs"); rm -r "$tmp"
echo "BullMQ: $(( (b - a) / (3 * jobs) )) instructions/job ($jobs jobs a round)"
