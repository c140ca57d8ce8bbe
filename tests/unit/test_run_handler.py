"""The handler's call (server/table/registry.py's `run_handler`): compiled, a cpdef handler's own C
function is called straight, found once per handler; whatever handler a command record holds now
is the one called, by the fast loop, by EXEC (call_command) and by a script's redis.call."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import pytest

import raxdb.server.commands
from raxdb.server.config.options import Config
from raxdb.server.core import Server
from raxdb.server.net.client import Client
from raxdb.server.table import registry
from raxdb.server.table.registry import TABLE
from tests.support.diff import encode_command
from tests.support.transport import SinkTransport


class _Recording(SinkTransport):
    def __init__(self) -> None:
        self.out = bytearray()

    def write(self, data: bytes) -> None:
        self.out += data

    def writelines(self, parts: list[bytes]) -> None:
        for part in parts:
            self.out += part


def _client() -> tuple[Client, _Recording]:
    c = Client(Server(Config()))
    t = _Recording()
    c.connection_made(t)  # type: ignore[arg-type]
    return c, t


def _send(c: Client, t: _Recording, *commands: tuple[str, ...]) -> bytes:
    del t.out[:]
    c.data_received(b"".join(encode_command(cmd) for cmd in commands))
    c.server.flush_writes()
    return bytes(t.out)


BATCH = (("SET", "k", "1"), ("INCR", "k"), ("MULTI",), ("SET", "k", "5"), ("INCR", "k"), ("EXEC",),
         ("EVAL", "return redis.call('incr', KEYS[1])", "1", "k"), ("INCR", "nonint", "extra"))
REPLIES = b"+OK\r\n:2\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:6\r\n:7\r\n" \
          b"-ERR wrong number of arguments for 'incr' command\r\n"


def test_a_replaced_handler_is_the_one_called() -> None:
    """INCR's record first runs its compiled handler (its C function, once found); its handler then
    replaced on the record (as a family's first import replaces a placeholder), the new one serves
    the fast loop, EXEC and redis.call alike; put back, the first one serves again."""
    c, t = _client()
    assert _send(c, t, *BATCH) == REPLIES
    cmd = c.server.table.lookup([b"INCR", b"k"])
    assert cmd is not None
    original = cmd.proc
    seen: list[list[bytes]] = []

    def recording(client: Any, argv: list[bytes]) -> Any:
        seen.append(list(argv))
        return original(client, argv)

    cmd.proc = recording
    try:
        _send(c, t, ("DEL", "k"))
        assert _send(c, t, *BATCH) == REPLIES
        # the fast loop's, EXEC's, the script's (not the arity error's)
        assert seen == [[b"INCR", b"k"], [b"INCR", b"k"], [b"incr", b"k"]]
    finally:
        cmd.proc = original
    _send(c, t, ("DEL", "k"))
    assert _send(c, t, *BATCH) == REPLIES
    assert len(seen) == 3


def test_handler_errors_and_optional_arguments_through_the_c_call() -> None:
    """A compiled handler's CommandError comes back through its C function as through its Python
    call: the error reply, counted, the connection going on; INCR and HSET (a default argument each)
    run with their defaults."""
    c, t = _client()
    stats = c.server.table.lookup([b"INCR"])
    assert stats is not None
    calls, failed = stats.calls, stats.failed_calls  # (the records are shared by every server in process)
    replies = _send(c, t, ("SET", "s", "abc"), ("INCR", "s"), ("HSET", "h", "f", "v"), ("HSET", "h", "f"),
                    ("MULTI",), ("INCR", "s"), ("HSET", "h", "g", "w"), ("EXEC",), ("GET", "s"))
    assert replies == (b"+OK\r\n-ERR value is not an integer or out of range\r\n:1\r\n"
                       b"-ERR wrong number of arguments for 'hset' command\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n"
                       b"*2\r\n-ERR value is not an integer or out of range\r\n:1\r\n$3\r\nabc\r\n")
    assert (stats.calls - calls, stats.failed_calls - failed) == (2, 2)


# The handlers of the benchmarked rows and of the commands users run most (GEOSEARCH: its own entry
# over the body it shares with GEORADIUS, t_geo.py): compiled, each exports its C function in the
# reference signature (registry.pxd's `_entry_shape`), so run_handler calls it.
HOT = ("evalsha", "evalsha_ro", "eval", "fcall", "fcall_ro", "zrange", "zrangebyscore", "zrevrange",
       "zscore", "zincrby", "zrem", "zscan", "smembers", "sinter", "sunion", "sadd", "spop", "srem",
       "sismember", "scard", "sscan", "lrange", "llen", "lindex", "scan", "hscan", "hdel", "hexists",
       "hlen", "xrange", "xrevrange", "xlen", "publish", "mset", "mget", "decr", "incrby", "expire",
       "pexpire", "ttl", "pttl", "del", "unlink", "exists", "type", "persist", "touch", "rename", "geosearch",
       "watch", "blpop", "brpoplpush", "blmove", "zpopmax", "zremrangebyscore", "xreadgroup", "xpending",
       "hrandfield", "zrandmember")


def _capsule_name(capsule: object) -> bytes:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule)


@pytest.mark.skipif(not hasattr(registry, "__pyx_capi__"), reason="interpreted: no C functions")
def test_hot_handlers_export_the_reference_c_signature() -> None:
    raxdb.server.commands.import_all()
    want = _capsule_name(vars(registry)["__pyx_capi__"]["_entry_shape"])
    wrong = []
    for name in HOT:
        cmd = TABLE.commands[name]
        module = sys.modules[cmd.proc.__module__]
        capsule = getattr(module, "__pyx_capi__", {}).get(cmd.proc.__name__)
        if capsule is None or _capsule_name(capsule) != want:
            wrong.append(name)
    assert wrong == []


def test_converted_handlers_alone_in_exec_and_in_scripts() -> None:
    """Handlers that became cpdef answer as before on every path that calls them: the fast loop,
    EXEC (call_command), a script's redis.call and a function's; their errors too (EVALSHA's
    NOSCRIPT alone and inside EXEC, EXPIRE's non-integer, a wrong type through redis.call)."""
    c, t = _client()
    sha = _send(c, t, ("SCRIPT", "LOAD", "return redis.call('exists', KEYS[1])")).split(b"\r\n")[1]
    lib = ("#!lua name=cpdeflib\nredis.register_function{function_name='cpdef_ttl', flags={'no-writes'},"
           " callback=function(k) return redis.call('ttl', k[1]) end}")
    assert _send(c, t, ("FUNCTION", "LOAD", "REPLACE", lib)) == b"$8\r\ncpdeflib\r\n"
    replies = _send(
        c, t, ("DEL", "k", "s"), ("MSET", "k", "1", "s", "x"), ("EXPIRE", "k", "100"), ("TTL", "k"),
        ("EXPIRE", "k", "soon"), ("EVALSHA", sha.decode(), "1", "k"), ("EVALSHA", "0" * 40, "0"),
        ("FCALL", "cpdef_ttl", "1", "k"), ("SADD", "set", "a", "b"),
        ("MULTI",), ("EVALSHA", sha.decode(), "1", "nokey"), ("EVALSHA", "0" * 40, "0"), ("MGET", "k", "s", "no"),
        ("SISMEMBER", "set", "a"), ("FCALL_RO", "cpdef_ttl", "1", "s"), ("EXEC",),
        ("EVAL", "return redis.pcall('llen', KEYS[1])", "1", "k"), ("EXISTS", "k", "s", "no"), ("DEL", "k", "s", "set"))
    assert replies == (
        b":0\r\n+OK\r\n:1\r\n:100\r\n-ERR value is not an integer or out of range\r\n:1\r\n"
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n:100\r\n:2\r\n"
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
        b"*5\r\n:0\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n*3\r\n$1\r\n1\r\n$1\r\nx\r\n$-1\r\n:1\r\n:-1\r\n"
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:2\r\n:3\r\n")


# The handlers that stayed defs after the others became cpdef (an inner function, a lambda or an
# inner generator, now module level; or a subcommand), then converted (#56, h-def2).  Compiled,
# every handler of a compiled command module has a C function run_handler calls: the reference
# signature, or it with a record of optional arguments (HSET's name, INCR's delta).
def _c_entry(cmd: Any, want: bytes) -> bool:
    module = sys.modules[cmd.proc.__module__]
    capsule = getattr(module, "__pyx_capi__", {}).get(cmd.proc.__name__)
    if capsule is None:
        return False
    shape = _capsule_name(capsule)
    return shape == want or (shape.startswith(want[:-1] + b", struct __pyx_opt_args_")
                             and shape.endswith(b" *__pyx_optional_args)"))


@pytest.mark.skipif(not hasattr(registry, "__pyx_capi__"), reason="interpreted: no C functions")
def test_every_compiled_handler_has_a_c_entry() -> None:
    raxdb.server.commands.import_all()
    want = _capsule_name(vars(registry)["__pyx_capi__"]["_entry_shape"])
    wrong = []
    for cmd in TABLE.every_command():
        proc = cmd.proc
        if proc is None or cmd.subcommands:  # a container: its subcommands are its handlers
            continue
        module = sys.modules.get(getattr(proc, "__module__", ""))
        if module is None or not hasattr(module, "__pyx_capi__"):  # an interpreted module's handler
            continue
        if not _c_entry(cmd, want):
            wrong.append(cmd.fullname)
    assert wrong == []


LATER = (("HSET", "h", "f", "v"), ("ZADD", "z", "1.5", "m"), ("MSET", "a", "ohmytext", "b", "mynewtext"),
         ("HRANDFIELD", "h"), ("HRANDFIELD", "h", "-3"), ("HRANDFIELD", "h", "-3", "withValues"),
         ("HRANDFIELD", "h", "2", "WITHVALUES"), ("HRANDFIELD", "h", "1"), ("HRANDFIELD", "h", "0"),
         ("HRANDFIELD", "no", "-2"), ("HRANDFIELD", "h", "1", "WITHVALUE"), ("HRANDFIELD", "z", "-1"),
         ("ZRANDMEMBER", "z"), ("ZRANDMEMBER", "z", "-3", "WITHSCORES"), ("ZRANDMEMBER", "z", "-2"),
         ("ZRANDMEMBER", "z", "5", "withscores"), ("ZRANDMEMBER", "z", "-9223372036854775808"),
         ("ZRANDMEMBER", "h", "1"), ("KEYS", "[h]"), ("LCS", "a", "b"), ("LCS", "a", "b", "LEN"),
         ("LCS", "a", "b", "IDX", "MINMATCHLEN", "2", "WITHMATCHLEN"), ("LCS", "a", "b", "IDX"),
         ("SETBIT", "bits", "7", "1"), ("GETBIT", "bits", "7"), ("BITCOUNT", "bits"), ("BITPOS", "bits", "1"),
         ("BITOP", "NOT", "inv", "bits"), ("OBJECT", "ENCODING", "h"), ("PUBSUB", "NUMSUB", "ch"),
         ("SCRIPT", "EXISTS", "0" * 40), ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
         ("XINFO", "GROUPS", "s"), ("MOVE", "a", "1"), ("MOVE", "a", "1"))


def test_later_handlers_alone_in_exec_and_in_scripts(diff: Any) -> None:
    """The handlers converted last answer as redis-server 7.0.15 does, RESP2 and RESP3: alone,
    inside EXEC, and through redis.call / redis.pcall (HRANDFIELD's and ZRANDMEMBER's negative
    counts, their encoder now a partial of a module-level function; one field or member, so that the
    random picks are the same on both servers)."""
    for cmd in LATER:
        diff(*cmd)
    diff("MULTI")
    for cmd in LATER[3:]:
        diff(*cmd)
    diff("EXEC")
    for script in ("return redis.call('hrandfield', KEYS[1], -3, 'withvalues')",
                   "return redis.call('zrandmember', KEYS[2], -2, 'withscores')",
                   "return redis.call('lcs', 'a', 'b', 'idx', 'withmatchlen')",
                   "return redis.pcall('zrandmember', KEYS[1], 1)",
                   "return redis.call('keys', 'h')"):
        diff("EVAL", script, "2", "h", "z")
