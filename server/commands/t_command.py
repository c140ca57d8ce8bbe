"""COMMAND, COMMAND COUNT / INFO / DOCS / LIST / GETKEYS / GETKEYSANDFLAGS / HELP.

Replies are rendered from the command table's metadata trees (Redis 7.0's own COMMAND INFO and
COMMAND DOCS output), restricted to what raxdb implements: a container lists only the
subcommands it has handlers for, so clients (redis-cli hints, cluster clients, ACL tooling) see
exactly what they can call.

Key extraction (GETKEYS, and `key_refs` for anyone who needs key positions) is data-driven: it
walks each command's key specs (begin_search index/keyword, find_keys range/keynum) as Redis's
getKeysUsingKeySpecs does.  Where Redis falls back to a hand-written getkeys function — specs
marked incomplete or unknown (SORT, MIGRATE) or keys whose flags depend on the arguments (SET,
BITFIELD) — a small function below does the same job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError
from raxdb.server.commands.t_config import help_reply
from raxdb.server.table import metadata
from raxdb.server.table.registry import TABLE, Command, command
from raxdb.storage.glob import glob_match

KeyRefs = list[tuple[int, tuple[str, ...]]]  # (argument position, key-spec flags)


# ---- metadata trees ----------------------------------------------------------------------------
def _implemented_info(cmd: Command) -> Any:
    """cmd's COMMAND INFO tree with the subcommand list cut down to implemented subcommands."""
    if not cmd.subcommands:
        return cmd.meta.info
    return metadata.info_tree(cmd.meta, [sub.meta for sub in cmd.subcommands.values()])


def _implemented_docs(cmd: Command) -> Any:
    if not cmd.subcommands:
        return cmd.meta.docs
    return metadata.docs_tree(cmd.meta, [sub.meta for sub in cmd.subcommands.values()])


def _info_reply(cmd: Command | None, enc: R.Encoder) -> bytes:
    return enc.null if cmd is None else R.encode_tree(_implemented_info(cmd), enc)


@command("command")
def command_all(c, argv):
    enc = c.enc
    return R.array([_info_reply(cmd, enc) for cmd in TABLE.all_commands()])


@command("command|count")
def command_count(c, argv):
    return R.integer(len(TABLE.commands))


@command("command|info")
def command_info(c, argv):
    enc = c.enc
    if len(argv) == 2:
        return R.array([_info_reply(cmd, enc) for cmd in TABLE.all_commands()])
    return R.array([_info_reply(TABLE.lookup_name(name), enc) for name in argv[2:]])


@command("command|docs")
def command_docs(c, argv):
    enc = c.enc
    if len(argv) == 2:
        cmds = TABLE.all_commands()
    else:
        cmds = []
        for name in argv[2:]:
            cmd = TABLE.lookup_name(name)
            if cmd is not None and cmd not in cmds:
                cmds.append(cmd)
    flat = []
    for cmd in cmds:
        docs = _implemented_docs(cmd)
        if docs is not None:
            flat.append(R.bulk_str(cmd.fullname))
            flat.append(R.encode_tree(docs, enc))
    return enc.map(flat)


@command("command|list")
def command_list(c, argv):
    cmds = TABLE.every_command()
    if len(argv) > 2:
        if len(argv) != 5 or argv[2].lower() != b"filterby":
            raise CommandError("ERR syntax error")
        kind, value = argv[3].lower(), argv[4]
        if kind == b"module":
            cmds = []  # raxdb loads no modules
        elif kind == b"aclcat":
            cat = "@" + value.decode(errors="replace").lower()
            cmds = [cmd for cmd in cmds if cat in cmd.acl_categories]
        elif kind == b"pattern":
            cmds = [cmd for cmd in cmds if glob_match(value, cmd.fullname.encode(), nocase=True)]
        else:
            raise CommandError("ERR syntax error")
    return R.bulk_array([cmd.fullname.encode() for cmd in cmds])


_HELP = [
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
]


@command("command|help")
def command_help(c, argv):
    return help_reply("COMMAND", _HELP)


# ---- key extraction ----------------------------------------------------------------------------
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
            from raxdb.protocol.request import _string2ll

            numkeys = _string2ll(argv[first + idx])
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
_KEYS_PROCS: dict[str, Callable[[list[bytes]], KeyRefs]] = {
    "sort": _sort_keys, "sort_ro": _sort_ro_keys, "migrate": _migrate_keys, "set": _set_keys,
    "bitfield": _bitfield_keys,
}


def key_refs(cmd: Command, argv: list[bytes]) -> KeyRefs:
    """The key arguments of a full command line and their flags ([] if it has none or the
    arguments do not make sense for it)."""
    specs = key_specs(cmd)
    proc = _KEYS_PROCS.get(cmd.fullname)
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


def _resolve(argv: list[bytes]) -> Command | None:
    """The command named by argv (implemented ones first, else Redis 7.0's metadata)."""
    cmd = TABLE.lookup(argv)
    if cmd is not None and cmd.proc is not None:
        return cmd
    name = argv[0].lower().decode(errors="replace")
    meta = TABLE.meta.get(name)
    if meta is None or (cmd is None and name in TABLE.registered):  # renamed away (rename-command)
        return None
    top = Command(name, meta)
    if not meta.subcommands:
        return top
    if len(argv) < 2:
        return None
    sub = argv[1].lower().decode(errors="replace")
    sub_meta = meta.subcommands.get(f"{name}|{sub}")
    return None if sub_meta is None else Command(sub, sub_meta, parent=top)


def _getkeys(argv: list[bytes]) -> KeyRefs:
    args = argv[2:]
    cmd = _resolve(args)
    if cmd is None:
        raise CommandError("ERR Invalid command specified")
    if not key_specs(cmd) and cmd.fullname not in _KEYS_PROCS:
        raise CommandError("ERR The command has no key arguments")
    if not cmd.arity_ok(len(args)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    refs = key_refs(cmd, args)
    if not refs and "no_mandatory_keys" not in cmd.flags:
        raise CommandError("ERR Invalid arguments specified for command")
    return refs


@command("command|getkeys")
def command_getkeys(c, argv):
    return R.bulk_array([argv[2 + pos] for pos, _ in _getkeys(argv)])


@command("command|getkeysandflags")
def command_getkeysandflags(c, argv):
    enc = c.enc
    return R.array([R.array([R.bulk(argv[2 + pos]), enc.set([R.status(f) for f in flags])])
                    for pos, flags in _getkeys(argv)])
