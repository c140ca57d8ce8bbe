"""The declarative command table.

Each command is data: name, arity, flags, key positions (first, last, step), ACL categories, tips,
key specs, docs — loaded from `redis_commands.json` (generated from redis-server 7.0 by
tools/gen_commands.py, plus `EXTRA_COMMANDS` for what clients send that 7.0 lacks) — and a handler
attached with `@command("name")` or `@command("container|sub")` in the t_*.py modules.

Only commands with a handler are in the dispatch table, so COMMAND, COMMAND DOCS and COMMAND COUNT
describe what raxdb really serves.  Dispatch (`lookup`) is case-insensitive and resolves
subcommands for container commands exactly as Redis's lookupCommandLogic does.

Handler contract: `handler(client, argv) -> bytes` returns the complete encoded reply (or
`BLOCKED` / `NO_REPLY` sentinels); it raises `CommandError` for error replies.  Arity has been
checked before the handler runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from importlib import resources
from typing import Any

Handler = Callable[..., bytes]

# Sentinels a handler may return instead of reply bytes.
BLOCKED = object()  # the client is now blocked; its reply comes later
NO_REPLY = b""  # nothing to send (e.g. QUIT after its reply is queued, CLIENT REPLY OFF)


# O(1) commands that Redis does not flag "fast" (their cost does not depend on data size).
_SAMPLED_EXTRA = frozenset({"set", "setnx", "setex", "psetex", "getset", "getdel", "getex", "incrbyfloat"})


# Flags Redis 7.0 gives commands but COMMAND INFO does not list (CMD_MAY_REPLICATE: commands that
# may put something in the replication stream without being writes).  CLIENT PAUSE WRITE holds them
# and a MONITOR client may not run them.
_UNLISTED_FLAGS = {name: frozenset({"may_replicate"})
                   for name in ("publish", "spublish", "pfcount", "eval", "evalsha", "fcall")}


def _flags_of(info: list[Any]) -> frozenset[str]:
    name = info[1][0]
    return frozenset(f[1] for f in info[1][2][1]) | _UNLISTED_FLAGS.get(name, frozenset())


def _acl_of(info: list[Any]) -> tuple[str, ...]:
    return tuple(f[1] for f in info[1][6][1])


class Command:
    """One command or subcommand.  Hot-path fields first; stats are plain ints."""

    __slots__ = ("proc", "arity", "arg_counts", "name", "fullname", "flags", "first_key", "last_key", "key_step",
                 "acl_categories", "info", "docs", "parent", "subcommands", "is_write", "is_readonly",
                 "touches_arbitrary_keys", "calls", "usec", "rejected_calls", "failed_calls", "ok_in_pubsub",
                 "ok_loading", "no_auth", "queue_in_multi", "is_blocking", "noscript", "sampled",
                 "timed_calls", "fixed_key_positions", "latency")

    def __init__(self, name: str, info: list[Any], docs: Any, parent: Command | None = None) -> None:
        entry = info[1]
        self.name = name
        self.fullname = f"{parent.name}|{name}" if parent else name
        self.arity: int = entry[1]
        # The argument counts (the name included) it may be called with: at least -arity for a
        # variadic command (negative arity), exactly arity for a fixed one.  A range, so the hot
        # loop's test is one C-level `n in cmd.arg_counts` for both kinds.
        self.arg_counts = range(-self.arity, 1 << 62) if self.arity < 0 else range(self.arity, self.arity + 1)
        self.flags = _flags_of(info)
        self.first_key, self.last_key, self.key_step = entry[3], entry[4], entry[5]
        self.acl_categories = _acl_of(info)
        self.info = info
        self.docs = docs
        self.parent = parent
        self.subcommands: dict[bytes, Command] = {}
        self.proc: Handler | None = None
        self.is_write = "write" in self.flags
        self.is_readonly = "readonly" in self.flags
        self.ok_in_pubsub = self.fullname in ("subscribe", "unsubscribe", "psubscribe", "punsubscribe",
                                              "ssubscribe", "sunsubscribe", "ping", "quit", "reset")
        self.ok_loading = "loading" in self.flags
        self.no_auth = "no_auth" in self.flags
        self.queue_in_multi = self.fullname not in ("exec", "discard", "multi", "watch", "quit", "reset")
        self.is_blocking = "blocking" in self.flags
        # CMD_TOUCHES_ARBITRARY_KEYS (not shown by COMMAND INFO): the DELs of keys it finds expired
        # are propagated without a MULTI/EXEC around them (server/propagate.py)
        self.touches_arbitrary_keys = self.fullname in ("randomkey", "scan")
        self.noscript = "noscript" in self.flags
        # O(1) commands are timed on one call in eight (usec is extrapolated), which saves a clock
        # read per call on the hot path; the rest are timed every call so SLOWLOG sees them.
        self.sampled = "fast" in self.flags or self.fullname in _SAMPLED_EXTRA
        self.calls = self.usec = self.rejected_calls = self.failed_calls = self.timed_calls = 0
        # Key positions by argument count, for commands whose keys sit at fixed positions: filled
        # and read by memory accounting (server/evict.py), which counts a write's keys after it.
        self.fixed_key_positions: dict[int, tuple[int, ...]] = {}
        # Timed calls by duration in microseconds (latency-tracking; server/latency.py); a
        # defaultdict, so the hot loop counts with one `+= 1`.
        self.latency: defaultdict[int, int] = defaultdict(int)

    def arity_ok(self, n: int) -> bool:
        """May the command be called with n arguments (its name included)?"""
        return n in self.arg_counts

    def usec_total(self) -> int:
        """Microseconds spent, extrapolated for sampled commands (INFO commandstats usec)."""
        if self.timed_calls == 0:
            return 0
        ns = self.usec if self.timed_calls >= self.calls else self.usec * self.calls // self.timed_calls
        return ns // 1000

    def reset_stats(self) -> None:
        self.calls = self.usec = self.rejected_calls = self.failed_calls = self.timed_calls = 0
        self.latency = defaultdict(int)
        for sub in self.subcommands.values():
            sub.reset_stats()


def _load_meta() -> dict[str, dict[str, Any]]:
    text = resources.files("raxdb.server.table").joinpath("redis_commands.json").read_text()
    meta: dict[str, dict[str, Any]] = json.loads(text)["commands"]
    for name, entry in EXTRA_COMMANDS.items():
        parent, _, sub = name.partition("|")
        if sub:
            meta[parent]["info"][1][9][1].append(entry["info"])
            _tree_map(meta[parent]["docs"])["subcommands"][1].extend([name, entry["docs"]])
        else:
            meta[name] = entry
    return meta


def _info(name: str, arity: int, flags: list[str], first: int, last: int, step: int, acl: list[str]) -> list[Any]:
    return ["*", [name, arity, ["~", [["+", f] for f in flags]], first, last, step,
                  ["~", [["+", a] for a in acl]], ["~", []], ["~", []], ["~", []]]]


def _docs(summary: str, since: str, group: str, complexity: str) -> list[Any]:
    return ["%", ["summary", summary, "since", since, "group", group, "complexity", complexity]]


# Commands newer than 7.0 that clients send on connect; accepted as Redis 7.2 does.
EXTRA_COMMANDS: dict[str, dict[str, Any]] = {
    "client|setinfo": {
        "info": _info("client|setinfo", 4, ["noscript", "loading", "stale"], 0, 0, 0, ["@slow", "@connection"]),
        "docs": _docs("Sets information specific to the client or connection.", "7.2.0", "connection", "O(1)"),
    },
    "client|no-touch": {
        "info": _info("client|no-touch", 3, ["noscript", "loading", "stale"], 0, 0, 0, ["@slow", "@connection"]),
        "docs": _docs("Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
                      "7.2.0", "connection", "O(1)"),
    },
}


class CommandTable:
    def __init__(self) -> None:
        self.meta = _load_meta()
        self.commands: dict[str, Command] = {}  # implemented top-level commands by lowercase name
        self.registered: set[str] = set()  # their names, whatever rename-command did since
        self.dispatch: dict[bytes, Command] = {}  # as sent: lowercase and uppercase spellings
        # The hot loop's table: only commands without subcommands and with a handler, so a hit needs
        # nothing but the arity check.  Everything else (misses included) takes the full path.
        self.fast_dispatch: dict[bytes, Command] = {}

    def _container(self, name: str) -> Command:
        cmd = self.commands.get(name)
        if cmd is None:
            m = self.meta[name]
            cmd = Command(name, m["info"], m.get("docs"))
            self.commands[name] = cmd
            self.registered.add(name)
            for key in (name.encode(), name.upper().encode()):
                self.dispatch[key] = cmd
        return cmd

    def register(self, fullname: str, proc: Handler) -> Command:
        parent_name, _, sub = fullname.partition("|")
        if parent_name not in self.meta:
            raise KeyError(f"no metadata for command {fullname!r}")
        top = self._container(parent_name)
        if not sub:
            top.proc = proc
            for key in (parent_name.encode(), parent_name.upper().encode()):
                self.fast_dispatch[key] = top
            return top
        sub_infos = {e[1][0]: e for e in top.info[1][9][1]}
        info = sub_infos.get(fullname)
        if info is None:
            raise KeyError(f"no metadata for subcommand {fullname!r}")
        docs = None
        parent_docs = self.meta[parent_name].get("docs")
        if parent_docs:
            subdocs = _tree_map(parent_docs).get("subcommands")
            if subdocs:
                docs = _tree_map(subdocs).get(fullname)
        cmd = Command(sub, info, docs, parent=top)
        cmd.proc = proc
        top.subcommands[sub.encode()] = cmd
        for key in (parent_name.encode(), parent_name.upper().encode()):
            self.fast_dispatch.pop(key, None)
        return cmd

    def names(self) -> dict[bytes, Command]:
        """The commands by the (lowercase) names they are called by now."""
        return {name: cmd for name, cmd in self.dispatch.items() if name.islower()}

    def rename(self, renames: list[tuple[bytes, bytes]]) -> None:
        """rename-command, in order (the config file's directives, checked with `apply_rename`): a
        command is called by its new name only, or by none when that is empty.  It keeps its own
        name where Redis shows cmd->fullname (COMMAND's replies, INFO commandstats, CLIENT LIST,
        ACL rules); one renamed to nothing leaves COMMAND and the statistics too.  The dispatch
        tables are changed in place: the hot loop holds their bound lookups."""
        names = self.names()
        for old, new in renames:
            error = apply_rename(names, old, new)
            assert error is None, error
        self.dispatch.clear()
        self.fast_dispatch.clear()
        for name, cmd in names.items():
            for key in (name, name.upper()):
                self.dispatch[key] = cmd
                if cmd.proc is not None and not cmd.subcommands:
                    self.fast_dispatch[key] = cmd
        kept = {id(cmd) for cmd in names.values()}
        for name in [n for n, cmd in self.commands.items() if id(cmd) not in kept]:
            del self.commands[name]

    def lookup(self, argv: list[bytes]) -> Command | None:
        cmd = self.dispatch.get(argv[0])
        if cmd is None:
            cmd = self.dispatch.get(argv[0].lower())
            if cmd is None:
                return None
        if cmd.subcommands and len(argv) > 1:
            return cmd.subcommands.get(argv[1].lower())
        return cmd

    def lookup_name(self, name: bytes) -> Command | None:
        """By name or 'container|sub' (COMMAND INFO, COMMAND DOCS, ACL)."""
        parent, _, sub = name.lower().partition(b"|")
        cmd = self.dispatch.get(parent)
        if cmd is None or not sub:
            return cmd
        return cmd.subcommands.get(sub)

    def all_commands(self) -> list[Command]:
        return list(self.commands.values())

    def every_command(self) -> list[Command]:
        """Every command, each followed by its subcommands (COMMAND LIST, the per-command stats)."""
        out = []
        for cmd in self.commands.values():
            out.append(cmd)
            out.extend(cmd.subcommands.values())
        return out


def apply_rename(names: dict[bytes, Command], old: bytes, new: bytes) -> str | None:
    """One rename-command on a name -> command map; Redis's error for it, or None."""
    cmd = names.pop(old.lower(), None)
    if cmd is None:
        return "No such command in rename-command"
    if new:
        if new.lower() in names:
            names[old.lower()] = cmd
            return "Target command name already exists"
        names[new.lower()] = cmd
    return None


def _tree_map(node: Any) -> dict[str, Any]:
    """A typed map node's items as a dict (keys are bulk strings)."""
    items = node[1]
    return {items[i]: items[i + 1] for i in range(0, len(items), 2)}


TABLE = CommandTable()


def command(fullname: str) -> Callable[[Handler], Handler]:
    """Attach a handler to the command `fullname` ("get", "config|get")."""

    def deco(fn: Handler) -> Handler:
        TABLE.register(fullname, fn)
        return fn

    return deco
