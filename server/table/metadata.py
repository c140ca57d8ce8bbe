"""Redis's command metadata, decoded once into named fields.

The data is redis-server 7.0's own COMMAND and COMMAND DOCS replies (and the entries of the
commands later generations added, and of those they changed: see `since` and `changes`), stored as typed JSON trees in
commands/info/<group>.json and commands/docs/<group>.json (tools/gen_commands.py writes them and
describes the layout: a line per command or subcommand, a container's subcommands put back by
`load`).  Each command becomes a `CommandMeta`: what the server reads (arity, flags, key
positions, ACL categories, tips, key specs, subcommands) as fields, and the trees themselves,
which COMMAND INFO and COMMAND DOCS render as they are (`info_tree` and `docs_tree` cut a
container's down to some of its subcommands).  This module is the only one that knows where
things sit in the trees.

When.  The command table calls `load` on import, which builds every command's record from
infoheads.py (tools/gen_infoheads.py: the fields start-up reads, and each command's `since`, as
Python literals: no JSON decoded at start, #56).  A record's trees (its COMMAND INFO entry, and
the tips and key specs in it) are decoded on first use, its group's info file at once, and kept;
nothing is decoded per command call.  The docs files (most of the bytes, read by COMMAND DOCS
alone) are read on the first `docs` asked for, all of them at once, and kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

Tree = Any  # a typed JSON tree: see tools/gen_commands.py


class CommandMeta:
    """One command or subcommand of the table.  A record is not changed once the table holds
    it: `_replace` makes a new one (as a NamedTuple's does, which this was)."""

    __slots__ = ("name", "arity", "flags", "first_key", "last_key", "key_step", "acl_categories",
                 "subcommands", "generation", "group", "_own", "_info")

    def __init__(self, name: str, arity: int, flags: tuple[str, ...], first_key: int, last_key: int,
                 key_step: int, acl_categories: tuple[str, ...], subcommands: dict[str, CommandMeta],
                 group: str = "", own: Tree = None, generation: str = "") -> None:
        self.name = name  # as COMMAND names it: "get", "client|kill"
        self.arity = arity
        self.flags = flags  # COMMAND INFO's flags: "write", "readonly", "denyoom", ...
        self.first_key, self.last_key, self.key_step = first_key, last_key, key_step
        self.acl_categories = acl_categories  # "@read", "@string", ...
        self.subcommands = subcommands  # by full name ("config|get"), in table order
        self.generation = generation  # "": as in commands/info; "7.2": as a later generation changed it (commands/7.2)
        self.group = group  # the file of commands/info/ its trees are in, where `own` is not given
        self._own = own  # its own COMMAND INFO entry (a container's with the placeholder), once decoded
        self._info: Tree = None  # `info`, once built

    @property
    def own_info(self) -> Tree:
        """Its own COMMAND INFO entry, a container's with the placeholder for the subcommands."""
        own = self._own
        if own is None:
            own = self._own = _group_infos(self.group)[self.name]
        return own

    @property
    def info(self) -> Tree:
        """The COMMAND INFO entry, subcommands included."""
        info = self._info
        if info is None:
            info = self.own_info
            if self.subcommands:
                info = info_tree(self, self.subcommands.values())
            self._info = info
        return info

    @property
    def tips(self) -> tuple[str, ...]:
        """"nondeterministic_output", "request_policy:all_shards", ..."""
        return tuple(self.own_info[1][7][1])

    @property
    def key_specs(self) -> tuple[Tree, ...]:
        """Each a typed map (flags, begin_search, find_keys), as COMMAND INFO has it."""
        return tuple(self.own_info[1][8][1])

    @property
    def docs(self) -> Tree | None:
        """The COMMAND DOCS entry (a map), subcommands included; None where Redis has none."""
        if self.subcommands:
            return docs_tree(self, self.subcommands.values())
        return _own_docs(self.name, self.generation)

    def _replace(self, **changes: Any) -> CommandMeta:
        """A copy with some fields changed (`info=` sets the COMMAND INFO entry; new
        `subcommands` without it build theirs on first use)."""
        new = CommandMeta.__new__(CommandMeta)
        for field in CommandMeta.__slots__:
            setattr(new, field, getattr(self, field))
        if "subcommands" in changes:
            new._info = None
        info = changes.pop("info", None)
        if info is not None:
            new._info = info
        for field, value in changes.items():
            setattr(new, field, value)
        return new


def _decode(info: Tree, subs: list[CommandMeta], generation: str = "") -> CommandMeta:
    """A CommandMeta from a command's own COMMAND INFO entry (a container's with its placeholder
    for the subcommands) and its subcommands."""
    f = info[1]
    return CommandMeta(f[0], f[1], tuple([x[1] for x in f[2][1]]), f[3], f[4], f[5], tuple([x[1] for x in f[6][1]]),
                       {s.name: s for s in subs}, own=info, generation=generation)


_GROUP_INFOS: dict[str, dict[str, Tree]] = {}  # commands/info/<group>.json, decoded on first use


def decode_all() -> None:
    """Decode every info and docs file now (a process that forks servers decodes them once for
    all of them: server/main.py's `preload`)."""
    for name in os.listdir(os.path.join(_FOLDER, "info")):
        if name.endswith(".json"):
            _group_infos(name[:-5])
    _own_docs("get")


def _group_infos(group: str) -> dict[str, Tree]:
    trees = _GROUP_INFOS.get(group)
    if trees is None:
        import json  # the first tree decoded imports it: start-up reads none (infoheads.py)

        with open(os.path.join(_FOLDER, "info", group + ".json"), encoding="utf-8") as f:
            trees = _GROUP_INFOS[group] = json.load(f)
    return trees


def info_tree(meta: CommandMeta, subs: Iterable[CommandMeta]) -> Tree:
    """The container's COMMAND INFO entry listing `subs` as its subcommands."""
    tag, fields = meta.own_info
    return [tag, [*fields[:9], ["*", [s.info for s in subs]]]]


def docs_tree(meta: CommandMeta, subs: Iterable[CommandMeta]) -> Tree | None:
    """The container's COMMAND DOCS entry listing `subs` (those that have docs) as its
    subcommands, where its own entry has them."""
    docs = _own_docs(meta.name, meta.generation)
    if docs is None:
        return None
    tag, items = docs
    out = []
    for i in range(0, len(items), 2):
        if items[i] == "subcommands":
            flat = []
            for s in subs:
                sub_docs = s.docs
                if sub_docs is not None:
                    flat.extend([s.name, sub_docs])
            out.extend(["subcommands", ["%", flat]])
        else:
            out.extend([items[i], items[i + 1]])
    return [tag, out]


# Plain files beside this module (the package is installed unzipped: it has extension modules);
# importlib.resources would cost start-up the import of zipfile, tempfile and pathlib.
_FOLDER = os.path.join(os.path.dirname(__file__), "commands")


def _read(part: str) -> dict[str, Tree]:
    """Every group file of commands/<part>/ as one name -> tree dict."""
    import json  # as _group_infos: on first use

    trees: dict[str, Tree] = {}
    folder = os.path.join(_FOLDER, part)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                trees.update(json.load(f))
    return trees


_DOCS: dict[str, dict[str, Tree]] = {}  # the docs files by generation ("": commands/docs), read on first use
_NEW_DOCS: dict[str, Tree] = {}  # the docs of the commands made by `new`


def _own_docs(name: str, generation: str = "") -> Tree | None:
    """A command's own COMMAND DOCS entry (a container's with its placeholder)."""
    trees = _DOCS.get(generation)
    if trees is None:
        trees = _DOCS[generation] = _read(os.path.join(generation, "docs") if generation else "docs")
    docs = trees.get(name)
    return _NEW_DOCS.get(name) if docs is None else docs


# ---- generations (compat-version, #59) ---------------------------------------------------------
# A command exists in the generations from its COMMAND DOCS `since` on: the files hold the commands
# of every generation raxdb answers as, each line with its own.  What a later generation changed of
# an older command (ZRANK's WITHSCORE: arity -3, a new argument) is its entry in commands/<gen>/
# (info/ and docs/, laid out as commands/ is), which replaces the older one from that generation on.
Version = tuple[int, ...]
GENERATIONS = ("7.2", "7.4")  # the folders of commands/ that change older commands, oldest first


def version(text: str) -> Version:
    """"7.2.0" -> (7, 2, 0)."""
    return tuple(int(part) for part in text.split("."))


_SINCE: dict[str, Version] | None = None


def since(name: str) -> Version:
    """The `since` of a command or subcommand's COMMAND DOCS entry ((0,) for one without), as
    infoheads.py has it."""
    global _SINCE
    if _SINCE is None:
        from raxdb.server.table.infoheads import HEADS
        _SINCE = {name: head[7] for name, head in HEADS.items()}
    return _SINCE.get(name, (0,))


def later_than(version: Version) -> set[str]:
    """The commands and subcommands of a later generation than `version` ((7, 0) ...): those
    whose `since` is later, as `since` has it."""
    since("")  # loads _SINCE
    assert _SINCE is not None
    return {name for name, v in _SINCE.items() if v[:2] > version}


def changes(upto: Version) -> dict[str, CommandMeta]:
    """The entries of older commands as the generations up to `upto` changed them, by name (a
    later generation's replacing an earlier one's)."""
    out: dict[str, CommandMeta] = {}
    for gen in GENERATIONS:
        if version(gen) > upto:
            break
        if os.path.isdir(os.path.join(_FOLDER, gen, "info")):
            for name, info in _read(os.path.join(gen, "info")).items():
                out[name] = _decode(info, [], gen)
    return out


# Redis 7.2's COMMAND DOCS give every argument but a oneof or a block a `display_text` (its
# commands/*.json "display"), right after its type.  It is the argument's name but where 7.2
# renamed an argument of 7.0 and kept the old name as its display ("old-format", shown "ip:port"):
# the entries 7.2 changed so (commands/7.2/docs, tools/gen_generation_docs.py) carry their
# display_text already; in the others, whose arguments 7.2 left as they were, the name serves.


def with_display_text(docs: Tree) -> Tree:
    """A COMMAND DOCS entry (a map, subcommands included) as Redis 7.2 renders it: each argument
    with its `display_text` (see above).  A new tree; an argument that has one already is kept."""
    tag, items = docs
    out = []
    for i in range(0, len(items), 2):
        k, v = items[i], items[i + 1]
        if k == "arguments":
            v = ["*", [_arg_display(a) for a in v[1]]]
        elif k == "subcommands":
            sub = v[1]
            v = ["%", [x if j % 2 == 0 else with_display_text(x) for j, x in enumerate(sub)]]
        out.extend([k, v])
    return [tag, out]


def _arg_display(arg: Tree) -> Tree:
    tag, items = arg
    if "display_text" in items[::2]:
        return arg
    out = []
    for i in range(0, len(items), 2):
        k, v = items[i], items[i + 1]
        if k == "arguments":
            v = ["*", [_arg_display(a) for a in v[1]]]
        out.extend([k, v])
        if k == "type" and v not in ("oneof", "block"):
            out.extend(["display_text", items[1]])  # an argument's first field is its name
    return [tag, out]


def new(name: str, arity: int, flags: Iterable[str], first_key: int, last_key: int, key_step: int,
        acl_categories: Iterable[str], summary: str, since: str, group: str, complexity: str) -> CommandMeta:
    """A command Redis 7.0 lacks (no key specs, tips, arguments or subcommands), with the trees a
    newer Redis gives it."""
    info = ["*", [name, arity, ["~", [["+", f] for f in flags]], first_key, last_key, key_step,
                  ["~", [["+", a] for a in acl_categories]], ["~", []], ["~", []], ["~", []]]]
    _NEW_DOCS[name] = ["%", ["summary", summary, "since", since, "group", group, "complexity", complexity]]
    return _decode(info, [])


def load(extra: Iterable[CommandMeta] = ()) -> dict[str, CommandMeta]:
    """The top-level commands by name (sorted), each with its subcommands; `extra` adds commands,
    or subcommands after their container's own ("client|setinfo"), that are not in the files."""
    from raxdb.server.table.infoheads import HEADS  # sorted by name

    # A record a head, ~600 at every start (#56): made in one loop, with no call or comprehension
    # a record; each container's subcommands gathered into the dict its record then holds
    subs: dict[str, dict[str, CommandMeta]] = {}
    tops: list[CommandMeta] = []
    for name, (group, arity, flags, first_key, last_key, key_step, acl_categories, _) in HEADS.items():
        parent, bar, _ = name.partition("|")
        if bar:
            own = subs.get(parent)
            if own is None:
                own = subs[parent] = {}
            own[name] = CommandMeta(name, arity, flags, first_key, last_key, key_step, acl_categories, {}, group)
        else:
            tops.append(CommandMeta(name, arity, flags, first_key, last_key, key_step, acl_categories, {}, group))
    more: list[CommandMeta] = []
    for meta in extra:
        parent, bar, _ = meta.name.partition("|")
        if bar:
            subs.setdefault(parent, {})[meta.name] = meta
        else:
            more.append(meta)
    table: dict[str, CommandMeta] = {}
    for meta in tops:
        own = subs.get(meta.name)
        if own is not None:
            meta.subcommands = own
        table[meta.name] = meta
    for meta in more:
        table[meta.name] = meta
    return table
