"""FUNCTION LOAD / FCALL / FCALL_RO / LIST / DELETE / FLUSH / STATS / DUMP / RESTORE against
redis-server 7.0, byte for byte where Redis's output is deterministic."""

from __future__ import annotations

import re

import pytest

from tests.support.diff import RawConnection, parse

pytestmark = pytest.mark.oracle

LIB1 = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return {keys, args} end)"
LIBX = ("#!lua name=x\nredis.register_function{function_name='ab', callback=function() return 1 end, "
        "description='d', flags={'no-writes', 'allow-oom'}}\nredis.register_function('cd', function() return 2 end)")


@pytest.fixture
def fdiff(diff):
    diff("FUNCTION", "FLUSH")
    yield diff
    diff("FUNCTION", "FLUSH")


def test_load_and_call(fdiff):
    fdiff("FUNCTION", "LOAD", LIB1)
    fdiff("FCALL", "f1", "2", "k1", "k2", "a1")
    fdiff("FCALL", "f1", "0")
    fdiff("FUNCTION", "LOAD", LIB1)
    fdiff("FUNCTION", "LOAD", "REPLACE", LIB1)
    fdiff("FUNCTION", "LOAD", "BADOPT", LIB1)
    fdiff("FUNCTION", "LOAD", "replace", "REPLACE", LIB1)
    fdiff("FUNCTION", "LOAD", LIBX)
    fdiff("FCALL", "cd", "0")
    fdiff("FCALL_RO", "ab", "0")
    fdiff("FCALL_RO", "cd", "0")
    fdiff("FCALL", "f1", "abc")
    fdiff("FCALL", "f1", "-1")
    fdiff("FCALL", "f1", "3", "a")
    # a function's call runs through one closure made once: an error leaves nothing behind for
    # the next call
    fdiff("FUNCTION", "LOAD", "#!lua name=e\nredis.register_function('boom', function(keys, args) "
          "return redis.call('incr', keys[1]) end)")
    fdiff("SET", "s", "text")
    fdiff("FCALL", "boom", "1", "s")
    fdiff("FCALL", "f1", "1", "k1", "a1", "a2")
    fdiff("FCALL", "boom", "1", "n")
    fdiff("FCALL", "nosuch", "0")
    fdiff("FCALL", "nosuch", "abc")
    fdiff("FCALL")
    fdiff("FUNCTION", "DELETE", "x")
    fdiff("FCALL", "cd", "0")
    fdiff("FUNCTION", "DELETE", "x")


def test_subcommand_argument_errors(fdiff):
    fdiff("FUNCTION", "LOAD", LIB1)
    for args in (["RESTORE", "a", "b", "c"], ["FLUSH", "SYNC", "x"], ["FLUSH", "bad"], ["LIST", "WITHCODE", "withcode"],
                 ["LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"], ["LIST", "LIBRARYNAME"], ["LIST", "bad"],
                 ["LIST", "withcode", "libraryname", "lib*"]):
        fdiff("FUNCTION", *args)


def test_function_names_ignore_case(fdiff):
    """FCALL finds a function whatever the case of its name, and a library may not register a name
    another library has in another case (Redis 7.0's server-wide function dict ignores case)."""
    fdiff("FUNCTION", "LOAD", "#!lua name=lc\nredis.register_function('test', function() return 'lc' end)")
    for name in ("test", "TEST", "tEsT", "tes", "testx"):
        fdiff("FCALL", name, "0")
        fdiff("FCALL_RO", name, "0")
    fdiff("FUNCTION", "LOAD", "#!lua name=uc\nredis.register_function('TeSt', function() return 'uc' end)")
    fdiff("FUNCTION", "LOAD", "REPLACE", "#!lua name=lc\nredis.register_function('TEST', function() return 2 end)")
    fdiff("FCALL", "test", "0")
    fdiff("FUNCTION", "DELETE", "lc")
    fdiff("FCALL", "test", "0")
    fdiff("FUNCTION", "LOAD", "#!lua name=uc\nredis.register_function('TeSt', function() return 'uc' end)")
    fdiff("FCALL", "TEST", "0")
    fdiff("FUNCTION", "RESTORE", parse(fdiff.both("FUNCTION", "DUMP")[1]), "REPLACE")
    fdiff("FCALL", "test", "0")


def test_calls_see_every_change_of_the_registry(fdiff):
    """FCALL remembers the functions it found by the name as sent (functions.py's lookup): each
    change of the libraries (LOAD REPLACE, DELETE, FLUSH, RESTORE) is what the next call finds,
    in any case of the name, and names remembered in the same place ('fa' and 'fq': the same
    length, last bytes 16 apart) find their own functions."""
    lib = "#!lua name=m\nredis.register_function('fa', function() return %d end) " \
          "redis.register_function('fq', function(keys) return keys[1] end)"
    fdiff("FUNCTION", "LOAD", lib % 1)
    for _ in range(2):
        fdiff("FCALL", "fa", "0")
        fdiff("FCALL", "fq", "1", "k")
        fdiff("FCALL", "FA", "0")
    fdiff("FUNCTION", "LOAD", "REPLACE", lib % 2)
    fdiff("FCALL", "fa", "0")
    fdiff("FCALL", "FA", "0")
    payload = parse(fdiff.both("FUNCTION", "DUMP")[1])
    fdiff("FUNCTION", "DELETE", "m")
    fdiff("FCALL", "fa", "0")
    fdiff("FCALL", "FA", "0")
    fdiff("FUNCTION", "RESTORE", payload)
    fdiff("FCALL", "fa", "0")
    fdiff("FUNCTION", "FLUSH")
    fdiff("FCALL", "fa", "0")
    fdiff("FUNCTION", "LOAD", lib % 3)
    fdiff("FCALL", "fa", "0")
    fdiff("FUNCTION", "RESTORE", payload, "FLUSH")
    fdiff("FCALL", "fa", "0")
    fdiff("FCALL", "fq", "1", "k")


@pytest.mark.parametrize("code", [
    "return 1", "#!lua\nreturn 1", "#!lua name=\nreturn 1", "#!lua name=a-b\nreturn 1", "#!foo name=x\nreturn 1",
    "#!LUA name=up\nredis.register_function('up1', function() return 1 end)",
    "#!lua name=x foo=bar\nreturn 1", "#!lua name=x\nreturn 1",
    "#!lua name=x\nredis.call('ping')", "#!lua name=x\nsyntax error (", "#!lua name=x\nerror('boom')",
    "#!lua name=x\nlocal t = type", "#!lua name=x\nlocal t = string", "#!lua name=x\nlocal t = redis.setresp",
    "#!lua name=x\nredis.register_function('a b', function() return 1 end)",
    "#!lua name=x\nredis.register_function('ab')", "#!lua name=x\nredis.register_function('ab', 'notfn')",
    "#!lua name=x\nredis.register_function(1, function() end)",
    "#!lua name=x\nredis.register_function('a', function() end, 3)",
    "#!lua name=x\nredis.register_function{function_name='ab', callback=function() return 1 end, flags={'bad-flag'}}",
    "#!lua name=y\nredis.register_function{function_name='zz', callback=function() return 1 end, bogus=1}",
    "#!lua name=y\nredis.register_function{callback=function() return 1 end}",
    "#!lua name=y\nredis.register_function{function_name='zz'}",
    "#!lua name=y\nredis.register_function{function_name=1, callback=function() end}",
    "#!lua name=y\nredis.register_function{function_name='q', callback=1}",
    "#!lua name=y\nredis.register_function{function_name='q', callback=function() end, flags=1}",
    "#!lua name=y\nredis.register_function{function_name='q', callback=function() end, description=1}",
    "#!lua name=y\nredis.register_function('zz', function() return 1 end) redis.register_function('zz', function() end)",
    "#!lua name=y\nredis.register_function('f1', function() return 1 end)",
    "#!lua name=foo name=bar\nredis.register_function('a', function() return 1 end)",
    "#!lua NAME=up\nredis.register_function('a', function() return 1 end)", "#!foo name=foo bar=baz\nreturn 1",
    "#!foo name=a.b\nreturn 1", "#!lua name=foo name\nreturn 1", "#!lua name=\"unbal\nreturn 1",
    "#!lua \"name=quoted\"\nredis.register_function('a', function() return 1 end)", "#!lua name=nonl", "#!\nreturn 1",
    "#!lua name=y\nredis.log(redis.LOG_WARNING, 'loading ' .. redis.REDIS_VERSION) "
    "redis.register_function('logged', function() return redis.REDIS_VERSION_NUM end)",
])
def test_load_errors(fdiff, code):
    fdiff("FUNCTION", "LOAD", LIB1)
    fdiff("FUNCTION", "LOAD", code)
    fdiff("FCALL", "logged", "0")
    fdiff("FCALL", "up1", "0")


RUNTIME = """#!lua name=rt
redis.register_function('names', function(keys, args) local t = {} for k, v in pairs(_G) do t[#t+1] = k end table.sort(t) return t end)
redis.register_function('rnames', function(keys, args) local t = {} for k, v in pairs(redis) do t[#t+1] = k end table.sort(t) return t end)
redis.register_function('kv', function(keys, args) return {type(KEYS), #keys, #args} end)
redis.register_function('kv2', function(keys, args) return {#keys, #args, keys[1], args[1]} end)
redis.register_function('setg', function(keys, args) x = 1 end)
redis.register_function('boom', function(keys, args) return redis.call('incr', 'str') end)
redis.register_function('boom2', function(keys, args) error('bad') end)
redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('set','a','1') end, flags={'no-writes'}}
redis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function('resp3', function(keys, args) redis.setresp(3) return redis.call('hgetall', keys[1]) end)
redis.register_function('cj', function(keys, args) return cjson.encode(cjson.decode(args[1])) end)
"""


def test_runtime_environment(fdiff):
    fdiff("SET", "str", "abc")
    fdiff("HSET", "h", "f", "v")
    fdiff("FUNCTION", "LOAD", RUNTIME)
    for args in [("names", "0"), ("rnames", "0"), ("kv", "1", "k", "a"), ("kv2", "2", "k1", "k2", "a1"),
                 ("setg", "0"), ("boom", "0"), ("boom2", "0"), ("ro", "0"), ("w", "1", "wk", "wv"),
                 ("resp3", "1", "h"), ("cj", "0", '{"a":[1,2]}')]:
        fdiff("FCALL", *args)
    fdiff("FCALL_RO", "ro", "0")
    fdiff("FCALL_RO", "w", "1", "wk", "wv")
    fdiff("FCALL_RO", "boom", "0")
    fdiff("GET", "wk")


def _norm_list(frame: bytes):
    """FUNCTION LIST with libraries and functions in a canonical order (Redis walks hash tables)."""
    libs = parse(frame)

    def as_dict(x):
        return {x[i]: x[i + 1] for i in range(0, len(x), 2)} if isinstance(x, list) else x

    out = []
    for lib in libs:
        d = as_dict(lib)
        d[b"functions"] = sorted((sorted(as_dict(f).items()) for f in d[b"functions"]), key=repr)
        out.append(sorted(d.items(), key=repr))
    return sorted(out, key=repr)


def test_list(fdiff):
    fdiff("FUNCTION", "LIST")
    fdiff("FUNCTION", "LOAD", LIB1)
    fdiff("FUNCTION", "LOAD", LIBX)
    for args in [(), ("WITHCODE",), ("LIBRARYNAME", "li*"), ("libraryname", "x", "withcode"), ("LIBRARYNAME", "zz")]:
        ours, theirs = fdiff.both("FUNCTION", "LIST", *args)
        assert _norm_list(ours) == _norm_list(theirs), args
    fdiff("FUNCTION", "LIST", "LIBRARYNAME", "lib1")
    fdiff("FUNCTION", "LIST", "LIBRARYNAME")
    fdiff("FUNCTION", "LIST", "BADARG")
    fdiff("FUNCTION", "STATS")
    fdiff("FUNCTION", "KILL")
    fdiff("FUNCTION", "FLUSH", "BAD")
    fdiff("FUNCTION", "FLUSH", "ASYNC")
    fdiff("FUNCTION", "STATS")
    fdiff("FUNCTION", "HELP")
    fdiff("FUNCTION", "DELETE", "nosuch")
    fdiff("FUNCTION", "RESTORE", "garbage")
    fdiff("FUNCTION", "RESTORE", "garbage", "BADPOLICY")


def test_dump_restore_round_trip_and_cross_server(raxdb, oracle):
    conns = {name: RawConnection(port) for name, port in (("ours", raxdb.port), ("theirs", oracle.port))}
    try:
        for c in conns.values():
            c.call("FUNCTION", "FLUSH")
            assert c.call("FUNCTION", "LOAD", LIB1) == b"$4\r\nlib1\r\n"
            assert c.call("FUNCTION", "LOAD", LIBX) == b"$1\r\nx\r\n"
        dumps = {name: parse(c.call("FUNCTION", "DUMP")) for name, c in conns.items()}
        # Each server restores its own payload and the other's (Redis's is LZF-compressed, ours is not).
        for target in conns.values():
            for payload in dumps.values():
                target.call("FUNCTION", "FLUSH")
                assert target.call("FUNCTION", "RESTORE", payload) == b"+OK\r\n"
                assert target.call("FCALL", "cd", "0") == b":2\r\n"
                assert target.call("FCALL", "f1", "1", "k", "a") == b"*2\r\n*1\r\n$1\r\nk\r\n*1\r\n$1\r\na\r\n"
        results = []
        for c in conns.values():
            out = [c.call("FUNCTION", "RESTORE", dumps["theirs"])]
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"], "APPEND"))
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"], "REPLACE"))
            out.append(c.call("FUNCTION", "DELETE", "lib1"))
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"], "flush"))
            out.append(c.call("FCALL", "f1", "0"))
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"][:-1] + b"X"))
            c.call("FUNCTION", "FLUSH")
            out.append(c.call("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('cd', function() end)"))
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"]))
            out.append(c.call("FUNCTION", "RESTORE", dumps["theirs"], "REPLACE"))
            out.append(c.call("FCALL", "f1", "0"))
            # Which of two conflicting libraries Redis names follows its dict order, which is
            # seeded randomly per process: compare the error without the name.
            results.append([re.sub(rb"Library \S+ already exists", b"Library <name> already exists", r)
                            for r in out])
        assert results[0] == results[1]
    finally:
        for c in conns.values():
            c.call("FUNCTION", "FLUSH")
            c.close()


def test_load_timeout(fdiff):
    fdiff("FUNCTION", "LOAD", "#!lua name=t\nlocal i = 0 while true do i = i + 1 end")
    fdiff("FUNCTION", "LOAD", "#!lua name=t\nredis.register_function('x', function() return 1 end)")
    fdiff("FCALL", "x", "0")


@pytest.fixture(scope="module")
def busy_pair():
    from tests.support.servers import start_raxdb, start_redis

    ours = start_raxdb("--busy-reply-threshold", "100")
    try:
        theirs = start_redis("--busy-reply-threshold", "100")
    except Exception:
        ours.stop()
        raise
    yield ours, theirs
    ours.stop()
    theirs.stop()


def test_busy_function_killed(busy_pair):
    from tests.support.diff import encode_command

    spin = "#!lua name=busylib\nredis.register_function('spin', function(keys, args) local i = 0 while true do i = i + 1 end end)"
    results = []
    for srv in busy_pair:
        runner, other = RawConnection(srv.port), RawConnection(srv.port)
        try:
            assert other.call("FUNCTION", "LOAD", "REPLACE", spin) == b"$7\r\nbusylib\r\n"
            assert runner.call("PING") == b"+PONG\r\n"
            runner.send(encode_command(("FCALL", "spin", "0")))
            out = []
            while True:
                r = other.call("PING")
                if r.startswith(b"-BUSY"):
                    out.append(r)
                    break
            out.append(other.call("SCRIPT", "KILL"))
            stats = parse(other.call("FUNCTION", "STATS"))
            running = stats[1]
            out.append((running[0], running[1], running[2], running[3]))  # name and command, not duration
            out.append(other.call("FUNCTION", "KILL"))
            out.append(runner.read_frame())
            out.append(other.call("PING"))
            results.append(out)
        finally:
            runner.close()
            other.close()
    assert results[0] == results[1]
