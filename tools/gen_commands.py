"""Regenerate server/table/commands/{info,docs}/*.json from a running redis-server 7.0.

The command table's metadata (arity, flags, key specs, ACL categories, tips, docs) is interface
fact that redis-cli, client libraries and cluster proxies read through COMMAND and COMMAND DOCS.
Rather than retyping it, we ask the oracle once and store its RESP3 replies as typed JSON trees,
so both RESP2 and RESP3 renderings stay exact.  server/table/metadata.py decodes the files into
named fields at start-up.  Usage: python tools/gen_commands.py [port]
(e.g. against `redis-server --port 7777 --save ""`); it writes into the checkout it sits in,
whatever the working directory.

Typed tree: int -> integer, str -> bulk string, null -> null, ["+", s] status,
["*", [...]] array, ["%", [k, v, ...]] map, ["~", [...]] set.

Layout, chosen so that a diff names what changed and start-up reads only what it needs:
- two folders, info/ (each command's COMMAND INFO entry) and docs/ (its COMMAND DOCS entry): the
  server decodes the first at start-up and reads the second (most of the bytes) only when COMMAND
  DOCS first asks, and a diff tells a change of behaviour (arity, flags, key specs) from one of
  documentation;
- in each, one file per command group, as COMMAND DOCS' "group" says and as Redis's own docs and
  src/commands/ group them (string.json, sorted-set.json, server.json, ...); a subcommand lives
  in its container's file;
- one command per line, `"name": <tree>`, the lines sorted by name, so a changed command is a
  changed line that begins with its name;
- a subcommand is a line of its own ("client|kill"), right after its container's; the container's
  line keeps an empty placeholder where its subcommands go (the last field of its COMMAND INFO
  entry, the "subcommands" value of its docs) and the loader puts them back, in file order.
  The subcommands are sorted by name: Redis lists them in its dict's order, which a per-process
  random hash seed decides, so an unsorted dump would reorder them on every run.
Each file is one JSON object, so it loads with one json.loads and reads in any JSON tool.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "server" / "table" / "commands"


def _read_line(f) -> bytes:
    line = f.readline()
    return line[:-2]


def _parse(f):
    line = _read_line(f)
    t, rest = line[:1], line[1:].decode()
    if t == b"+":
        return ["+", rest]
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode()
    if t == b"_":
        return None
    if t in (b"*", b"~"):
        n = int(rest)
        items = [_parse(f) for _ in range(n)]
        return ["*" if t == b"*" else "~", items]
    if t == b"%":
        n = int(rest)
        items = []
        for _ in range(n):
            items.append(_parse(f))
            items.append(_parse(f))
        return ["%", items]
    if t == b"-":
        raise RuntimeError(rest)
    raise RuntimeError(f"unexpected type {t!r}")


def _cmd(sock, f, *args):
    out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in map(str.encode, args))
    sock.sendall(out)
    return _parse(f)


def _pairs(node) -> dict:
    items = node[1]
    return dict(zip(items[::2], items[1::2], strict=True))


def split(info, docs) -> dict[str, dict]:
    """One COMMAND INFO entry and its COMMAND DOCS entry as the records ({"info": tree, "docs":
    tree}) of the command and of each of its subcommands (placeholders left in the container's
    trees), by name."""
    tag, items = info
    name, subs = items[0], items[-1][1]
    sub_docs = {}
    if docs is not None and subs:
        doc_items = docs[1]
        for i in range(0, len(doc_items), 2):
            if doc_items[i] == "subcommands":
                sub_docs = _pairs(doc_items[i + 1])
                docs = [docs[0], [*doc_items[:i + 1], ["%", []], *doc_items[i + 2:]]]
                break
    own = {"info": [tag, [*items[:-1], ["*", []]]] if subs else info}
    if docs is not None:
        own["docs"] = docs
    records = {name: own}
    for sub in subs:
        full = sub[1][0]
        records[full] = {"info": sub}
        if full in sub_docs:
            records[full]["docs"] = sub_docs.pop(full)
    assert not sub_docs, f"docs for subcommands COMMAND does not list: {sorted(sub_docs)}"
    return records


def _write_object(path: Path, lines: dict[str, object]) -> None:
    text = ",\n".join(f"{json.dumps(name)}: {json.dumps(lines[name], separators=(',', ':'))}"
                      for name in sorted(lines))
    path.write_text("{\n" + text + "\n}\n")


def write(commands: dict[str, dict], out: Path = OUT) -> dict[str, int]:
    """Write info/<group>.json and docs/<group>.json (and remove those of groups no longer
    there); the number of lines per group."""
    groups: dict[str, dict[str, dict]] = {}
    for rec in commands.values():
        group = _pairs(rec["docs"])["group"] if "docs" in rec else "unknown"
        groups.setdefault(group, {}).update(split(rec["info"], rec.get("docs")))
    for part in ("info", "docs"):
        folder = out / part
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        for group, records in groups.items():
            lines = {name: rec[part] for name, rec in records.items() if part in rec}
            if lines:
                _write_object(folder / f"{group}.json", lines)
    return {group: len(records) for group, records in sorted(groups.items())}


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    sock = socket.create_connection(("127.0.0.1", port))
    f = sock.makefile("rb")
    _cmd(sock, f, "HELLO", "3")
    info = _cmd(sock, f, "COMMAND")
    docs = _cmd(sock, f, "COMMAND", "DOCS")
    commands: dict[str, dict] = {}
    for entry in info[1]:
        commands[entry[1][0]] = {"info": entry}
    it = iter(docs[1])
    for name, doc in zip(it, it, strict=True):
        commands.setdefault(name, {})["docs"] = doc
    counts = write(commands)
    print(f"{len(commands)} commands, {sum(counts.values())} with their subcommands, in {len(counts)} groups: {counts}")


if __name__ == "__main__":
    main()
