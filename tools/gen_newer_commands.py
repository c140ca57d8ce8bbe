"""Add commands newer than Redis 7.0 to server/table/commands/{info,docs}/<group>.json from Redis's
own command descriptions (src/commands/<name>.json of a Redis checkout, e.g. the 7.4 tag).

gen_commands.py asks a running redis-server 7.0, which lacks them; this renders what Redis 7.4's
COMMAND INFO and COMMAND DOCS reply for such a command from the same JSON Redis generates its
command table from, in gen_commands.py's typed-tree layout.  Orders follow Redis: command flags
as COMMAND_FLAG_NAMES lists them, ACL categories as ACL_CATEGORY_NAMES, key-spec flags as
addReplyFlagsForKeyArgs, and each argument's fields as addReplyCommandArgList (7.2+: every
argument but a oneof or a block has a display_text).
Usage: python tools/gen_newer_commands.py path/to/src/commands/hexpire.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "server" / "table" / "commands"

_CMD_FLAGS = ["write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking", "loading",
              "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth", "may_replicate",
              "sentinel", "only_sentinel", "no_mandatory_keys", "no_async_loading", "no_multi",
              "movablekeys", "allow_busy"]
_ACL = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog",
        "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
        "transaction", "scripting"]
_KS_FLAGS = ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete",
             "variable_flags"]


def _set(items: list[str]) -> list:
    return ["~", [["+", x] for x in items]]


def _info(name: str, d: dict) -> list:
    flags = [f.lower() for f in d.get("command_flags", [])]
    cats = {c.lower() for c in d.get("acl_categories", [])}
    if "write" in flags:
        cats.add("write")
    if "readonly" in flags:
        cats.add("read")
    cats.add("fast" if "fast" in flags else "slow")
    specs = []
    for ks in d.get("key_specs", []):
        kf = {f.upper() if f.upper() in ("RO", "RW", "OW", "RM") else f.lower() for f in ks["flags"]}
        begin = ks["begin_search"]["index"]
        rng = ks["find_keys"]["range"]
        specs.append(["%", ["flags", _set([f for f in _KS_FLAGS if f in kf]),
                            "begin_search", ["%", ["type", "index", "spec", ["%", ["index", begin["pos"]]]]],
                            "find_keys", ["%", ["type", "range", "spec",
                                                ["%", ["lastkey", rng["lastkey"], "keystep", rng["step"],
                                                       "limit", rng["limit"]]]]]]])
    first = d["key_specs"][0]["begin_search"]["index"]["pos"] if specs else 0
    return ["*", [name, d["arity"], _set([f for f in _CMD_FLAGS if f in flags]), first, first if specs else 0,
                  1 if specs else 0, _set(["@" + c for c in _ACL if c in cats]), ["~", []], ["~", specs],
                  ["~", []]]]


def _args(args: list[dict]) -> list:
    out = []
    for a in args:
        # as utils/generate-command-code.py builds the C table: names and displays in lowercase,
        # tokens in uppercase, each text inside a C string literal (MIGRATE's token `""` is empty)
        m = ["name", a["name"].lower(), "type", a["type"]]
        if a["type"] not in ("oneof", "block"):
            m += ["display_text", a.get("display", a["name"]).lower()]
        if "key_spec_index" in a:
            m += ["key_spec_index", a["key_spec_index"]]
        for k in ("token", "summary", "since", "deprecated_since"):  # addReplyCommandArgList's order
            if a.get(k):
                v = a[k].upper() if k == "token" else a[k]
                m += [k, "" if v == '""' else v]
        fl = [f for f in ("optional", "multiple", "multiple_token") if a.get(f)]
        if fl:
            m += ["flags", _set(fl)]
        if "arguments" in a:
            m += ["arguments", ["*", _args(a["arguments"])]]
        out.append(["%", m])
    return out


def _docs(d: dict, container: bool = False) -> list:
    """COMMAND DOCS' entry (addReplyCommandDocs' order); a container's with the empty placeholder
    gen_commands.py's layout puts its subcommands in."""
    m = []
    for k in ("summary", "since", "group", "complexity"):  # Redis gives those a command has
        if k in d:
            m += [k, d[k].replace("_", "-") if k == "group" else d[k]]  # "sorted_set" is shown "sorted-set"
    if d.get("doc_flags"):
        m += ["doc_flags", _set([f.lower() for f in d["doc_flags"]])]
    for k in ("deprecated_since", "replaced_by"):
        if k in d:
            m += [k, d[k]]
    if d.get("history"):
        m += ["history", ["~", [["*", h] for h in d["history"]]]]
    if d.get("arguments"):
        m += ["arguments", ["*", _args(d["arguments"])]]
    if container:
        m += ["subcommands", ["%", []]]
    return ["%", m]


def _write(path: Path, entries: dict[str, list]) -> None:
    trees = json.loads(path.read_text())
    trees.update(entries)
    lines = [f"{json.dumps(k)}: {json.dumps(trees[k], separators=(',', ':'))}" for k in sorted(trees)]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def main(paths: list[str]) -> None:
    by_group: dict[str, tuple[dict, dict]] = {}
    for p in paths:
        for upper, d in json.loads(Path(p).read_text()).items():
            name = upper.lower()
            info, docs = by_group.setdefault(d["group"], ({}, {}))
            info[name] = _info(name, d)
            docs[name] = _docs(d)
    for group, (info, docs) in by_group.items():
        _write(OUT / "info" / f"{group}.json", info)
        _write(OUT / "docs" / f"{group}.json", docs)


if __name__ == "__main__":
    main(sys.argv[1:])
