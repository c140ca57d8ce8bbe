#!/bin/sh
# The Lua target with the C bridge (server/scripting/cbridge.pyx, cbridge_lua.h) built under
# AddressSanitizer and UBSan: `tests/fuzz/targets/asan_cbridge.sh [SECONDS]` (default 300).
# The C that Cython generated for the normal build (build/cython/..., `make build` first) is
# compiled again with -fsanitize=address,undefined into build/asan/, the sanitizers' runtimes are
# preloaded (the interpreter is not built with them), and the lua target loads that cbridge in
# place of the normal one (RAXDB_FUZZ_CBRIDGE, tests/fuzz/targets/common.py).  Leak detection is
# off: the interpreter's own allocations at exit are not the bridge's.  A sanitizer report stops
# the run (-fno-sanitize-recover) and is in build/fuzz/lua-asan.log.
set -eu
cd "$(dirname "$0")/../../.."
PY=${PY:-.venv/bin/python}
SECONDS_=${1:-300}
SRC=build/cython/raxdb/server/scripting/cbridge.c
[ -f "$SRC" ] || { echo "no $SRC: run make build first" >&2; exit 1; }
INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SUFFIX=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
mkdir -p build/asan build/fuzz
OUT=build/asan/cbridge$SUFFIX
${CC:-gcc} -shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
  -fno-sanitize-recover=all -I"$INC" -I"$(dirname "$PY")/../include" -Iserver/scripting "$SRC" -o "$OUT"
RT="$(${CC:-gcc} -print-file-name=libasan.so) $(${CC:-gcc} -print-file-name=libubsan.so)"
echo "asan_cbridge: $OUT built; the lua target for $SECONDS_ s (build/fuzz/lua-asan.log)"
LD_PRELOAD="$RT" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 RAXDB_FUZZ_CBRIDGE="$OUT" \
  nice -n 19 "$PY" -m tests.fuzz.targets.run lua --seconds "$SECONDS_" --work build/fuzz/asan \
  > build/fuzz/lua-asan.log 2>&1 || { tail -60 build/fuzz/lua-asan.log; exit 1; }
grep -h '^Done' build/fuzz/lua-asan.log
