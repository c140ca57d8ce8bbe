"""Fuzz target: the Lua bridge (server/scripting/cbridge.pyx: redis.call as a C function of the Lua
state, and the script's result converted in C), checked against lupa's own crossing, as
tests/unit/test_cbridge.py compares the two.

The input drives a generator of scripts: a few statements of redis.call / redis.pcall /
pcall(redis.call, ...) with commands whose arguments are strings of any bytes, numbers at
formatting edges, KEYS and ARGV, booleans, tables and nil (refused); results kept in locals,
returned inside tables nested to any depth beside error and status tables, RESP3 shapes and
redis.setresp(3).  Each script runs on two in-process servers, one whose engine binds the C bridge
and one whose engine runs lupa's crossing (the engine's fallback); the replies, errors included,
must be the same bytes, and so must what the scripts stored.  Left out: what the two are known to
differ in (test_cbridge.py's skips): a -0.0 argument, an error raised inside a coroutine, more than
~8,000 arguments.  Running interpreted (no cbridge built), both engines use lupa's crossing.
"""

from __future__ import annotations

from typing import Any

NAME = "lua"
INSTRUMENT = ("raxdb.server.scripting",)  # the modules whose coverage guides the fuzzer
# not instrumented: the rewrite of each compiled chunk's tail calls (untail.py, a walk over every
# instruction, the same for both sides) and the input's byte reader: a third of the time instrumented
UNINSTRUMENTED = ("raxdb.server.scripting.untail", "tests.fuzz.targets.lua._Source")
_state: dict[str, Any] = {}


class _Source:
    """The input's bytes as choices (0 when they run out: every input is a script)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def below(self, n: int) -> int:
        return self.byte() % n

    def pick(self, seq: Any) -> Any:
        return seq[self.below(len(seq))]

    def left(self) -> bool:
        return self.pos < len(self.data)


NUMBERS = ["0", "1", "-1", "7", "0.1", "1/3", "1e300", "-1e300", "2^53", "2^53 + 1", "-2^53", "2^63", "-2^63",
           "2^64", "1/0", "-1/0", "1e16", "99999999999999999", "1e17", "-99999999999999990", "123456789012345678",
           "2^52 + 0.5", "-1.5", "1e-5", "3.7", "1795662486531", "10000", "10001"]
KEYS = ["'k'", "'h'", "'l'", "'z'", "'s'", "'x'", "KEYS[1]", "KEYS[2]", "'n'"]
WORDS = ["'v'", "''", "'a\\0b\\r\\n'", "'-ERR not an error'", "'+OK'", "'*1'", "'\\255\\254'", "ARGV[1]", "ARGV[2]",
         "string.rep('x', 70)", "string.rep('y', 3000)", "'f'", "'1'", "'-5'", "'1.5'", "'inf'", "'nan'"]
BAD_ARGS = ["true", "false", "{}", "nil", "print", "{1, 2}"]
# (name, argument kinds): k a key, v a word or number, n a number, o an optional word
COMMANDS = [
    ("set", "kv"), ("get", "k"), ("incr", "k"), ("incrby", "kn"), ("incrbyfloat", "kn"), ("append", "kv"),
    ("strlen", "k"), ("del", "kk"), ("exists", "kk"), ("type", "k"), ("echo", "v"), ("ping", ""), ("mget", "kkk"),
    ("hset", "kvv"), ("hget", "kv"), ("hgetall", "k"), ("hincrby", "kvn"), ("hlen", "k"), ("rpush", "kvvv"),
    ("lrange", "knn"), ("lpop", "k"), ("llen", "k"), ("zadd", "knv"), ("zrange", "knno"), ("zscore", "kv"),
    ("sadd", "kvv"), ("smembers", "k"), ("sismember", "kv"), ("scard", "k"), ("xadd", "k*vv"), ("xlen", "k"),
    ("xrange", "k-+"), ("getrange", "knn"), ("setrange", "knv"), ("object", "Ek"), ("blpop", "k0"),
    ("nosuch", "v"), ("set", "kvvv"), ("get", ""), ("incr", "kv"), ("lrange", "k"),
]
CALLS = ["redis.call", "redis.pcall", "pcall(redis.call, %s)", "redis.pcall"]


def _arg(src: _Source, kind: str) -> str:
    if kind == "k":
        return src.pick(KEYS)
    if kind == "n":
        return src.pick(NUMBERS) if src.below(4) else src.pick(WORDS)
    if kind == "v":
        c = src.below(10)
        if c < 5:
            return src.pick(WORDS)
        if c < 8:
            return src.pick(NUMBERS)
        if c < 9:
            return src.pick(BAD_ARGS)
        return '"' + "".join("\\%d" % src.byte() for _ in range(src.below(12))) + '"'
    if kind == "o":
        return src.pick(["'withscores'", "'rev'", "'x'", "0"])
    if kind == "*":  # explicit IDs: '*' takes the clock's, which differs between the two runs
        return src.pick(["'1-1'", "'2-0'", "'0-1'", "'3-*'", "'1-1'"])
    if kind in "-+0":
        return f"'{kind}'"
    if kind == "E":
        return src.pick(["'encoding'", "'refcount'", "'freq'"])
    return "nil"


def _call(src: _Source) -> str:
    name, kinds = src.pick(COMMANDS)
    args = [repr(name) if src.below(4) else repr(name.upper())] + [_arg(src, k) for k in kinds]
    if src.below(12) == 0:
        args.append(_arg(src, "v"))  # one more (an arity error, or an option)
    how = src.pick(CALLS)
    if "%s" in how:
        return how % ", ".join(args)
    return f"{how}({', '.join(args)})"


def _value(src: _Source, names: list[str], depth: int) -> str:
    c = src.below(16)
    if c < 3 and names:
        return src.pick(names)
    if c < 5:
        return _call(src)
    if c < 7:
        return src.pick(NUMBERS)
    if c < 9:
        return src.pick(WORDS)
    if c == 9:
        return src.pick(["true", "false", "nil"])
    if c == 10:
        return src.pick(["{err = %s}", "{ok = %s}", "redis.error_reply(%s)", "redis.status_reply(%s)",
                         "{err = %s, ignore_error_stats_update = true}", "{double = %s}", "{big_number = %s}",
                         "{map = {a = %s}}", "{set = {[%s] = true}}"]) % src.pick(WORDS + NUMBERS[:3])
    if depth > 14:
        return "1"
    items = [_value(src, names, depth + 1) for _ in range(src.below(5))]
    if src.below(6) == 0:
        items.append("x = 1")
    return "{" + ", ".join(items) + "}"


def script(data: bytes) -> tuple[str, list[bytes]]:
    """The Lua body and the EVAL arguments (numkeys and after) the input makes."""
    src = _Source(data)
    lines = []
    if src.below(5) == 0:
        lines.append("redis.setresp(3)")
    names: list[str] = []
    for i in range(1 + src.below(6)):
        if not src.left():
            break
        name = f"v{i}"
        lines.append(f"local {name} = {_call(src)}")
        names.append(name)
        if src.below(8) == 0:
            lines.append(f"if type({name}) == 'table' then {name}.extra = 1 end")
    lines.append("return " + _value(src, names, 0))
    keys = [b"k", b"h"][: src.below(3)]
    args = [src.pick([b"a", b"", b"1", b"a\0b", b"-3.5", b"x" * 40])] * src.below(3)
    return "\n".join(lines), [str(len(keys)).encode(), *keys, *args]


def setup() -> None:
    import raxdb.server.commands  # noqa: F401 - registers the handlers
    from raxdb.server.base.errors import CommandError
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server
    from raxdb.server.net.client import Client
    from raxdb.server.persistence.emptydata import empty_data
    from raxdb.server.scripting import engine

    sides = []
    for bridged in (True, False):
        srv = Server(Config())
        real = engine._bridge
        if not bridged:
            engine._bridge = lambda _eng: None
        try:
            eng = engine.Engine(srv, b"@user_script")
        finally:
            engine._bridge = real
        sides.append((srv, eng, Client(srv)))
    _state.update(sides=sides, error=CommandError, empty=empty_data)


def _run(side: Any, body: bytes, argv: list[bytes]) -> tuple[bytes, bytes]:
    srv, eng, c = side
    try:
        fn = eng.compile(body)
    except _state["error"] as exc:
        return b"compile", exc.msg
    try:
        return b"reply", eng.run(c, fn, b"sha", [b"EVAL", body, *argv], int(argv[0]), False, False)
    except _state["error"] as exc:
        return b"error", exc.msg


def _dataset(srv: Any) -> list[tuple[bytes, bytes]]:
    from raxdb.storage import rdb

    db = srv.dbs[0]
    return sorted((bytes(k), rdb.dump(db.get(k, 0))) for k in list(db.keys()))


def one_input(data: bytes) -> None:
    body, argv = script(data)
    encoded = body.encode("latin-1")
    (ours, theirs) = (_run(side, encoded, argv) for side in _state["sides"])
    try:
        assert ours == theirs, (body, argv, ours, theirs)
        stored = [_dataset(srv) for srv, _eng, _c in _state["sides"]]
        assert stored[0] == stored[1], (body, argv, stored)
    finally:
        for srv, _eng, _c in _state["sides"]:
            _state["empty"](srv, False)
