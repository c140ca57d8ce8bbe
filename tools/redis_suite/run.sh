#!/usr/bin/env bash
# Redis's own test suite (tests/unit/*.tcl and tests/integration/*.tcl of redis 7.0.15, from
# Debian's source package) against raxdb: a finder of differences, not part of `make test`.
#
#   tools/redis_suite/run.sh [unit ...]        e.g. tools/redis_suite/run.sh unit/type/stream integration/aof
#
# Needs tclsh and Debian's source repository (a deb-src entry is added if none is there).  The
# suite is unpacked under $WORK (default /tmp/redis-suite).  Most units run in the suite's
# external-server mode against a fresh raxdb each (their tests leave state behind when they fail).
# Units the suite marks external:skip (SPAWNED below: the AOF, ACL and multi-part AOF units) start
# their own servers: src/redis-server in the unpacked tree is a wrapper that runs raxdb-server with
# the suite's config files, so they test start-up, loading and restarts too (redis-cli and
# redis-check-aof are the system's).  Replication is not built: tests of propagation through a
# replica link and of replicas are skipped by name (skip.txt) and `needs:repl` ones by tag.  The
# report has one line per unit with its ok / err / exception counts; each unit's output is in
# $WORK/out/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WORK=${WORK:-/tmp/redis-suite}
PORT=${PORT:-7190}
VERSION=7.0.15
mkdir -p "$WORK/out"
# a tree unpacked by an older version of this script had DEBUG LOADAOF rewritten away: unpack anew
if [ -d "$WORK/redis-$VERSION" ] && ! grep -rqs "debug loadaof" "$WORK/redis-$VERSION/tests/unit"; then
  rm -rf "$WORK/redis-$VERSION"
fi
if [ ! -d "$WORK/redis-$VERSION" ]; then
  if ! grep -rqs "^Types: deb-src\|^deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      > /etc/apt/sources.list.d/raxdb-redis-src.sources
    apt-get update -qq
  fi
  (cd "$WORK" && apt-get source --download-only -qq redis >/dev/null && tar xzf redis_$VERSION.orig.tar.gz)
fi
# the suite's spawned servers are raxdb
mkdir -p "$WORK/redis-$VERSION/src"
printf '#!/bin/sh\nexec "%s/.venv/bin/raxdb-server" "$@"\n' "$root" > "$WORK/redis-$VERSION/src/redis-server"
chmod +x "$WORK/redis-$VERSION/src/redis-server"
for tool in redis-cli redis-check-aof redis-check-rdb redis-benchmark; do
  ln -sf "$(command -v $tool)" "$WORK/redis-$VERSION/src/$tool"
done
SPAWNED=" unit/aofrw unit/acl unit/acl-v2 integration/aof integration/aof-multi-part integration/failover "
units=("$@")
if [ ${#units[@]} -eq 0 ]; then
  units=(unit/type/stream unit/type/stream-cgroups unit/type/string unit/type/incr unit/type/list
         unit/type/list-2 unit/type/list-3 unit/type/hash unit/type/set unit/type/zset unit/expire
         unit/keyspace unit/scan unit/sort unit/bitops unit/bitfield unit/hyperloglog unit/multi
         unit/pubsub unit/tracking unit/scripting unit/functions unit/introspection unit/pause
         unit/protocol unit/info-command unit/latency-monitor unit/lazyfree unit/quit unit/dump unit/other
         unit/aofrw unit/acl unit/acl-v2 integration/aof integration/aof-multi-part)
fi
cd "$WORK/redis-$VERSION"
for unit in "${units[@]}"; do
  out="$WORK/out/$(echo "$unit" | tr / _).out"
  if [[ "$SPAWNED" == *" $unit "* ]]; then
    rm -rf tests/tmp/*
    timeout 900 ./runtest --single "$unit" --clients 1 --tags -needs:repl --timeout 120 \
      --skipfile "$here/skip.txt" > "$out" 2>&1
    echo "$unit ok=$(grep -c '\[.*ok.*\]' "$out") err=$(grep -c '^\[.*err.*\]' "$out") exception=$(grep -c '\[.*exception.*\]' "$out") (spawned)"
    continue
  fi
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1
  # its own directory: the suite's SAVE and DEBUG RELOAD write dump.rdb there
  mkdir -p "$WORK/data" && rm -f "$WORK/data/dump.rdb"
  (cd "$WORK/data" && setsid "$root/.venv/bin/raxdb-server" --port "$PORT" --save "" --enable-debug-command yes \
     --enable-protected-configs yes > "$WORK/out/server.log" 2>&1 &)
  for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  timeout 900 ./runtest --host 127.0.0.1 --port "$PORT" --single "$unit" --tags -needs:repl --timeout 120 \
    --skipfile "$here/skip.txt" > "$out" 2>&1
  echo "$unit ok=$(grep -c '\[.*ok.*\]' "$out") err=$(grep -c '^\[.*err.*\]' "$out") exception=$(grep -c '\[.*exception.*\]' "$out")"
done
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1
