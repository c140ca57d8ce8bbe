"""Regenerate server/commands/redis_commands.json from a running redis-server 7.0.

The command table's metadata (arity, flags, key specs, ACL categories, tips, docs) is interface
fact that redis-cli, client libraries and cluster proxies read through COMMAND and COMMAND DOCS.
Rather than retyping it, we ask the oracle once and store its RESP3 replies as a typed JSON tree,
so both RESP2 and RESP3 renderings stay exact.  Usage: python tools/gen_commands.py [port].

Typed tree: int -> integer, str -> bulk string, null -> null, ["+", s] status,
["*", [...]] array, ["%", [k, v, ...]] map, ["~", [...]] set.
"""

import json
import socket
import sys


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


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    sock = socket.create_connection(("127.0.0.1", port))
    f = sock.makefile("rb")
    _cmd(sock, f, "HELLO", "3")
    info = _cmd(sock, f, "COMMAND")
    docs = _cmd(sock, f, "COMMAND", "DOCS")
    commands = {}
    for entry in info[1]:
        name = entry[1][0]
        commands[name] = {"info": entry}
    it = iter(docs[1])
    for name, doc in zip(it, it, strict=True):
        commands.setdefault(name, {})["docs"] = doc
    out = {"source": "redis-server 7.0 COMMAND / COMMAND DOCS (RESP3)", "commands": commands}
    with open("server/commands/redis_commands.json", "w") as fh:
        json.dump(out, fh, separators=(",", ":"), sort_keys=True)
    print(f"{len(commands)} commands")


if __name__ == "__main__":
    main()
