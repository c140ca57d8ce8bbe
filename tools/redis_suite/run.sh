#!/usr/bin/env bash
# Redis's own test suite (tests/unit/*.tcl and tests/integration/*.tcl of redis 7.0.15, from
# Debian's source package) against raxdb: a finder of differences, not part of `make test`.
#
#   tools/redis_suite/run.sh [unit ...]        e.g. tools/redis_suite/run.sh unit/type/stream integration/aof
#   TLS=1 tools/redis_suite/run.sh unit/tls unit/type/incr     the suite's TLS mode (runtest --tls)
#   CLUSTER=1 tools/redis_suite/run.sh                          the cluster units and runtest-cluster
#   tools/redis_suite/run.sh unit/cluster/misc cluster/00-base  one cluster unit, one runtest-cluster file
#
# Redis Cluster: the spawned units of tests/unit that start cluster-enabled servers (unit/cluster,
# unit/cluster-scripting, unit/cluster/misc, links, announced-endpoints; tagged external:skip, so
# spawned), and runtest-cluster's suite (tests/cluster/tests/NN-name.tcl, named cluster/NN-name
# here): it spawns src/redis-server (the raxdb wrapper) with a config file per instance, so every
# node is a raxdb.  runtest-cluster has no option for its base port or its instance count: the
# unpacked tree's tests/instances.tcl and tests/cluster/run.tcl read them from CLUSTER_BASEPORT
# (default 30000; here BASEPORT + PORTCOUNT/2, the upper half of the units' range) and
# CLUSTER_INSTANCES (the suite's 20; here each file gets what its clusters need, 10 for most: see
# cluster_instances below).  A runtest-cluster file stops
# at its first failing test ("Jumping to next unit"), so its report line has ok, the failed
# test's name.  Files that cannot work yet are skipped (skip-cluster.txt, each with its reason)
# unless named.  Ports: the units use BASEPORT .. BASEPORT+PORTCOUNT-1 (PORTCOUNT default 8000,
# the suite's), their cluster buses 10000 above.  The per-test results table of the cluster
# suites is docs/testing.md's "Redis Cluster's suites".
#
# TLS=1: the certificates are the suite's own (utils/gen-test-certs.sh, made once in the unpacked
# tree; needs the openssl command and Tcl's tls package, Debian's tcl-tls), runtest gets --tls,
# and the external raxdb listens on a TLS port only (port 0) with the options the suite gives its
# spawned servers (server, client and CA certificates, DH params, tls-replication and tls-cluster).
# The tests that cannot work over TLS yet are skipped by name (skip-tls.txt, each with its reason).
#
# Needs tclsh and redis 7.0.15's source: $SRC (default /work/redis-src/redis_7.0.15.orig.tar.gz) if it
# is there, else Debian's source repository (a deb-src entry is added if none is there).  The
# suite is unpacked under $WORK (default /tmp/redis-suite).  The raxdb under test is the checkout
# this script is in ($RAXDB overrides it, e.g. an exported older commit), run by $PY (default the
# checkout's .venv, else /work/main/.venv) with PYTHONPATH set to it, so a git worktree tests
# itself.  Each unit gets $UNIT_TIMEOUT seconds (default 900); two runs at once need their own
# WORK, PORT and BASEPORT.  Most units run in the suite's
# external-server mode against a fresh raxdb each (their tests leave state behind when they fail);
# SPAWN_ALL=1 spawns every unit's servers, which also runs its tests tagged external:skip.
# Units the suite marks external:skip (SPAWNED below: the AOF, ACL and multi-part AOF units, and
# OWN: those whose every server needs overrides, restarts or signals) start their own servers:
# src/redis-server in the unpacked tree is a wrapper that runs raxdb-server with the suite's
# config files, so they test start-up, loading and restarts too (redis-cli and
# redis-check-aof are the system's).  The replication units (integration/replication*, psync2*,
# block-repl, failover) are spawned too: their masters and replicas are all raxdb.  Tests that
# still cannot work are skipped by name (skip.txt,
# each with its reason).  The
# report has one line per unit with its ok / err / exception counts; each unit's output is in
# $WORK/out/.
#
# Every unit but the cluster, module, TLS and integration/replication, psync2-reg ones: 78 units,
# 54 passing whole before, 63 after (2026-11-22, ok/err/exception; before = 12ca3f4, after = the
# sweep's fixes; a loaded 2-core machine).  The units not in the table pass whole, before and
# after: type/string, list, list-2, list-3, hash, zset, stream-cgroups, expire, keyspace, scan,
# sort, bitops, bitfield, hyperloglog, multi, pubsub, functions, introspection, introspection-2,
# pause, protocol, info-command, latency-monitor, quit, dump, other, slowlog, geo, auth, wait,
# pubsubshard, limits, violations, aofrw, acl, acl-v2, aof-multi-part, redis-cli, redis-benchmark,
# dismiss-mem, corrupt-dump-fuzzer, the three convert-*-on-load units, replication-2, -3, -4,
# replication-psync, psync2, psync2-pingoff, psync2-master-restart, block-repl and failover (13).
#   unit                       before    after     what is left
#   unit/type/incr             24/1/0    25/0/0
#   unit/scripting             60/0/1    270/0/0   (unpack() of 7999 arguments stopped the unit)
#   unit/type/stream           70/2/0    72/0/0
#   unit/type/set              87/0/1    98/0/0    DEBUG HTSTATS-KEY's test skipped (skip.txt)
#   unit/oom-score-adj         2/3/0     5/0/0
#   unit/shutdown              1/0/1     8/0/0
#   integration/shutdown       0/0/0 (timeout)  5/0/0
#   integration/rdb            10/4/0    12/2/0    'client freed during loading' (the loading
#                                                  state: not this sweep's), 'Test child sending
#                                                  info' (the child's COW figures: not built);
#                                                  14/0/0 since both were built (2026-11-23)
#   unit/networking            2/2/1     3/1/1     then raxdb's default bind was 127.0.0.1 -::1;
#                                                  Redis's built-in * -::* since: 5/0/0
#   integration/aof            39/1/0    40/0/0
#   integration/corrupt-dump   13/29/1   16/26/1   Redis's 'integrity check failed' log lines
#                                                  (reported since, as Redis words them: 37/5/1);
#                                                  RESTORE always validates, so the tests that
#                                                  expect sanitize-dump-payload no to accept
#                                                  (and Redis to crash later) do not apply
#   unit/obuf-limits           4/3/0 (timeout)  4/4/0  (8/0/0 since the limit is checked before a
#                                                  flush writes, 2026-11-23) a normal client's limit counts what the
#                                                  kernel has not taken, so a reply the socket
#                                                  absorbs is sent; KEYS does not stop mid-reply
#                                                  (HRANDFIELD's test skipped: skip.txt; 9/0/0
#                                                  since random picks stop at the limit)
#   unit/info                  16/1/0    16/1/0    fast commands are timed 1 call in 8: the first
#                                                  SET after latency-tracking is turned on was not
#                                                  (timed since, and INFO latencystats empty while
#                                                  tracking is off, as Redis: 17/0/0)
#   unit/tracking              53/1/0    53/1/0    the eviction test needs Redis's used_memory
#                                                  (54/0/0 since used_memory is Redis's figure
#                                                  without a limit too, 2026-11-23)
#   unit/maxmemory             3/6/0     3/6/0     client buffers in used_memory (not modelled;
#                                                  9/0/0 since they are, 2026-11-23; 25/0/0 with
#                                                  used_memory modelled without a limit too)
#   unit/memefficiency         4/1/0     5/0/0     Python's per-key overhead: the 32-byte ratio
#                                                  sits at its bound (5/0/0 for good since
#                                                  used_memory is Redis's figure, 2026-11-23)
#   unit/lazyfree              4/0/0     3/1/0     RSS does not fall after FLUSHDB ASYNC (varies;
#                                                  4/0/0 since used_memory is not RSS, 2026-11-23)
#   unit/querybuf              0/2/0     0/2/0     CLIENT LIST qbuf/qbuf-free: not modelled
#                                                  (2/0/0 since server/conn/clientbufs.py, 2026-11-23)
#   unit/replybufsize          0/0/1     0/0/1     DEBUG REPLYBUFFER, rbs/rbp: not built
#                                                  (1/0/0 since server/conn/clientbufs.py, 2026-11-23)
#   unit/pendingquerybuf       0/1/0     0/1/0     a replica's used_memory figure (1/0/0 since
#                                                  used_memory is Redis's figure, 2026-11-23)
#   unit/client-eviction       0/1/0 (timeout)  14/1/0 (2026-11-23, maxmemory-clients built): the test
#                                                  of the output limit's precedence needs replies
#                                                  the kernel took counted (README); 15/0/0
#                                                  since limits are checked before writes
#   integration/logging        0/2/0     0/2/0     crash reports (SIGABRT, DEBUG SEGFAULT): not built
#   integration/aof-race       0/0/1     0/0/1     redis-benchmark -s: unix sockets (not this sweep's)
#   integration/replication-buffer 3/5/0 4/4/0   the backlog did not outgrow repl-backlog-size
#                                                  into Redis 7's shared replication buffer;
#                                                  8/0/0 since it does (2026-11-23)
#   unit/printver 0/0/0: it only prints the version.
#
# When replication landed (before = ffeaeb1, after = its fixes):
#   integration/replication    30/0/1    35/4/0    no loading/async_loading state while a payload
#                                                  loads (built since: see the loading table below);
#                                                  'diskless loading short read' (dozens of full
#                                                  syncs of a large dataset) outruns the 120 s test
#                                                  timeout, which ends the unit
#   integration/replication-2  5/0/1     7/0/0
#   integration/replication-3  3/4/0     7/0/0
#   integration/replication-4  14/0/1    16/0/0
#   integration/replication-psync 60/0/0 60/0/0
#   integration/replication-buffer 3/5/0 2/6/0     Redis 7's shared replication buffer and its
#                                                  memory figures are not built (the one that
#                                                  flips compares used_memory noise with 0)
#   integration/psync2         52/0/0    52/0/0
#   integration/psync2-reg     17/0/1    19/0/1    redis-benchmark -s: unix sockets not built then
#                                                  (served now: see below; the test counts vary:
#                                                  its kills are random)
#   integration/psync2-pingoff 6/0/0     6/0/0
#   integration/psync2-master-restart 0/2/1 4/0/0
#   integration/block-repl     2/0/0     2/0/0
#   integration/failover       (FAILOVER not built)  12/0/0
#   unit/multi                 59/1/0    60/0/0
#   unit/pause                 13/1/0    14/0/0
#   unit/slowlog               15/1/0    16/0/0
#   unit/type/list 240/0/0, unit/expire 66/0/0, unit/functions 94/0/0, unit/type/stream-cgroups
#   51/0/0, unit/type/string 76/0/0, unit/type/zset 312/0/0, unit/introspection 28/0/0: all pass,
#   before and after.  unit/maxmemory runs nothing here (all external:skip).
#
# Unix sockets (before = 12ca3f4, after = `unixsocket` served; 2026-11-22; the suite gives every
# spawned server a unixsocket; unit/networking and integration/aof-race are spawned since):
#   unit                       before    after     what is left
#   integration/psync2-reg     29/0/1    22/0/0    the exception was redis-benchmark -s failing at
#                                        24/0/0    once (its kill found no process)
#   integration/aof-race       0/0/1     0/0/1     before, redis-benchmark -s reached nothing; now the
#                                                  first server's 20000 INCRs check, and the restart
#                                                  finds the AOF gone (the suite's clean_persistence
#                                                  removes it: redis-server 7.0.15 fails the same
#                                                  way; the unit is not in 7.0's test list)
#   unit/networking            2/2/1     2/2/1     the default bind (fixed later: 5/0/0, above)
#
# Serving clients while loading (server/persistence/loading.py; before = 12ca3f4, after = h/loading, 2026-11-22):
#   integration/replication    35/4/0    39/0/0    the 4 were the async_loading tests (old dataset
#                                                  served, BUSY script, -LOADING configs while a
#                                                  swapdb payload loads); one run of three gave
#                                                  38/1/0: 'new database is exposed after
#                                                  swapping' read the old value, the replica still
#                                                  reporting the link up from before the master's
#                                                  CLIENT KILL (a race, not reproduced).  The unit
#                                                  still ends at the 120 s timeout in 'diskless
#                                                  loading short read'.  With --timeout 600 (runtest directly)
#                                                  that test passes in 138 s (278 s before) and the
#                                                  unit reaches 55/4/0 (37/8/1 before; the four
#                                                  'replicas drop during rdb pipe' pass now): left
#                                                  are a master's repl-timeout on a replica stalled
#                                                  in a pipe transfer, killing a BGSAVE no replica
#                                                  waits for any more, the watchdog (EINTR test),
#                                                  and a master's error line to its replica.
#                                                  2026-11-23, --timeout 600 on a quiet machine: 56/3/0
#                                                  before that session's fixes (the three failing
#                                                  were the slow, all and timeout replicas dropping
#                                                  during a pipe transfer: a replica told to shut
#                                                  down mid-payload waited for the whole payload),
#                                                  58/1/0 after them (the four above built, and the
#                                                  shutdown acted on between the payload's reads).
#                                                  Left: 'diskless timeout replicas drop' expects
#                                                  "done reading from pipe, 1 replicas still up"
#                                                  after the stalled replica's timeout; a raxdb
#                                                  replica reads a diskless payload whole before
#                                                  parsing it, so it is never the slow reader the
#                                                  test makes of it.  59/0/0 since (2026-11-23,
#                                                  --timeout 600): the payload is parsed as it
#                                                  arrives, and a master no longer times out the
#                                                  fast replica that waits on the stalled one
# Every external-mode unit spawned (SPAWN_ALL=1, 2026-11-23; its external:skip tests run too):
#   before this session's fixes: type/stream 70/2/0 (DEBUG LOADAOF behind an fsync), scripting
#   304/2/0 (then a hang: a busy script never saw its replica leave), functions 95/1/1,
#   introspection 22/0/1 (DEBUG CONFIG-REWRITE-FORCE-ALL), pause 15/1/0 (a replica's master
#   stream under CLIENT PAUSE), dump 25/1/0 (migrate_cached_sockets), other 24/0/1 (DEBUG
#   HTSTATS: skipped since, with the process title's test); the other 30 pass whole.  After:
#   type/stream 72, scripting 306, functions 109, introspection 43, pause 16, dump 26, other 24.
#   integration/rdb 'client freed during loading', unit/introspection 'config during loading'
#                              err       ok        both external:skip here: run spawned with
#                                                  runtest --single ... --only '<test>'
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${RAXDB:-$(cd "$here/../.." && pwd)}
PY=${PY:-$root/.venv/bin/python}
[ -x "$PY" ] || PY=/work/main/.venv/bin/python
SRC=${SRC:-/work/redis-src/redis_7.0.15.orig.tar.gz}
WORK=${WORK:-/tmp/redis-suite}
PORT=${PORT:-7190}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-900}
BASEPORT=${BASEPORT:-21111}  # the suite's own ports start here; two runs at once need their own
PORTCOUNT=${PORTCOUNT:-8000}  # ... and span this many (cluster buses are 10000 above them)
CLUSTER_BASEPORT=${CLUSTER_BASEPORT:-$((BASEPORT + PORTCOUNT / 2))}  # runtest-cluster's instances
VERSION=7.0.15
mkdir -p "$WORK/out"
# a tree unpacked by an older version of this script had DEBUG LOADAOF rewritten away: unpack anew
if [ -d "$WORK/redis-$VERSION" ] && ! grep -rqs "debug loadaof" "$WORK/redis-$VERSION/tests/unit"; then
  rm -rf "$WORK/redis-$VERSION"
fi
if [ ! -d "$WORK/redis-$VERSION" ] && [ -f "$SRC" ]; then
  tar xzf "$SRC" -C "$WORK"
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
printf '#!/bin/sh\nPYTHONPATH="%s" exec "%s" -m raxdb.server "$@"\n' "$root" "$PY" > "$WORK/redis-$VERSION/src/redis-server"
chmod +x "$WORK/redis-$VERSION/src/redis-server"
for tool in redis-cli redis-check-aof redis-check-rdb redis-benchmark; do
  ln -sf "$(command -v $tool)" "$WORK/redis-$VERSION/src/$tool"
done
# runtest-cluster: its base port and instance count from the environment (it has no option for them)
sed -i 's/^set ::redis_base_port 30000$/set ::redis_base_port [expr {[info exists ::env(CLUSTER_BASEPORT)] ? $::env(CLUSTER_BASEPORT) : 30000}]/
        s/^set ::redis_port_count 1024$/set ::redis_port_count [expr {[info exists ::env(CLUSTER_PORTCOUNT)] ? $::env(CLUSTER_PORTCOUNT) : 1024}]/' \
  "$WORK/redis-$VERSION/tests/instances.tcl"
sed -i 's/^set ::instances_count 20 ;/set ::instances_count [expr {[info exists ::env(CLUSTER_INSTANCES)] ? $::env(CLUSTER_INSTANCES) : 20}] ;/' \
  "$WORK/redis-$VERSION/tests/cluster/run.tcl"
# the instances a runtest-cluster file needs: its largest cluster (masters + replicas), at least 10;
# 27-endpoints and 28-cluster-shards count on the suite's 20 (their instance 19, "21 lines")
cluster_instances() {
  case "$1" in
    *05-slave-selection) echo 18 ;;
    *07-replica-migration) echo 15 ;;
    *12-replica-migration-2|*12.1-replica-migration-3|*15-cluster-slots|*27-endpoints|*28-cluster-shards) echo 20 ;;
    *) echo 10 ;;
  esac
}
CLUSTER_UNITS="unit/cluster unit/cluster-scripting unit/cluster/misc unit/cluster/links unit/cluster/announced-endpoints"
REPL="integration/replication integration/replication-2 integration/replication-3 integration/replication-4
      integration/replication-psync integration/replication-buffer integration/psync2 integration/psync2-reg
      integration/psync2-pingoff integration/psync2-master-restart integration/block-repl integration/failover"
# units whose servers all need overrides or restarts the external mode cannot give (external:skip)
OWN="unit/auth unit/client-eviction unit/limits unit/maxmemory unit/obuf-limits unit/oom-score-adj
     unit/pubsubshard unit/shutdown unit/wait unit/networking unit/info unit/memefficiency
     unit/pendingquerybuf unit/violations integration/aof-race integration/rdb integration/convert-ziplist-hash-on-load
     integration/convert-ziplist-zset-on-load integration/convert-zipmap-hash-on-load integration/corrupt-dump
     integration/corrupt-dump-fuzzer integration/dismiss-mem integration/logging integration/redis-benchmark
     integration/shutdown"
# unit/tls: its replica test overrides tls-cert-file and omits the client certificate, which only
# a server started for it can take (a CONFIG SET of the certificate alone fails on its old key)
SPAWNED=" unit/aofrw unit/acl unit/acl-v2 unit/tls integration/aof integration/aof-multi-part $(echo $REPL) $(echo $OWN) $CLUSTER_UNITS "
units=("$@")
if [ ${#units[@]} -eq 0 ] && [ -n "${CLUSTER:-}" ]; then
  units=($CLUSTER_UNITS)
  for f in "$WORK/redis-$VERSION"/tests/cluster/tests/*.tcl; do
    name=$(basename "$f" .tcl)
    if grep -qx "$name" "$here/skip-cluster.txt"; then echo "cluster/$name skipped (skip-cluster.txt)"; continue; fi
    units+=("cluster/$name")
  done
elif [ ${#units[@]} -eq 0 ]; then
  units=(unit/type/stream unit/type/stream-cgroups unit/type/string unit/type/incr unit/type/list
         unit/type/list-2 unit/type/list-3 unit/type/hash unit/type/set unit/type/zset unit/expire
         unit/keyspace unit/scan unit/sort unit/bitops unit/bitfield unit/hyperloglog unit/multi
         unit/pubsub unit/tracking unit/scripting unit/functions unit/introspection unit/pause
         unit/protocol unit/info-command unit/latency-monitor unit/lazyfree unit/quit unit/dump unit/other
         unit/aofrw unit/acl unit/acl-v2 integration/aof integration/aof-multi-part unit/slowlog unit/geo
         unit/introspection-2 unit/querybuf unit/replybufsize unit/printver integration/redis-cli $REPL $OWN)
fi
cd "$WORK/redis-$VERSION"
tlsflag=() cli=(redis-cli -p "$PORT") listen=(--port "$PORT")
if [ -n "${TLS:-}" ]; then
  [ -f tests/tls/redis.dh ] || ./utils/gen-test-certs.sh >/dev/null 2>&1
  t="$WORK/redis-$VERSION/tests/tls"
  tlsflag=(--tls)
  while IFS= read -r name; do  # skip-tls.txt's names, after skip.txt's (--skiptest appends)
    [[ -z "$name" || "$name" == \#* ]] || tlsflag+=(--skiptest "$name")
  done < "$here/skip-tls.txt"
  cli=(redis-cli -p "$PORT" --tls --cacert "$t/ca.crt" --cert "$t/client.crt" --key "$t/client.key")
  listen=(--port 0 --tls-port "$PORT" --tls-cert-file "$t/server.crt" --tls-key-file "$t/server.key"
          --tls-client-cert-file "$t/client.crt" --tls-client-key-file "$t/client.key" --tls-dh-params-file "$t/redis.dh"
          --tls-ca-cert-file "$t/ca.crt" --tls-replication yes --tls-cluster yes)
fi
for unit in "${units[@]}"; do
  out="$WORK/out/$(echo "$unit" | tr / _).out"
  if [[ "$unit" == cluster/* ]]; then
    name=${unit#cluster/}
    rm -rf tests/cluster/tmp/*
    CLUSTER_BASEPORT=$CLUSTER_BASEPORT CLUSTER_PORTCOUNT=$((PORTCOUNT / 2)) \
      CLUSTER_INSTANCES=${CLUSTER_INSTANCES:-$(cluster_instances "$name")} \
      timeout "$UNIT_TIMEOUT" ./runtest-cluster --single "$name.tcl" ${TLS:+--tls} > "$out" 2>&1
    # ok counts the "(init)" tests every file starts with too; a file stops at its first failure
    plain=$(sed 's/\x1b\[[0-9;]*m//g' "$out")
    ok=$(grep -c '^[0-9:]*> .*: OK$' <<< "$plain")
    failed=$(grep -m1 'FAILED' <<< "$plain")
    whole=$(grep -q '^GOOD! No errors.$' <<< "$plain" && echo " (whole)")
    echo "$unit ok=$ok$whole${failed:+ failed: $failed}"
    continue
  fi
  if [[ -n "${SPAWN_ALL:-}" || "$SPAWNED" == *" $unit "* ]]; then
    rm -rf tests/tmp/*
    timeout "$UNIT_TIMEOUT" ./runtest --single "$unit" --clients 1 --timeout 120 --baseport "$BASEPORT" --portcount "$PORTCOUNT" \
      --skipfile "$here/skip.txt" "${tlsflag[@]}" > "$out" 2>&1
    echo "$unit ok=$(grep -c '\[.*ok.*\]' "$out") err=$(grep -c '^\[.*err.*\]' "$out") exception=$(grep -c '\[.*exception.*\]' "$out") (spawned)"
    continue
  fi
  "${cli[@]}" shutdown nosave >/dev/null 2>&1
  # its own directory: the suite's SAVE and DEBUG RELOAD write dump.rdb there
  mkdir -p "$WORK/data" && rm -f "$WORK/data/dump.rdb"
  (cd "$WORK/data" && PYTHONPATH="$root" setsid "$PY" -m raxdb.server "${listen[@]}" --save "" --enable-debug-command yes \
     --enable-protected-configs yes > "$WORK/out/server.log" 2>&1 &)
  for _ in $(seq 100); do "${cli[@]}" ping >/dev/null 2>&1 && break; sleep 0.1; done
  timeout "$UNIT_TIMEOUT" ./runtest --host 127.0.0.1 --port "$PORT" --single "$unit" --timeout 120 --baseport "$BASEPORT" --portcount "$PORTCOUNT" \
    --skipfile "$here/skip.txt" "${tlsflag[@]}" > "$out" 2>&1
  echo "$unit ok=$(grep -c '\[.*ok.*\]' "$out") err=$(grep -c '^\[.*err.*\]' "$out") exception=$(grep -c '\[.*exception.*\]' "$out")"
done
"${cli[@]}" shutdown nosave >/dev/null 2>&1
