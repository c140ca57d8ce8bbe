"""Configuration: redis.conf syntax, command-line options, CONFIG GET / SET semantics.

The set of options and their defaults are Redis 7.0's (`config_defaults.json`, read from
`CONFIG GET *` of redis-server 7.0 with the start-up-specific values reset), so tools that read
configuration see what they expect.  Each option has a kind that validates and normalises values
the way Redis's config.c does (booleans yes/no, memory sizes with k/kb/m/mb/g/gb units, bounded
integers, enums); options raxdb does not act upon are still stored and reported.

Values are kept as their CONFIG GET strings in `values`; typed views the server reads often
(port, hz, databases, limits) are attributes refreshed on every change, and `on_change` hooks let
the server react (e.g. hz retimes the cron task).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources

from protocol.request import split_inline_args

_MEM_UNITS = {b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2, b"g": 1000**3, b"gb": 1024**3, b"b": 1}


class ConfigError(Exception):
    pass


def parse_memory(v: bytes) -> int | None:
    """memtoull: a number with an optional unit, case-insensitive; None when malformed."""
    s = v.strip().lower()
    i = len(s)
    while i > 0 and not (48 <= s[i - 1] <= 57):
        i -= 1
    num, unit = s[:i], s[i:]
    if unit and unit not in _MEM_UNITS:
        return None
    if not num or (num[0] == 45 and len(num) > 1):
        return None
    try:
        n = int(num)
    except ValueError:
        return None
    if n < 0:
        return None
    return n * _MEM_UNITS.get(unit, 1)


def _bool(v: bytes) -> str:
    low = v.lower()
    if low == b"yes":
        return "yes"
    if low == b"no":
        return "no"
    raise ConfigError("argument must be 'yes' or 'no'")


def _int(lo: int, hi: int) -> Callable[[bytes], str]:
    def check(v: bytes) -> str:
        try:
            n = int(v)
        except ValueError:
            raise ConfigError("argument couldn't be parsed into an integer") from None
        if not lo <= n <= hi:
            raise ConfigError(f"argument must be between {lo} and {hi} inclusive")
        return str(n)

    return check


def _mem(lo: int = 0, hi: int = 2**63 - 1) -> Callable[[bytes], str]:
    def check(v: bytes) -> str:
        n = parse_memory(v)
        if n is None:
            raise ConfigError("argument must be a memory value")
        if not lo <= n <= hi:
            raise ConfigError(f"argument must be between {lo} and {hi} inclusive")
        return str(n)

    return check


def _enum(*names: str) -> Callable[[bytes], str]:
    def check(v: bytes) -> str:
        s = v.decode(errors="replace").lower()
        if s not in names:
            raise ConfigError("argument(s) must be one of the following: " + ", ".join(names))
        return s

    return check


def _save(v: bytes) -> str:
    parts = v.split()
    if len(parts) % 2:
        raise ConfigError("Invalid save parameters")
    for p in parts:
        if not p.isdigit():
            raise ConfigError("Invalid save parameters")
    return " ".join(str(int(p)) for p in parts)


def _string(v: bytes) -> str:
    return v.decode(errors="surrogateescape")


def _client_output_buffer_limit(v: bytes) -> str:
    parts = v.split()
    if len(parts) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    current = dict(_split_cobl(DEFAULT_COBL))
    for i in range(0, len(parts), 4):
        cls = parts[i].lower().decode(errors="replace")
        if cls == "replica":
            cls = "slave"
        if cls not in current:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = parse_memory(parts[i + 1]), parse_memory(parts[i + 2])
        try:
            secs = int(parts[i + 3])
        except ValueError:
            secs = -1
        if hard is None or soft is None or secs < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        current[cls] = (hard, soft, secs)
    return " ".join(f"{c} {h} {s} {t}" for c, (h, s, t) in current.items())


DEFAULT_COBL = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


def _split_cobl(v: str) -> list[tuple[str, tuple[int, int, int]]]:
    p = v.split()
    return [(p[i], (int(p[i + 1]), int(p[i + 2]), int(p[i + 3]))) for i in range(0, len(p), 4)]


_BOOLS = {"yes", "no"}

# Options with a validator; everything else in the defaults is free-form text.
KINDS: dict[str, Callable[[bytes], str]] = {
    "port": _int(0, 65535),
    "tcp-backlog": _int(0, 2**31 - 1),
    "databases": _int(1, 2**31 - 1),
    "hz": _int(0, 2**31 - 1),
    "timeout": _int(0, 2**31 - 1),
    "tcp-keepalive": _int(0, 2**31 - 1),
    "maxclients": _int(1, 2**31 - 1),
    "maxmemory": _mem(),
    "proto-max-bulk-len": _mem(1024 * 1024, 2**63 - 1),
    "client-query-buffer-limit": _mem(1024 * 1024, 2**63 - 1),
    "stream-node-max-bytes": _mem(0, 2**63 - 1),
    "stream-node-max-entries": _int(0, 2**63 - 1),
    "list-max-listpack-size": _int(-5, 2**31 - 1),
    "list-max-ziplist-size": _int(-5, 2**31 - 1),
    "list-compress-depth": _int(0, 2**31 - 1),
    "hash-max-listpack-entries": _int(0, 2**63 - 1),
    "hash-max-listpack-value": _int(0, 2**63 - 1),
    "hash-max-ziplist-entries": _int(0, 2**63 - 1),
    "hash-max-ziplist-value": _int(0, 2**63 - 1),
    "zset-max-listpack-entries": _int(0, 2**63 - 1),
    "zset-max-listpack-value": _int(0, 2**63 - 1),
    "zset-max-ziplist-entries": _int(0, 2**63 - 1),
    "zset-max-ziplist-value": _int(0, 2**63 - 1),
    "set-max-intset-entries": _int(0, 2**63 - 1),
    "hll-sparse-max-bytes": _mem(0, 2**63 - 1),
    "slowlog-log-slower-than": _int(-1, 2**63 - 1),
    "slowlog-max-len": _int(0, 2**63 - 1),
    "lua-time-limit": _int(0, 2**63 - 1),
    "busy-reply-threshold": _int(0, 2**63 - 1),
    "latency-monitor-threshold": _int(0, 2**63 - 1),
    "maxmemory-samples": _int(1, 2**31 - 1),
    "active-expire-effort": _int(1, 10),
    "loglevel": _enum("debug", "verbose", "notice", "warning", "nothing"),
    "maxmemory-policy": _enum("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                              "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
    "appendfsync": _enum("always", "everysec", "no"),
    "enable-debug-command": _enum("no", "yes", "local"),
    "enable-protected-configs": _enum("no", "yes", "local"),
    "enable-module-command": _enum("no", "yes", "local"),
    "save": _save,
    "client-output-buffer-limit": _client_output_buffer_limit,
}

ALIASES = {
    "list-max-ziplist-size": "list-max-listpack-size",
    "hash-max-ziplist-entries": "hash-max-listpack-entries",
    "hash-max-ziplist-value": "hash-max-listpack-value",
    "zset-max-ziplist-entries": "zset-max-listpack-entries",
    "zset-max-ziplist-value": "zset-max-listpack-value",
    "slave-serve-stale-data": "replica-serve-stale-data",
    "slave-read-only": "replica-read-only",
    "slave-priority": "replica-priority",
    "slaveof": "replicaof",
    "lua-time-limit": "busy-reply-threshold",
}

# Start-up only (CONFIG SET refuses them, as Redis does for IMMUTABLE_CONFIG).
IMMUTABLE = {"daemonize", "databases", "io-threads", "supervised", "logfile", "syslog-enabled",
             "unixsocket", "pidfile", "always-show-logo", "aclfile", "appenddirname", "cluster-enabled",
             "disable-thp", "set-proc-title", "syslog-ident", "syslog-facility", "tcp-backlog",
             "unixsocketperm", "io-threads-do-reads"}

# Options that take several words on one config line.
_MULTI_ARG = {"save", "client-output-buffer-limit", "bind", "oom-score-adj-values", "notify-keyspace-events"}


class Config:
    def __init__(self) -> None:
        text = resources.files("server").joinpath("config_defaults.json").read_text()
        self.values: dict[str, str] = json.loads(text)
        self.on_change: dict[str, list[Callable[[str], None]]] = {}
        self.config_file: str | None = None
        self.refresh()

    # typed views -----------------------------------------------------------------------------
    def refresh(self) -> None:
        v = self.values
        self.port = int(v["port"])
        self.hz = max(1, min(500, int(v["hz"])))
        self.databases = int(v["databases"])
        self.maxclients = int(v["maxclients"])
        self.proto_max_bulk_len = int(v["proto-max-bulk-len"])
        self.client_query_buffer_limit = int(v["client-query-buffer-limit"])
        self.requirepass = v["requirepass"]
        self.timeout = int(v["timeout"])
        self.slowlog_log_slower_than = int(v["slowlog-log-slower-than"])
        self.slowlog_max_len = int(v["slowlog-max-len"])
        self.cobl = dict(_split_cobl(v["client-output-buffer-limit"]))

    def get(self, name: str) -> str:
        return self.values[ALIASES.get(name, name)]

    def canonical(self, name: str) -> str | None:
        name = name.lower()
        name = ALIASES.get(name, name)
        return name if name in self.values else None

    def set(self, name: str, value: bytes, *, startup: bool = False) -> None:
        """Validate and store one option; raises ConfigError with Redis's reason text."""
        canon = self.canonical(name)
        if canon is None:
            raise ConfigError("Bad directive or wrong number of arguments")
        if not startup and canon in IMMUTABLE:
            raise ConfigError("can't set immutable config")
        check = KINDS.get(canon)
        if check is not None:
            new = check(value)
        elif self.values[canon] in _BOOLS:
            new = _bool(value)
        else:
            new = _string(value)
        old = self.values[canon]
        self.values[canon] = new
        self.refresh()
        if new != old:
            for hook in self.on_change.get(canon, ()):
                hook(new)

    # files and command lines ------------------------------------------------------------------
    def load_text(self, text: bytes, source: str) -> None:
        for lineno, raw in enumerate(text.split(b"\n"), 1):
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            args = split_inline_args(line)
            if args is None:
                _fatal(source, lineno, raw, "Unbalanced quotes in configuration line")
            if not args:
                continue
            name = args[0].decode(errors="replace").lower()
            if name == "include" and len(args) == 2:
                with open(args[1], "rb") as fh:
                    self.load_text(fh.read(), args[1].decode(errors="replace"))
                continue
            if name in ("rename-command", "user", "loadmodule", "sentinel"):
                continue
            if len(args) < 2 and name not in ("save", "bind"):
                _fatal(source, lineno, raw, "wrong number of arguments")
            if len(args) > 2 and name not in _MULTI_ARG:
                _fatal(source, lineno, raw, "wrong number of arguments")
            value = b" ".join(args[1:])
            try:
                self.set(name, value, startup=True)
            except ConfigError as exc:
                _fatal(source, lineno, raw, str(exc))

    def load_argv(self, argv: list[str]) -> None:
        """`[config-file] [--name value ...]`, grouped into config lines as redis-server does."""
        chunks: list[str] = []
        args = list(argv)
        if args and not args[0].startswith("--"):
            self.config_file = args.pop(0)
            with open(self.config_file, "rb") as fh:
                self.load_text(fh.read(), self.config_file)
        for a in args:
            if a.startswith("--"):
                chunks.append("\n" + a[2:])
            else:
                if not chunks:
                    raise ConfigError(f"Invalid argument '{a}'")
                chunks.append(" " + _quote(a))
        if chunks:
            self.load_text("".join(chunks).encode(errors="surrogateescape"), "command line")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FatalConfigError(Exception):
    pass


def _fatal(source: str, lineno: int, line: bytes, reason: str) -> None:
    raise FatalConfigError(
        "\n*** FATAL CONFIG FILE ERROR (raxdb, Redis 7.0 compatible) ***\n"
        f"Reading the configuration file, at line {lineno} ({source})\n"
        f">>> '{line.decode(errors='replace').strip()}'\n{reason}"
    )
