"""COMMAND, COMMAND COUNT / INFO / DOCS / LIST / GETKEYS / GETKEYSANDFLAGS / HELP.

Replies are rendered from the command table's metadata trees (Redis 7.0's own COMMAND INFO and
COMMAND DOCS output), restricted to what raxdb implements: a container lists only the
subcommands it has handlers for, so clients (redis-cli hints, cluster clients, ACL tooling) see
exactly what they can call; and to the server's generation (its own table: compat-version).

Key extraction is the command table's (table/getkeys.py: the key specs walked as Redis's
getKeysUsingKeySpecs walks them, and Redis's hand-written getkeys functions where it has them);
GETKEYS and GETKEYSANDFLAGS resolve the command named (implemented or only in Redis 7.0's
metadata), apply Redis's checks and errors, and reply with what it finds.
"""

from __future__ import annotations

from typing import Any

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError
from raxdb.server.commands.t_config import help_reply
from raxdb.server.table import metadata
from raxdb.server.table.getkeys import KEYS_PROCS, KeyRefs, key_refs, key_specs
from raxdb.server.table.registry import Command, CommandTable, command
from raxdb.storage.glob import glob_match


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
    return R.array([_info_reply(cmd, enc) for cmd in c.server.table.all_commands()])


@command("command|count")
def command_count(c, argv):
    return R.integer(len(c.server.table.commands))


@command("command|info")
def command_info(c, argv):
    enc = c.enc
    if len(argv) == 2:
        return R.array([_info_reply(cmd, enc) for cmd in c.server.table.all_commands()])
    return R.array([_info_reply(c.server.table.lookup_name(name), enc) for name in argv[2:]])


@command("command|docs")
def command_docs(c, argv):
    enc = c.enc
    if len(argv) == 2:
        cmds = c.server.table.all_commands()
    else:
        cmds = []
        for name in argv[2:]:
            cmd = c.server.table.lookup_name(name)
            if cmd is not None and cmd not in cmds:
                cmds.append(cmd)
    flat = []
    display = c.server.config.compat_version >= (7, 2)  # 7.2 added the arguments' display_text
    for cmd in cmds:
        docs = _implemented_docs(cmd)
        if docs is not None:
            flat.append(R.bulk_str(cmd.fullname))
            flat.append(R.encode_tree(metadata.with_display_text(docs) if display else docs, enc))
    return enc.map(flat)


@command("command|list")
def command_list(c, argv):
    cmds = c.server.table.every_command()
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


# ---- GETKEYS / GETKEYSANDFLAGS (the keys: table/getkeys.py) -------------------------------------
def _resolve(table: CommandTable, argv: list[bytes]) -> Command | None:
    """The command named by argv (implemented ones first, else Redis 7.0's metadata)."""
    cmd = table.lookup(argv)
    if cmd is not None and cmd.proc is not None:
        return cmd
    name = argv[0].lower().decode(errors="replace")
    meta = table.meta.get(name)
    if meta is None or (cmd is None and name in table.registered):  # renamed away (rename-command)
        return None
    top = Command(name, meta)
    if not meta.subcommands:
        return top
    if len(argv) < 2:
        return None
    sub = argv[1].lower().decode(errors="replace")
    sub_meta = meta.subcommands.get(f"{name}|{sub}")
    return None if sub_meta is None else Command(sub, sub_meta, parent=top)


def _getkeys(table: CommandTable, argv: list[bytes]) -> KeyRefs:
    args = argv[2:]
    cmd = _resolve(table, args)
    if cmd is None:
        raise CommandError("ERR Invalid command specified")
    if not key_specs(cmd) and cmd.fullname not in KEYS_PROCS:
        raise CommandError("ERR The command has no key arguments")
    if not cmd.arity_ok(len(args)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    refs = key_refs(cmd, args)
    if not refs and "no_mandatory_keys" not in cmd.flags:
        raise CommandError("ERR Invalid arguments specified for command")
    return refs


@command("command|getkeys")
def command_getkeys(c, argv):
    return R.bulk_array([argv[2 + pos] for pos, _ in _getkeys(c.server.table, argv)])


@command("command|getkeysandflags")
def command_getkeysandflags(c, argv):
    enc = c.enc
    return R.array([R.array([R.bulk(argv[2 + pos]), enc.set([R.status(f) for f in flags])])
                    for pos, flags in _getkeys(c.server.table, argv)])
