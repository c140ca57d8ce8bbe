"""Differential fuzzing of CONFIG SET / CONFIG GET: random values for random options, one to three
pairs per SET (aliases and upper case among the names), every reply compared with redis-server
7.0, then each option read back.

Its value pool holds what trips C parsers: unit suffixes, percentages, signs, spaces, values at
and past every integer width, hex, several words for one-word options.  This is how the size_t
bounds, the percent reading of wrapped byte counts, the alias-is-not-a-duplicate rule, the
backlog's 16 KiB floor and strtod's hex percentiles were found.

Left out: options whose change would disturb the test itself or the machine (ports, binds,
directories and files, passwords, client limits and timeouts, persistence that writes files,
TLS files, watchdog, OOM score), and the ones the rest of the suite relies on.  Every option is
set back to its value from before the test.
"""

from __future__ import annotations

import random

import pytest

from tests.support.diff import RawConnection, parse

SKIP = {"port", "bind", "unixsocket", "unixsocketperm", "dir", "logfile", "requirepass", "maxclients", "timeout",
        "client-output-buffer-limit", "appendonly", "save", "maxmemory", "watchdog-period", "tls-port",
        "tls-cluster", "tls-replication", "slaveof", "replicaof", "masterauth", "masteruser", "proto-max-bulk-len",
        "client-query-buffer-limit", "pidfile", "dbfilename", "appendfilename", "appenddirname", "oom-score-adj",
        "oom-score-adj-values", "enable-protected-configs", "enable-debug-command", "enable-module-command",
        "protected-mode", "busy-reply-threshold", "lua-time-limit", "bind-source-addr", "repl-diskless-sync",
        "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-dh-params-file",
        "tls-client-cert-file", "tls-client-key-file", "tls-key-file-pass", "tls-client-key-file-pass",
        "shutdown-timeout", "socket-mark-id", "aclfile", "ignore-warnings", "io-threads",
        "notify-keyspace-events"}
VALUES = ["yes", "no", "0", "1", "-1", "2", "100", "1k", "1kb", "2mb", "1gb", "1GB", "10%", "-10%", "abc", "",
          "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615",
          "18446744073709551616", "4294967295", "4294967296", "2147483647", "2147483648", "-2147483648",
          "-2147483649", "always", "everysec", "allkeys-lru", "volatile-lfu", "noeviction", "debug", "notice",
          "warning", "verbose", "local", "2 3", "0 0", "1.5", "0x10", "100 200 300", "+5", " 5", "5 ", "512",
          "65535", "65536", "1000000", "-5", "1b", "1.5mb", "yes no", "replica", "sync", "async", "on", "off",
          "true", "YES", "NO", "hello", "master", "1mb", "0b", "101%", "100%", "1e1", "inf", "nan"]
SEEDS = 24
STEPS = 60


def _all(conn: RawConnection) -> dict[bytes, bytes]:
    flat = parse(conn.call("CONFIG", "GET", "*"))
    return dict(zip(flat[::2], flat[1::2], strict=True))


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_config_set(seed, raxdb, oracle):
    conns = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    before = [_all(c) for c in conns]
    names = sorted(n.decode() for n in before[1] if n.decode() not in SKIP)
    r = random.Random(seed)
    try:
        for _ in range(STEPS):
            args: list[str] = []
            for _ in range(r.choice([1, 1, 1, 2, 3])):
                name = r.choice(names)
                value = r.choice(VALUES) if r.random() < 0.85 else f"{r.choice(VALUES)} {r.choice(VALUES)}"
                args += [name.upper() if r.random() < 0.1 else name, value]
            for cmd in (["CONFIG", "SET", *args], *(["CONFIG", "GET", n] for n in args[::2])):
                ours, theirs = (c.call(*cmd) for c in conns)
                assert ours == theirs, f"seed {seed}: {cmd}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    finally:
        for c, old in zip(conns, before, strict=True):
            for name, value in _all(c).items():
                if value != old.get(name, value) and name.decode() not in SKIP:
                    c.call("CONFIG", "SET", name, old[name])
            c.close()
