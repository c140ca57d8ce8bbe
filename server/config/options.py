"""Configuration: the option table, redis.conf syntax, command-line options, CONFIG GET / SET /
REWRITE semantics — all as Redis 7.0 has them.

The table (`config_defaults.json`, read at start from its generated copy optiontable.py) lists every
option redis-server 7.0 reports in `CONFIG GET *`, and its hidden ones (found by exact name only:
rdb-key-save-delay, key-load-delay, ...), with its default, kind and limits; it was read off a live
redis-server 7.0 (CONFIG GET for the defaults, refused CONFIG SET / start-up values for kinds,
bounds, enum members and the immutable and protected flags). Kinds validate and normalise exactly as
Redis's config.c does: booleans yes/no, integers by string2ll with bounds, memory sizes by memtoull
with k/kb/m/mb/g/gb units (wrapping as the C does), enums case-insensitively, and a handful of
special options (save, client-output-buffer-limit, bind, dir, notify-keyspace-events, ...). Options
raxdb does not act upon are stored and reported all the same, so tools that read configuration see
what they expect.

Options of a later Redis generation (`since` in the table: set-max-listpack-entries / -value, 7.2)
exist only for a server answering as that generation or later (compat-version): in 7.0 mode
CONFIG GET / SET / REWRITE and the config file know them as 7.0.15 does, not at all.  Start-up
reads a compat-version line before every other line, so its place in the file does not matter.

Invariants: `values[name]` is the CONFIG GET string of every option, aliases included (an alias
always mirrors its primary); typed views that the server reads often (port, hz, timeout, limits)
are attributes refreshed after every change; `on_change[name]` hooks apply a change and may
refuse it by raising ConfigError, which rolls the whole CONFIG SET back (Redis's apply step).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import BinaryIO

from raxdb.protocol.request import quote_arg, split_inline_args, string2ll
from raxdb.server.base import proctitle
from raxdb.server.base.fields import ConfigFields
from raxdb.server.base.files import WriteFailed, write_atomically
from raxdb.server.base.lazyre import LazyPattern
from raxdb.server.base.loading import LOADING_ERR
from raxdb.server.base.log import LOG
from raxdb.server.base.numparse import string2d
from raxdb.server.config.optiontable import ALIASES as _ALIASES
from raxdb.server.config.optiontable import ROWS
from raxdb.server.security.protected import enabled
from raxdb.server.table.registry import TABLE, apply_rename
from raxdb.storage.glob import glob_match
from raxdb.storage.stream import node_limits

REDIS_VERSION = "7.0.15"
U64 = 2**64
LLONG_MAX = 2**63 - 1

_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2, b"g": 1000**3,
          b"gb": 1024**3}


class ConfigError(Exception):
    """A refused value; `str(exc)` is Redis's reason text."""


class LoadingDenied(ConfigError):
    """CONFIG SET of a DENY_LOADING_CONFIG option while loading: answered -LOADING."""


class FatalConfigError(Exception):
    """Start-up configuration error: the full FATAL CONFIG FILE ERROR report."""


# ---- value parsers with C semantics ---------------------------------------------------------------
def memtoull(v: bytes) -> int | None:
    """Redis's memtoull: digits and an optional unit; None when malformed.  Like the C it saturates
    the digits at 2**64-1 and lets the unit multiplication wrap."""
    if v[:1] == b"-":
        return None
    i = 0
    while i < len(v) and 48 <= v[i] <= 57:
        i += 1
    mul = _UNITS.get(v[i:].lower())
    if mul is None or i >= 128:
        return None
    n = min(int(v[:i]) if i else 0, U64 - 1)
    return (n * mul) % U64


parse_memory = memtoull


def _strtoll(v: bytes) -> int | None:
    """C strtoll over the whole string (leading space and sign allowed, "" is 0); None on junk."""
    s = v.lstrip(b" \t\n\v\f\r")
    sign = 1
    if s[:1] in (b"+", b"-"):
        sign = -1 if s[:1] == b"-" else 1
        s = s[1:]
    if s and not s.isdigit():
        return None
    n = sign * int(s) if s else 0
    return max(-(2**63), min(LLONG_MAX, n))


def _words(v: bytes) -> list[bytes]:
    """sdssplitlen(value, " "): how CONFIG SET splits a multi-argument option's value."""
    return v.split(b" ") if v else []


def _text(v: bytes) -> str:
    return v.decode(errors="surrogateescape")


def repr_arg(s: str) -> str:
    """sdscatrepr of a config value (config file lines, CONFIG REWRITE)."""
    return quote_arg(s.encode(errors="surrogateescape"))


def format_bytes(n: int) -> str:
    """How CONFIG REWRITE writes memory values: the largest exact unit."""
    for unit, size in (("gb", 1024**3), ("mb", 1024**2), ("kb", 1024)):
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


# ---- special options ------------------------------------------------------------------------------
# Validators other modules own, by option name: value -> normalised CONFIG GET string, or
# ConfigError.  They take precedence over the table's kind (server.notify registers
# notify-keyspace-events here, with the parsing it also needs for its flags).
KINDS: dict[str, Callable[[bytes], str]] = {}


def _save(args: list[bytes]) -> str:
    if len(args) == 1 and args[0] == b"":
        args = []
    if len(args) % 2:
        raise ConfigError("Invalid save parameters")
    nums = []
    for j, a in enumerate(args):
        n = _strtoll(a)
        if n is None or (j % 2 == 0 and n < 1) or (j % 2 == 1 and n < 0):
            raise ConfigError("Invalid save parameters")
        nums.append(str(n))
    return " ".join(nums)


COBL_CLASSES = ("normal", "slave", "pubsub")


def split_cobl(v: str) -> dict[str, tuple[int, int, int]]:
    p = v.split()
    return {p[i]: (int(p[i + 1]), int(p[i + 2]), int(p[i + 3])) for i in range(0, len(p), 4)}


def _join_cobl(limits: dict[str, tuple[int, int, int]]) -> str:
    return " ".join(f"{c} {h} {s} {t}" for c, (h, s, t) in limits.items())


def _cobl(args: list[bytes], current: str) -> str:
    if len(args) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits = split_cobl(current)
    for i in range(0, len(args), 4):
        cls = args[i].decode(errors="replace").lower()
        if cls == "replica":
            cls = "slave"
        if cls not in limits:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = memtoull(args[i + 1]), memtoull(args[i + 2])
        secs = _strtoll(args[i + 3])
        if hard is None or soft is None or secs is None or secs < 0 or hard >= 2**63 or soft >= 2**63:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[cls] = (hard, soft, secs)
    return _join_cobl(limits)


def _oom_values(args: list[bytes]) -> str:
    if len(args) != 3:
        raise ConfigError("wrong number of arguments")
    out = []
    for a in args:
        n = string2ll(a)
        if n is None or not -2000 <= n <= 2000:
            raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
        out.append(str(n))
    return " ".join(out)


def _percentiles(args: list[bytes]) -> str:
    if len(args) == 1 and args[0] == b"":
        args = []
    out = []
    for a in args:
        d = string2d(a)
        if d is None:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        if not 0.0 <= d <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        out.append(("%f" % d).rstrip("0").rstrip("."))
    return " ".join(out)


def _hostname(args: list[bytes]) -> str:
    """isValidAnnouncedHostname: the length (in bytes, NET_HOST_STR_LEN) first, then the characters."""
    if len(args[0]) >= 256:
        raise ConfigError("Hostnames must be less than 256 characters")
    v = _text(args[0])
    if any(not (ch.isascii() and (ch.isalnum() or ch in "-.")) for ch in v):
        raise ConfigError("Hostnames may only contain alphanumeric characters, hyphens or dots")
    return v


# What each variable may stand for when a template is checked: {title}, {server-mode} and an
# unset {unixsocket} expand to nothing (server/base/proctitle.py).
_TITLE_CHECK = {"port": "6379", "tls-port": "0", "bind": "*", "unixsocket": ""}


def _proc_title(args: list[bytes]) -> str:
    v = _text(args[0])
    if not proctitle.valid(v, _TITLE_CHECK):
        raise ConfigError("template format is invalid or contains unknown variables")
    return v


def _activedefrag(args: list[bytes]) -> str:
    v = _bool(args)
    if v == "yes":
        raise ConfigError("Active defragmentation cannot be enabled: it requires a Redis server compiled with "
                          "a modified Jemalloc like the one shipped by default with the Redis source "
                          "distribution")
    return v


def _bool(args: list[bytes]) -> str:
    low = args[0].lower()
    if low in (b"yes", b"no"):
        return low.decode()
    raise ConfigError("argument must be 'yes' or 'no'")


def _dir(args: list[bytes]) -> str:
    try:
        os.chdir(args[0])
    except OSError as exc:
        raise ConfigError(exc.strerror or str(exc)) from None
    return os.getcwd()


_OCTAL = LazyPattern(rb"[ \t\n\v\f\r]*[+-]?[0-7]+")


def _octal(args: list[bytes]) -> str:
    """unixsocketperm: what strtoll(v, &end, 8) reads in full (so "" is 0), within 0..0777."""
    v = args[0]
    if v and not _OCTAL.fullmatch(v):
        raise ConfigError("argument couldn't be parsed as an octal number")
    n = int(v, 8) if v else 0
    if not -(1 << 63) <= n < 1 << 63:
        raise ConfigError("argument couldn't be parsed as an octal number")  # ERANGE
    if not 0 <= n <= 0o777:
        raise ConfigError("argument must be between 0 and 777 inclusive")
    return "%o" % n


def _replicaof(args: list[bytes]) -> str:
    if len(args) != 2:
        raise ConfigError("wrong number of arguments")
    if args[0].lower() == b"no" and args[1].lower() == b"one":
        return ""
    port = args[1].decode(errors="replace")
    if not (port.isdigit() and port.isascii() and int(port) <= 65535):
        raise ConfigError("Invalid master port")
    return f"{_text(args[0])} {int(port)}"  # server/replication/replica.py connects at start-up


def _bind(args: list[bytes]) -> str:
    if len(args) == 1 and args[0] == b"":
        args = []
    if len(args) > 16:
        raise ConfigError("Too many bind addresses specified.")
    return " ".join(_text(a) for a in args)


_SHUTDOWN_FLAGS = (("default", 0), ("save", 1), ("nosave", 2), ("now", 4), ("force", 8))


def _shutdown_flags(args: list[bytes]) -> str:
    """shutdown-on-sigint / -sigterm: a multi-argument enum of bit flags (configEnumGetValue, then
    configEnumGetName: the one name of the value, else its flags' names in the enum's order)."""
    values = dict(_SHUTDOWN_FLAGS)
    bits = 0
    for a in args:
        v = values.get(a.decode(errors="replace").lower())
        if v is None:
            break
        bits |= v
    else:
        if args:
            if bits & 3 == 3:  # isValidShutdownOnSigFlags
                raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")
            exact = [name for name, v in _SHUTDOWN_FLAGS if v == bits]
            return exact[0] if exact else " ".join(name for name, v in _SHUTDOWN_FLAGS if v and bits & v)
    raise ConfigError("argument(s) must be one of the following: " + ", ".join(n for n, _ in _SHUTDOWN_FLAGS))


# (parser, multi-argument?) for the special kinds; the parser gets the split arguments.
_SPECIALS: dict[str, tuple[Callable[..., str], bool]] = {
    "save": (_save, True),
    "client-output-buffer-limit": (_cobl, True),
    "oom-score-adj-values": (_oom_values, True),
    "latency-tracking-info-percentiles": (_percentiles, True),
    "bind": (_bind, True),
    "shutdown-on-sigint": (_shutdown_flags, True),
    "shutdown-on-sigterm": (_shutdown_flags, True),
    "replicaof": (_replicaof, True),
    "cluster-announce-hostname": (_hostname, False),
    "proc-title-template": (_proc_title, False),
    "activedefrag": (_activedefrag, False),
    "dir": (_dir, False),
    "unixsocketperm": (_octal, False),
}


# ---- the option table -------------------------------------------------------------------------
class Option:
    """One row of the table.  A plain class: a dataclass's making (the code it generates and
    compiles, and the dataclasses module) cost more at start-up than the whole table's rows."""

    __slots__ = ("name", "kind", "default", "lo", "hi", "choices", "immutable", "protected", "percent", "hidden",
                 "deny_loading", "since")

    def __init__(self, name: str, kind: str, default: str, lo: int = 0, hi: int = 0, choices: tuple[str, ...] = (),
                 immutable: bool = False, protected: bool = False, percent: bool = False, hidden: bool = False,
                 deny_loading: bool = False, since: tuple[int, ...] = (7, 0)) -> None:
        self.name, self.kind, self.default, self.lo, self.hi = name, kind, default, lo, hi
        self.choices, self.immutable, self.protected, self.percent = choices, immutable, protected, percent
        self.hidden = hidden  # HIDDEN_CONFIG: CONFIG GET finds it by its exact name only, never by a pattern
        self.deny_loading = deny_loading  # DENY_LOADING_CONFIG: CONFIG SET refuses it while a dataset loads
        self.since = since  # the first generation (compat-version) that has it

    @property
    def multi_arg(self) -> bool:
        return self.kind == "special" and _SPECIALS[self.name][1]

    def parse(self, args: list[bytes], current: str) -> str:
        """Validate the option's arguments; the normalised CONFIG GET string or ConfigError."""
        if not self.multi_arg and len(args) != 1:
            raise ConfigError("wrong number of arguments")
        owner = KINDS.get(self.name)
        if owner is not None:
            return owner(args[0])
        kind = self.kind
        if kind == "bool":
            return _bool(args)
        if kind == "int":
            n = string2ll(args[0])
            if n is None:
                raise ConfigError("argument couldn't be parsed into an integer")
            return str(self._bounded(n))
        if kind == "mem":
            return self._memory(args[0])
        if kind == "enum":
            low = args[0].decode(errors="replace").lower()
            if low not in self.choices:
                raise ConfigError("argument(s) must be one of the following: " + ", ".join(self.choices))
            return low
        if kind == "string":
            return _text(args[0])
        fn = _SPECIALS[self.name][0]
        return fn(args, current) if fn is _cobl else fn(args)

    def _bounded(self, n: int) -> int:
        if not self.lo <= n <= self.hi:
            raise ConfigError(f"argument must be between {self.lo} and {self.hi} inclusive")
        if self.name == "hz":  # Redis clamps the configured hz to [1, 500] when applying it
            n = max(1, min(500, n))
        return n

    def _memory(self, v: bytes) -> str:
        if self.percent and v.endswith(b"%"):
            p = string2ll(v[:-1])
            if p is None or p < 0:
                raise ConfigError("argument must be a memory or percent value")
            if p > 100:
                raise ConfigError("percentage argument must be less or equal to 100")
            return f"{p}%" if p else "0"
        n = memtoull(v)
        if n is None:
            raise ConfigError("argument must be a memory or percent value" if self.percent
                              else "argument must be a memory value")
        if self.hi <= LLONG_MAX and n > LLONG_MAX:
            n -= U64  # a signed C field: the wrapped value is negative and fails the bounds check
        if self.percent and n < 0:
            # Redis keeps a percentage as its negation, so a byte count that wraps negative reads
            # as one: 18446744073709551615 is -1, which is 1%; below -100 it is refused as such.
            if n < self.lo:
                raise ConfigError(f"percentage argument must be less or equal to {-self.lo}")
            return f"{-n}%"
        return str(self._bounded(n))


def _load_table() -> tuple[dict[str, Option], dict[str, str]]:
    # the JSON table's rows as literals (optiontable.py, generated from config_defaults.json):
    # loaded from the cached bytecode, no json module imported nor file decoded at start
    return {row[0]: Option(*row) for row in ROWS}, dict(_ALIASES)


OPTIONS, ALIASES = _load_table()
HIDDEN = frozenset(name for name, opt in OPTIONS.items() if opt.hidden)
LATER = frozenset(name for name, opt in OPTIONS.items() if opt.since > (7, 0))  # unknown to 7.0
ALIASES_OF: dict[str, list[str]] = {}
for _alias, _primary in ALIASES.items():
    ALIASES_OF.setdefault(_primary, []).append(_alias)

# Config-file directives Redis 7.0 accepts and ignores (deprecated), with their argument counts.
_DEPRECATED = {"list-max-ziplist-entries": (2, 2), "list-max-ziplist-value": (2, 2),
               "lua-replicate-commands": (2, 2)}


def _is_glob(name: bytes) -> bool:
    return any(ch in name for ch in b"*?[")


class Config(ConfigFields):
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        for name, opt in OPTIONS.items():
            self.values[name] = opt.default
        self.values["dir"] = self._initial_dir = os.getcwd()
        for alias, primary in ALIASES.items():
            self.values[alias] = self.values[primary]
        self.on_change: dict[str, list[Callable[[str], None]]] = {}
        self.config_file: str | None = None
        self.file_options: set[str] = set()  # primaries set by the config file (CONFIG REWRITE)
        self._save_loaded = False
        self.acl_users: list[list[bytes]] = []  # `user` directives: each the name and its rules
        self.renames: list[tuple[bytes, bytes]] = []  # rename-command directives, in order
        self.modules: list[str] = []  # loadmodule paths: start-up stops at the first (raxdb loads none)
        # CONFIG REWRITE's `user` lines (server/security/acl.py sets it): none with an aclfile, which holds them
        self.user_lines: Callable[[], list[str]] | None = None
        self.loading = False  # a dataset is loading (server/persistence/loading.py): DENY_LOADING_CONFIG options wait
        self.refresh()

    # typed views -----------------------------------------------------------------------------
    def refresh(self) -> None:
        v = self.values
        self.port = int(v["port"])
        self.hz = int(v["hz"])
        self.active_expire_effort = int(v["active-expire-effort"])
        self.databases = int(v["databases"])
        self.maxclients = int(v["maxclients"])
        self.proto_max_bulk_len = int(v["proto-max-bulk-len"])
        self.client_query_buffer_limit = int(v["client-query-buffer-limit"])
        self.requirepass = v["requirepass"]
        self.timeout = int(v["timeout"])
        self.tcp_keepalive = int(v["tcp-keepalive"])
        self.slowlog_log_slower_than = int(v["slowlog-log-slower-than"])
        self.slowlog_max_len = int(v["slowlog-max-len"])
        self.latency_monitor_threshold = int(v["latency-monitor-threshold"])
        self.latency_tracking = v["latency-tracking"] == "yes"
        # read by every propagated write and every AOF flush (server/persistence/aof.py)
        self.aof_timestamps = v["aof-timestamp-enabled"] == "yes"
        self.appendfsync = v["appendfsync"]
        self.latency_percentiles = [(p, float(p)) for p in v["latency-tracking-info-percentiles"].split()]
        self.cobl = split_cobl(v["client-output-buffer-limit"])
        # The Redis generation raxdb answers as (#59): 7.0 is the default and Redis 7.0.15 exactly;
        # commands and replies of a later generation check `compat_version >= (7, 4)` and the like.
        self.compat_version = tuple(int(part) for part in v["compat-version"].split("."))
        # Encoding thresholds, read by every write of their type: parsed here, once per change.
        self.list_options = (int(v["list-max-listpack-size"]), int(v["list-compress-depth"]))
        self.hash_max_listpack = (int(v["hash-max-listpack-entries"]), int(v["hash-max-listpack-value"]))
        self.zset_max_listpack = (int(v["zset-max-listpack-entries"]), int(v["zset-max-listpack-value"]))
        self.set_max_intset_entries = int(v["set-max-intset-entries"])
        # storage/set_type.py's limits: 7.2 added the listpack encoding of small sets (0, 0: none)
        newer = self.compat_version >= (7, 2)
        self.set_limits = (self.set_max_intset_entries, int(v["set-max-listpack-entries"]) if newer else 0,
                           int(v["set-max-listpack-value"]) if newer else 0, newer)
        # the options this generation does not have (a later one's)
        self.later = LATER if not newer else frozenset()
        self.stream_node_limits = node_limits(int(v["stream-node-max-bytes"]), int(v["stream-node-max-entries"]))

    # lookups ---------------------------------------------------------------------------------
    def canonical(self, name: str) -> str | None:
        """The primary option for a name or alias (any case), None if unknown (in the generation
        the server answers as)."""
        name = name.lower()
        name = ALIASES.get(name, name)
        return name if name in OPTIONS and name not in self.later else None

    def get(self, name: str) -> str:
        return self.values[ALIASES.get(name, name)]

    def matching(self, patterns: list[bytes]) -> list[tuple[bytes, bytes]]:
        """CONFIG GET: names (as given when exact, canonical when matched by a glob) and values,
        each option once.  Redis replies in hash order, so any order is as good."""
        out: list[tuple[bytes, bytes]] = []
        seen: set[str] = set()
        for pat in patterns:
            if not _is_glob(pat):
                low = pat.decode(errors="replace").lower()
                if low in self.values and low not in seen and low not in self.later:
                    seen.add(low)
                    out.append((pat, self.values[low].encode(errors="surrogateescape")))
                continue
            for name, value in self.values.items():
                if name not in seen and name not in HIDDEN and name not in self.later and glob_match(pat, name.encode(), nocase=True):
                    seen.add(name)
                    out.append((name.encode(), value.encode(errors="surrogateescape")))
        return out

    # setting ---------------------------------------------------------------------------------
    def _store(self, name: str, value: str) -> None:
        self.values[name] = value
        for alias in ALIASES_OF.get(name, ()):
            self.values[alias] = value

    def set(self, name: str, value: bytes, *, startup: bool = False) -> None:
        """Set one option from one value (split like CONFIG SET for multi-argument options)."""
        canon = self.canonical(name)
        if canon is None:
            raise ConfigError("Bad directive or wrong number of arguments")
        opt = OPTIONS[canon]
        if not startup and opt.immutable:
            raise ConfigError("can't set immutable config")
        args = _words(value) if opt.multi_arg else [value]
        self._apply({canon: opt.parse(args, self.values[canon])})

    def set_many(self, pairs: list[tuple[bytes, bytes]], local: bool = True) -> None:
        """CONFIG SET name value [name value ...]: validate everything first, then set all; a
        refused value or a failing apply hook leaves every option as it was.  Raises ConfigError
        carrying the complete Redis error text."""
        chosen: list[tuple[bytes, Option]] = []
        unknown = failed = None
        for name, _ in pairs:
            canon = self.canonical(name.decode(errors="replace"))
            if canon is None:
                if failed is None and unknown is None:
                    unknown = name
                continue
            if unknown is not None or failed is not None:
                continue
            opt = OPTIONS[canon]
            if opt.immutable:
                failed = (name, "can't set immutable config")
            elif opt.protected and not enabled(self.values["enable-protected-configs"], local):
                failed = (name, "can't set protected config")
            elif opt.deny_loading and self.loading:
                failed = (name, "")
            elif any(n.lower() == name.lower() for n, _ in chosen):
                # Redis registers an alias as a config of its own, so "hash-max-ziplist-entries"
                # next to "hash-max-listpack-entries" is no duplicate: both are set, in order.
                failed = (name, "duplicate parameter")
            chosen.append((name, opt))
        if unknown is not None:
            raise ConfigError("Unknown option or number of arguments for CONFIG SET - '%s'"
                              % unknown.decode(errors="replace"))
        if failed is not None:
            if not failed[1]:  # given precedence, as clients may handle -LOADING apart from -ERR
                raise LoadingDenied(LOADING_ERR.decode())
            raise ConfigError("CONFIG SET failed (possibly related to argument '%s') - %s"
                              % (failed[0].decode(errors="replace"), failed[1]))
        new: dict[str, str] = {}
        for (name, opt), (_, value) in zip(chosen, pairs, strict=True):
            args = _words(value) if opt.multi_arg else [value]
            try:
                new[opt.name] = opt.parse(args, self.values[opt.name])
            except ConfigError as exc:
                shown = name.decode(errors="replace").lower()
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{shown}') - {exc}") from None
        if "repl-backlog-size" in new:
            # Applying it resizes the backlog, which is never under 16 KiB (CONFIG GET shows the
            # raised size); the config file's value stays as written until then, as in Redis.
            new["repl-backlog-size"] = str(max(16384, int(new["repl-backlog-size"])))
        try:
            self._apply(new)
        except _ApplyError as exc:
            LOG.warning(f"Failed applying new configuration. Possibly related to new {exc.name} setting. "
                        "Restoring previous settings.")
            raise ConfigError(f"CONFIG SET failed (possibly related to argument '{exc.name}') - {exc.reason}") \
                from None

    def _apply(self, new: dict[str, str]) -> None:
        old = {name: self.values[name] for name in new}
        for name, value in new.items():
            self._store(name, value)
        self.refresh()
        applied: list[str] = []
        try:
            for name, value in new.items():
                if value != old[name]:
                    for hook in self.on_change.get(name, ()):
                        hook(value)
                    applied.append(name)
        except ConfigError as exc:
            failed = name  # the error names the option whose apply failed
            for n, value in old.items():
                self._store(n, value)
            self.refresh()
            for n in applied:  # undo what the hooks already did
                for hook in self.on_change.get(n, ()):
                    try:
                        hook(old[n])
                    except ConfigError:
                        pass
            raise _ApplyError(failed, str(exc)) from None

    # files and command lines ------------------------------------------------------------------
    def load_text(self, text: bytes, source: str, first_line: int = 1) -> None:
        """Parse redis.conf text; FatalConfigError (Redis's report) on the first bad line."""
        for lineno, raw in enumerate(text.split(b"\n"), first_line):
            line = raw.strip(b" \t\r\n")
            if not line or line.startswith(b"#"):
                continue
            args = split_inline_args(line)
            if args is None:
                _fatal(lineno, line, "Unbalanced quotes in configuration line")
            if not args:
                continue
            try:
                self._directive(args, source)
            except ConfigError as exc:
                _fatal(lineno, line, str(exc))

    def _directive(self, args: list[bytes], source: str) -> None:
        name = args[0].decode(errors="replace").lower()
        canon = self.canonical(name)
        if canon is not None:
            opt = OPTIONS[canon]
            values = args[1:]
            if not opt.multi_arg and len(values) != 1:
                raise ConfigError("wrong number of arguments")
            if opt.multi_arg and len(values) == 1 and values[0]:
                split = split_inline_args(values[0])
                values = split if split is not None else values
            value = opt.parse(values, self.values[canon])
            if canon == "save" and self._save_loaded and value:
                # Several `save` lines in a file add up (the first one replaces the default).
                value = (self.values["save"] + " " + value).strip()
            if canon == "save":
                self._save_loaded = True
            self.file_options.add(canon)
            self._apply({canon: value})
            return
        lo_hi = _DEPRECATED.get(name)
        if lo_hi is not None and lo_hi[0] <= len(args) <= lo_hi[1]:
            return
        if name == "include" and len(args) == 2:
            self._include(args[1])
            return
        if name == "user" and len(args) >= 2:  # ACL users, created at start-up (server/security/acl.py)
            from raxdb.server.security.acl import validate_user_directive

            err = validate_user_directive(args, self.acl_users)
            if err is not None:
                raise ConfigError(err)
            return
        if name == "rename-command" and len(args) == 3:
            self._rename_command(args[1], args[2])
            return
        # Directives that are not options: rename-command and user act (above); loadmodule stops
        # start-up as a module that fails to load does (raxdb loads none); sentinel is ignored.
        if name == "loadmodule" and len(args) >= 2:
            self.modules.append(args[1].decode(errors="surrogateescape"))
            return
        if name == "sentinel" and len(args) >= 2:
            return
        raise ConfigError("Bad directive or wrong number of arguments")

    def _rename_command(self, old: bytes, new: bytes) -> None:
        """rename-command: checked here against the command table as the earlier renames left
        it (Redis's errors stop start-up), applied by the server (CommandTable.rename)."""
        names = TABLE.names()
        for done in self.renames:
            apply_rename(names, *done)
        error = apply_rename(names, old, new)
        if error is not None:
            raise ConfigError(error)
        self.renames.append((old, new))

    def _include(self, pattern: bytes) -> None:
        path = pattern.decode(errors="surrogateescape")
        if any(ch in path for ch in "*?["):
            import glob  # an include's wildcards only: not every start's import
            paths = sorted(glob.glob(path))
        else:
            paths = [path]
        for p in paths:
            try:
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise FatalConfigError(f"Fatal error, can't open config file '{p}': {exc.strerror}") from None
            self.load_text(data, p)

    def load_argv(self, argv: list[str], stdin: BinaryIO | None = None) -> None:
        """`[config-file] [-] [--name value ...] [-]` as redis-server reads them: the file's text,
        then the config read from `stdin` when a lone `-` is the first or last argument, then the
        options as config lines (so line numbers in errors continue the file's)."""
        args = list(argv)
        text = b""
        if args and not args[0].startswith("-"):
            self.config_file = os.path.abspath(args.pop(0))
            try:
                with open(self.config_file, "rb") as fh:
                    text = fh.read()
            except OSError as exc:
                raise FatalConfigError(f"Fatal error, can't open config file '{self.config_file}': "
                                       f"{exc.strerror}") from None
        if args and "-" in (args[0], args[-1]) and (len(argv) == len(args) or args[-1] == "-"):
            LOG.warning("Reading config from stdin")
            text += (stdin or sys.stdin.buffer).read()
        options = _options_text(args)
        if options:
            text += b"\n" + options.encode(errors="surrogateescape")
        self._generation_first(text)
        self.load_text(text, self.config_file or "command line")
        # loadServerConfigFromString's sanity check, once every line (the options' too) is read:
        # no line to quote, so the report has only the reason
        if self.values["cluster-enabled"] == "yes" and self.values["replicaof"]:
            raise FatalConfigError(f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n"
                                   "replicaof directive not allowed in cluster mode")

    def _generation_first(self, text: bytes) -> None:
        """Apply the last compat-version line of `text` before the rest is read, so the options
        of its generation are known wherever they stand (a bad value is reported by the full
        read, at its line)."""
        found = None
        for raw in text.split(b"\n"):
            args = split_inline_args(raw.strip(b" \t\r\n"))
            if args and len(args) == 2 and args[0].lower() == b"compat-version":
                found = args[1]
        if found is not None:
            try:
                self._apply({"compat-version": OPTIONS["compat-version"].parse([found], "")})
            except ConfigError:
                pass

    # CONFIG REWRITE ---------------------------------------------------------------------------
    def rewrite(self, force_all: bool = False) -> None:
        """Rewrite the config file in Redis's manner: lines of options that are set are replaced
        in place (the first occurrence; later ones blanked), comments and other directives stay,
        options that differ from their default (every option with `force_all`, DEBUG
        CONFIG-REWRITE-FORCE-ALL) and were not in the file are appended after a
        "# Generated by CONFIG REWRITE" marker.  Written to a temporary file and renamed."""
        if self.config_file is None:
            raise ConfigError("The server is running without a config file")
        try:
            with open(self.config_file, "rb") as fh:
                old_lines = fh.read().decode(errors="surrogateescape").split("\n")
        except FileNotFoundError:
            old_lines = []
        except OSError as exc:
            raise ConfigError(f"Rewriting config file: {exc.strerror}") from None
        if old_lines and old_lines[-1] == "":
            old_lines.pop()
        marker = "# Generated by CONFIG REWRITE"
        lines: list[str | None] = []
        where: dict[str, list[int]] = {}
        for raw in old_lines:
            if raw.strip() == marker:
                continue
            stripped = raw.strip()
            args = split_inline_args(stripped.encode(errors="surrogateescape")) if stripped else None
            if args and not stripped.startswith("#"):
                canon = self.canonical(args[0].decode(errors="replace"))
                if canon is None and args[0].lower() == b"user":
                    canon = "user"
                if canon is not None:
                    where.setdefault(canon, []).append(len(lines))
            lines.append(raw)
        appended: list[str] = []

        def place(name: str, new_lines: list[str]) -> None:
            # rewriteConfigRewriteLine: the new lines take the old ones' places, blanking what is
            # left over; more than there were places go at the end
            slots = where.get(name, [])
            for i, slot in enumerate(slots):
                lines[slot] = new_lines[i] if i < len(new_lines) else ""
            appended.extend(new_lines[len(slots):])

        for name, opt in OPTIONS.items():
            if name in self.later:
                continue
            new_lines = self._rewrite_lines(opt)
            if name not in where and (new_lines is None or (self.values[name] == self._default(opt)
                                                             and not force_all)):
                continue
            place(name, new_lines or [])
        if self.user_lines is not None:  # rewriteConfigUserOption: every user, after the options
            place("user", self.user_lines())
        if appended:
            if lines and lines[-1] != "":
                lines.append("")
            lines.append(marker)
            lines.extend(appended)
        text = "\n".join(line for line in lines if line is not None) + "\n"
        data = text.encode("utf-8", errors="surrogateescape")
        try:
            write_atomically(f"{self.config_file}.tmp-{os.getpid()}", self.config_file, lambda f: f.write(data))
        except WriteFailed as exc:
            raise ConfigError(f"Rewriting config file: {exc.strerror}") from None

    def _default(self, opt: Option) -> str:
        return self._initial_dir if opt.name == "dir" else opt.default

    def _rewrite_lines(self, opt: Option) -> list[str] | None:
        """The config lines that express the option's current value (None: never written)."""
        name, value = opt.name, self.values[opt.name]
        if name == "replicaof":  # rewriteConfigReplicaOfOption: a master drops the line, and a
            # cluster node too (its master is nodes.conf's)
            return [f"replicaof {value}"] if value and self.values["cluster-enabled"] != "yes" else []
        kind = opt.kind
        if kind == "string" or name in ("dir", "cluster-announce-hostname", "proc-title-template"):
            return [f"{name} {repr_arg(value)}"]
        if kind == "mem" and not value.endswith("%"):
            return [f"{name} {format_bytes(int(value))}"]
        if name == "save":
            if not value:
                return ['save ""']
            p = value.split()
            return [f"save {p[i]} {p[i + 1]}" for i in range(0, len(p), 2)]
        if name == "client-output-buffer-limit":
            defaults = split_cobl(opt.default)
            return [f"{name} {cls} {format_bytes(h)} {format_bytes(s)} {t}"
                    for cls, (h, s, t) in split_cobl(value).items() if (h, s, t) != defaults.get(cls)]
        if name == "bind" and not value:
            return ['bind ""']
        return [f"{name} {value}"]


class _ApplyError(ConfigError):
    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name, self.reason = name, reason


def _options_text(args: list[str]) -> str:
    """Command-line options as config text: each `--name` starts a line, values follow quoted."""
    parts: list[str] = []
    last_has_value = True
    for i, a in enumerate(args):
        if a == "-" and (i == 0 or i == len(args) - 1):
            continue  # "read the config from stdin": load_argv did
        if last_has_value and a.startswith("--"):
            if parts:
                parts.append("\n")
            parts.append(a[2:] + " ")
            words = split_inline_args(a.encode(errors="surrogateescape")) or []
            last_has_value = len(words) != 1
            if not last_has_value and a.lower() == "--save" and (i == len(args) - 1 or args[i + 1].startswith("--")):
                parts.append('""')  # `--save` with no value means save ""
                last_has_value = True
        else:
            parts.append(repr_arg(a) + " ")
            last_has_value = True
    return "".join(parts)


def _fatal(lineno: int, line: bytes, reason: str) -> None:
    raise FatalConfigError(
        f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n"
        f"Reading the configuration file, at line {lineno}\n"
        f">>> '{line.decode(errors='replace')}'\n{reason}"
    )
