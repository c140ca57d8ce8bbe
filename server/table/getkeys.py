"""Key extraction: where a command line names keys, and with which key-spec flags, as COMMAND
GETKEYS and GETKEYSANDFLAGS answer (Redis's getKeysFromCommandWithSpecs).

The command table's key specs (Redis 7.0's COMMAND INFO metadata, table/registry.py) are walked as
Redis's getKeysUsingKeySpecs walks them: begin_search by index or keyword, find_keys by range or
keynum.  Where Redis falls back to a hand-written getkeys function — specs marked incomplete or
unknown (SORT, MIGRATE) or keys whose flags depend on the arguments (SET, BITFIELD) — a small
function here does the same job (`KEYS_PROCS`).  COMMAND GETKEYS (commands/t_command.py) reports
`key_refs`; the ACL key permissions (security/acl.py) check them; memory accounting
(memory/evict.py), client tracking (events/tracking.py) and replication (a replica's own expires,
the keys a writable replica's write looks up) go by `key_positions`.

Rule: imports only base/ and table/ of the server.

Invariants: the answer for a command line is Redis 7.0's (the same positions in the same order,
with the spec's flags).  Nothing here replies or raises an error reply: COMMAND GETKEYS's checks
and errors are t_command's.  `key_refs` gives [] for arguments that do not make sense for the
command, and may raise on some malformed ones (its callers catch that; `key_positions` then gives
no keys).  `cmd.fixed_key_positions` caches, per argument count, the positions of a command whose
specs are all fixed (begin_search index, find_keys range); memory/evict.py reads that cache
inline before calling `key_positions`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raxdb.protocol.request import string2ll

if TYPE_CHECKING:  # the protocol: what a client hands over (the table's Command satisfies it)
    from raxdb.server.base.interfaces import Command

KeyRefs = list[tuple[int, tuple[str, ...]]]  # (argument position, key-spec flags)


def _tree_dict(node: Any) -> dict[str, Any]:
    items = node[1]
    return {items[i]: items[i + 1] for i in range(0, len(items), 2)}


class KeySpec:
    __slots__ = ("flags", "bs_type", "bs", "fk_type", "fk")

    def __init__(self, node: Any) -> None:
        d = _tree_dict(node)
        self.flags = tuple(f[1] for f in d["flags"][1])
        bs, fk = _tree_dict(d["begin_search"]), _tree_dict(d["find_keys"])
        self.bs_type, self.bs = bs["type"], _tree_dict(bs["spec"])
        self.fk_type, self.fk = fk["type"], _tree_dict(fk["spec"])


_SPECS: dict[str, list[KeySpec]] = {}


def key_specs(cmd: Command) -> list[KeySpec]:
    specs = _SPECS.get(cmd.fullname)
    if specs is None:
        specs = _SPECS[cmd.fullname] = [KeySpec(n) for n in cmd.meta.key_specs]
    return specs


def _keys_from_specs(specs: list[KeySpec], argv: list[bytes]) -> KeyRefs | None:
    """Redis's getKeysUsingKeySpecs; None when a spec is invalid or incomplete for these args."""
    argc = len(argv)
    out: KeyRefs = []
    for spec in specs:
        if spec.bs_type == "index":
            first = spec.bs["index"]
        elif spec.bs_type == "keyword":
            start = spec.bs["startfrom"]
            word = spec.bs["keyword"].encode().lower()
            i = start if start > 0 else argc + start
            end = argc - 1 if start > 0 else 0
            first = 0
            while i != end and 1 <= i < argc:
                if argv[i].lower() == word:
                    first = i + 1
                    break
                i += 1 if start > 0 else -1
            if not first:
                continue  # keyword absent: this spec contributes no keys
        else:
            return None
        if spec.fk_type == "range":
            step, lastkey, limit = spec.fk["keystep"], spec.fk["lastkey"], spec.fk["limit"]
            if lastkey >= 0:
                last = first + lastkey
            elif not limit:
                last = argc + lastkey
            else:
                last = first + ((argc - first) // limit + lastkey)
        elif spec.fk_type == "keynum":
            step = spec.fk["keystep"]
            idx = spec.fk["keynumidx"]
            if idx >= argc - first:
                return None
            numkeys = string2ll(argv[first + idx])
            if numkeys is None or numkeys < 0:
                return None
            first += spec.fk["firstkey"]
            last = first + numkeys - 1
        else:
            return None
        if last >= argc or last < first or first >= argc:
            return None
        out.extend((i, spec.flags) for i in range(first, last + 1, step))
        if "incomplete" in spec.flags:
            return None
    return out


_RO = ("RO", "access")
_OW = ("OW", "update")
_RW = ("RW", "access", "update")


def _sort_keys(argv: list[bytes]) -> KeyRefs:
    out: KeyRefs = [(1, _RO)]
    store = None
    skip = {b"limit": 2, b"get": 1, b"by": 1}
    i = 2
    while i < len(argv):
        a = argv[i].lower()
        if a in skip:
            i += skip[a]
        elif a == b"store" and i + 1 < len(argv):
            store = i + 1  # the last STORE wins, as in SORT itself
        i += 1
    if store is not None:
        out.append((store, _OW))
    return out


def _sort_ro_keys(argv: list[bytes]) -> KeyRefs:
    return [(1, _RO)]


def _migrate_keys(argv: list[bytes]) -> KeyRefs:
    first, num = 3, 1
    skip = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}
    i = 6
    while i < len(argv):
        a = argv[i].lower()
        if a == b"keys":
            if argv[3]:
                return []  # KEYS needs the single-key argument to be empty
            first, num = i + 1, len(argv) - i - 1
            break
        i += skip.get(a, 0) + 1
    flags = ("RW", "access", "delete")
    return [(p, flags) for p in range(first, first + num)]


def _set_keys(argv: list[bytes]) -> KeyRefs:
    for a in argv[3:]:
        if a.lower() == b"get":
            return [(1, _RW)]
    return [(1, _OW)]


def _bitfield_keys(argv: list[bytes]) -> KeyRefs:
    readonly = True
    i = 2
    while i < len(argv):
        rem = len(argv) - i - 1
        a = argv[i].lower()
        if a == b"get" and rem >= 2:
            i += 3
        elif a == b"overflow" and rem >= 1:
            i += 2
        else:
            readonly = False  # SET / INCRBY, or a syntax error: assume it writes
            break
    return [(1, _RO if readonly else _RW)]


# Redis's native getkeys functions where the specs alone do not give its answer.
KEYS_PROCS: dict[str, Callable[[list[bytes]], KeyRefs]] = {
    "sort": _sort_keys, "sort_ro": _sort_ro_keys, "migrate": _migrate_keys, "set": _set_keys,
    "bitfield": _bitfield_keys,
}


def key_refs(cmd: Command, argv: list[bytes]) -> KeyRefs:
    """The key arguments of a full command line and their flags ([] if it has none or the
    arguments do not make sense for it)."""
    specs = key_specs(cmd)
    proc = KEYS_PROCS.get(cmd.fullname)
    variable = any("variable_flags" in s.flags for s in specs)
    if specs and not (variable and proc is not None):
        refs = _keys_from_specs(specs, argv)
        if refs is not None:
            return refs
    if proc is not None:
        return proc(argv)
    return []


def key_positions(cmd: Command, argv: list[bytes]) -> tuple[int, ...] | list[int]:
    """Where `argv` names keys, as COMMAND GETKEYS finds them: the keys memory accounting counts
    after a write and client tracking remembers after a read.  For a command whose key specs
    are all fixed positions (begin_search index, find_keys range), which is most of them, they
    are kept per argument count in `cmd.fixed_key_positions`: the spec walk is otherwise the
    larger part of counting a SET's key."""
    positions = cmd.fixed_key_positions.get(len(argv))
    if positions is not None:
        return positions
    try:
        found = [pos for pos, _ in key_refs(cmd, argv)]
    except Exception:  # a malformed request, which the command itself refused
        return ()
    if all(spec.bs_type == "index" and spec.fk_type == "range" for spec in key_specs(cmd)):
        cmd.fixed_key_positions[len(argv)] = tuple(found)
    return found
