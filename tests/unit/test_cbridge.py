"""server/scripting/cbridge.pyx, redis.call as a C function of the Lua state: bound when it is
built, its arguments and replies as Redis's (differentially, RESP2 and RESP3), and the engine's
fallback to lupa's crossing when the binding does not check out.  The same differential cases run
interpreted in `make test-pure` (the file is marked `pure`), where lupa's crossing serves them."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.pure

BUILT = importlib.util.find_spec("raxdb.server.scripting.cbridge") is not None


def _server():
    import raxdb.server.commands  # noqa: F401 - registers the handlers
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server

    return Server(Config())


@pytest.mark.skipif(not BUILT, reason="cbridge is not built (an interpreted tree)")
def test_the_engine_binds_its_lua_state():
    from raxdb.server.scripting import cbridge
    from raxdb.server.scripting.engine import Engine

    eng = Engine(_server(), b"@user_script")
    assert eng.bridge is not None
    # the C functions replaced lupa's crossing: a C function cannot be dumped, a Lua one can
    ok, err = eng.lua.execute("return pcall(string.dump, ...)", eng.redis[b"call"])
    assert (ok, err) == (False, b"unable to dump given function")
    assert cbridge.bind(object()) is None
    assert eng.bridge.pooled  # the Lua state's small blocks come from the bridge's pool


# A script that allocates in every size class and past the pool's largest (512 bytes): strings,
# tables grown and shrunk by the collector, a coroutine's stack, strings grown by concatenation.
ALLOCATING = """
local t = {}
for i = 1, tonumber(ARGV[1]) do t[i] = string.rep('x', i % 700) .. i end
local s = ''
for i = 1, 300 do s = s .. i end
local co = coroutine.create(function(a) for i = 1, 50 do a = a .. coroutine.yield(#a) end return a end)
local n = 0
for i = 1, 60 do local ok, v = coroutine.resume(co, tostring(i)) n = n + (tonumber(v) or #tostring(v)) end
local m = {}
for i = 1, 300 do m['k' .. i] = {i, tostring(i), {i}} end
m = nil
collectgarbage('collect')
redis.call('set', KEYS[1], s)
return {#t, t[#t], n, redis.call('get', KEYS[1]), redis.call('strlen', KEYS[1])}
"""


def test_command_names_made_at_run_time(diff):
    # redis.call's names as new strings each call, in any case, more of them than the bridge's
    # cache of names holds, collected between calls (an address then holds another string), and
    # one longer than any it caches
    diff("EVAL", """
        local out = {}
        for i = 1, 200 do
            local name = ({'set', 'SET', 'sEt', 'get', 'GET', 'incr', 'strlen'})[i % 7 + 1]
            local junk = string.rep('n', i % 40) .. i
            local ok, r = pcall(redis.call, name .. '', KEYS[1], tostring(i))
            local ok2, r2 = pcall(redis.call, junk, KEYS[1])
            if i % 50 == 0 then collectgarbage('collect') end
            out[#out + 1] = ok and (type(r) == 'table' and (r.ok or r.err) or r) or r.err
            out[#out + 1] = r2.err
        end
        out[#out + 1] = redis.pcall(string.rep('x', 40)).err
        return out
    """, 1, "k")


def test_short_arguments_made_at_run_time(diff):
    # redis.call's short arguments (keys, fields, values) as new strings each call, more distinct
    # ones than the bridge's cache of short strings holds, collected between calls (an address
    # then holds another string, of the same length or not), beside the same ones passed again
    # and ones just longer than any it caches; what each call stored is read back
    diff("EVAL", """
        local out = {}
        for i = 1, 1500 do
            local key = 'k' .. (i % 120)
            local field = string.rep('f', i % 33) .. (i % 7)
            local value = tostring(i * 7919 % 1000)
            redis.call('hset', key, field, value)
            redis.call('hset', KEYS[1], key, value)
            if i % 100 == 0 then collectgarbage('collect') end
            if i % 97 == 0 then
                out[#out + 1] = redis.call('hget', key, field)
                out[#out + 1] = redis.call('hget', KEYS[1], 'k' .. (i % 120))
            end
        end
        out[#out + 1] = redis.call('hlen', KEYS[1])
        out[#out + 1] = redis.call('hlen', 'k5')
        return out
    """, 1, "h")
    diff("HGETALL", "k17")
    diff("HGETALL", "h")


def test_scripts_that_allocate_across_script_flushes(diff):
    # SCRIPT FLUSH closes the Lua state (and its pool with it) and opens another
    for n in (1, 700, 5000, 3):
        diff("EVAL", ALLOCATING, 1, "k", n)
        diff("SCRIPT", "FLUSH")
    diff("FUNCTION", "LOAD", "#!lua name=alloc\nredis.register_function('alloc', function(k, a)"
         " local t = {} for i = 1, 3000 do t[i] = string.rep('y', i % 600) end return #t end)")
    diff("FCALL", "alloc", 0)
    diff("FUNCTION", "FLUSH")


def test_without_the_bridge_the_engine_uses_lupas_crossing(monkeypatch):
    from raxdb.server.net.client import Client
    from raxdb.server.scripting import engine

    monkeypatch.setattr(engine, "_bridge", lambda _eng: None)
    srv = _server()
    eng = engine.Engine(srv, b"@user_script")
    assert eng.bridge is None
    f = eng.compile(b"return {redis.call('set', KEYS[1], ARGV[1]), redis.call('get', KEYS[1]),"
                    b" redis.pcall('nosuch')}")
    c = Client(srv)
    reply = eng.run(c, f, b"sha", [b"EVAL", b"body", b"1", b"k", b"v"], 1, False, False)
    assert reply == b"*3\r\n+OK\r\n$1\r\nv\r\n-ERR Unknown Redis command called from script\r\n"


ARGUMENTS = [
    # numbers as Redis formats them (%.17g), strings with any bytes, refused types
    "return redis.call('set', 'k', 0.1) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 1/3) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 1e300) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 2^53 + 1) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 1/0) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 0/0) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 'a\\0b\\r\\n') and redis.call('get', 'k')",
    "return redis.call('set', 'k', true)", "return redis.pcall('set', 'k', {})",
    "return redis.pcall('set', 'k', nil)", "return redis.call()", "return redis.pcall()",
    "return redis.call('SET', 'k', '') and redis.call('strlen', 'k')",
    "return type(redis.call)", "return redis.call(1)",
    # integral numbers, which the C path prints without snprintf below 1e17: the edges of that
    "return {redis.call('echo', 0), redis.call('echo', 1), redis.call('echo', -1), redis.call('echo', 0.0)}",
    "return {redis.call('echo', 1e16), redis.call('echo', 99999999999999999), redis.call('echo', 1e17),"
    " redis.call('echo', -1e17), redis.call('echo', -99999999999999990), redis.call('echo', 123456789012345678)}",
    "return {redis.call('echo', 2^53), redis.call('echo', -2^53), redis.call('echo', 2^63), redis.call('echo', -2^63),"
    " redis.call('echo', 2^64), redis.call('echo', 1795662486531), redis.call('echo', -1795662486531)}",
    "return {redis.call('echo', 2^52 + 0.5), redis.call('echo', 1e15 + 0.5), redis.call('echo', -1.5),"
    " redis.call('echo', 1e-5)}",
]

REPLIES = [
    # the shapes converted in C, and those left to the converter
    "return redis.call('incrby', 'n', -7)", "return redis.call('get', 'nosuch')",
    "return redis.call('set', 'k', 'v')", "return redis.pcall('incr', 'k')",
    "local e = redis.pcall('incr', 'k') return {type(e), e.err, tostring(e.ignore_error_stats_update)}",
    "redis.call('rpush', 'l', 'a', '', 'c') return redis.call('lrange', 'l', 0, -1)",
    "return redis.call('lrange', 'nosuch', 0, -1)",
    "redis.call('set', 'k', 'v') return redis.call('mget', 'k', 'nosuch', 'k')",
    "redis.call('hset', 'h', 'f', '1') return redis.call('hgetall', 'h')",
    "redis.call('zadd', 'z', 1, 'a', 2.5, 'b') return redis.call('zrange', 'z', 0, -1, 'withscores')",
    "redis.call('set', 'k', 'v') return redis.call('scan', 0)",
    "return redis.call('blpop', 'nosuch', 0)", "return redis.call('echo', '-ERR not an error')",
    "return redis.call('echo', '+OK')", "return redis.call('echo', '*1')",
    "redis.setresp(3) redis.call('hset', 'h', 'f', '1') return redis.call('hgetall', 'h')",
    "redis.setresp(3) return redis.call('get', 'nosuch')",
    "redis.setresp(3) return {redis.call('lrange', 'nosuch', 0, -1), redis.call('exists', 'x')}",
    "local ok, e = pcall(redis.call, 'incr', 'k') return {tostring(ok), e}",
    "return redis.call('set', 'k', 'v', 'xx', 'nx')",
    "local co = coroutine.create(function() return redis.call('echo', 'in') end)"
    " local ok, v = coroutine.resume(co) return {tostring(ok), v}",
    "local co = coroutine.create(function() return redis.pcall('nosuch'), redis.call('set', 'k', 'b'),"
    " redis.call('hgetall', 'nokey'), redis.call('get', 'k') end) return {coroutine.resume(co)}",
]


@pytest.mark.parametrize("body", ARGUMENTS)
def test_arguments(diff, body):
    diff("DEL", "k")
    diff("EVAL", body, 0)


@pytest.mark.skipif(not BUILT, reason="lupa hands Python an integral -0.0 as the int 0: only the C path keeps its sign")
def test_negative_zero_argument(diff):
    diff("EVAL", "return redis.call('set', 'k', -0.0) and redis.call('get', 'k')", 0)


@pytest.mark.skipif(not BUILT, reason="lupa's crossing raises its wrapped Python exception, which a coroutine's resume shows")
def test_an_error_raised_in_a_coroutine(diff):
    diff("EVAL", "local co = coroutine.create(function() return redis.call('nosuch') end)"
                 " local ok, e = coroutine.resume(co) return {tostring(ok), type(e), type(e) == 'table' and e.err}", 0)


@pytest.mark.parametrize("body", REPLIES)
def test_replies(diff, body):
    diff("DEL", "k", "n", "l", "h", "z")
    diff("EVAL", body, 0)


CALLS = [
    # the call into the script: KEYS and ARGV as Redis builds them, the result and errors back
    ("return {#KEYS, #ARGV, KEYS[1], ARGV[1], KEYS[2]}", 1, "k", "a\0b", ""),
    ("return {#KEYS, #ARGV}", 0), ("return {#KEYS, #ARGV, KEYS[3]}", 3, "a", "b", "c"),
    ("KEYS[1] = 'x' ARGV[9] = 1 return {KEYS[1], #ARGV}", 1, "k", "a"),
    ("return nil", 0), ("return 2^63", 0), ("return -2^63", 0), ("return 0/0", 0), ("return 'x'", 0),
    ("return {ok='s'}", 0), ("error({err='-CODE mine'})", 0), ("error('plain')", 0), ("error(nil)", 0),
    ("local t = setmetatable({}, {__index=function() error('deep') end}) return t.x", 0),
    ("return redis.call('nosuch')", 0), ("return #redis.call('lrange', KEYS[1], 0, -1)", 1, "nosuch"),
    ("return coroutine.wrap(function() return redis.call('incr', 'n') end)()", 0),
    # a number result, encoded by Bridge.run when integral: the cached replies' edges, past them,
    # the largest integral doubles, -0, and the non-integral ones the general conversion truncates
    ("return -1", 0), ("return -2", 0), ("return 10000", 0), ("return 10001", 0), ("return 0", 0),
    ("return -0", 0), ("return 2^53", 0), ("return -2^53 - 2", 0), ("return 2^62", 0), ("return -2^63 + 2^11", 0),
    ("return 3.7", 0), ("return -3.7", 0), ("return -0.5", 0), ("return 1e300", 0), ("return -1/0", 0),
    ("return tonumber(ARGV[1])", 0, "123456789012"), ("return redis.call('incr', 'n'), 5", 0),
]


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c[0][:40])
def test_script_calls(diff, call):
    diff("DEL", "n")
    diff("EVAL", *call)


def test_function_calls(diff):
    diff("FUNCTION", "FLUSH")
    diff("FUNCTION", "LOAD", "#!lua name=lib\n"
         "redis.register_function('f', function(keys, args) return {#keys, #args, keys[1], args[2]} end)\n"
         "redis.register_function('g', function(keys, args) return redis.call('incr', keys[1]) end)\n"
         "redis.register_function('h', function(keys, args) error('no ' .. args[1]) end)")
    diff("FCALL", "f", 2, "k1", "k2", "a1", "a2")
    diff("FCALL", "f", 0)
    diff("FCALL", "g", 1, "n")
    diff("FCALL", "h", 0, "way")
    diff("FUNCTION", "FLUSH")


@pytest.mark.skipif(not BUILT, reason="lupa's call into Lua refuses more than ~8,000 arguments")
def test_a_script_takes_any_number_of_arguments(diff):
    args = [str(i) for i in range(10000)]
    diff("EVAL", "return {#KEYS, #ARGV, KEYS[5000], ARGV[5000]}", 5000, *args)


RESULTS = [
    # a script's result as its reply (rx_conv in C, or convert.py for what it leaves): arrays up to
    # the first nil, numbers truncated, booleans, statuses and errors at any depth, hash parts
    "return {KEYS[1], ARGV[1], 1, 2, {3, 'x'}}", "return {1, {2, {3, {4, {}}}}, 'a\\0b', ''}",
    "return {1, nil, 3}", "return {nil, 2}", "local t = {1, 2, 3} t[5] = 5 return t",
    "return {1.5, -1.5, 0.1, -0.0, 1e300, -1e300, 1/0, -1/0, 0/0, 2^53 + 1, 2^63, -2^63, 2^64}",
    "return {2^53, 2^53 + 2, -2^53 - 2, 2^62 + 2^11, 9007199254740993}",
    "return -0.0", "return 1.99", "return -1.99", "return 0/0",
    "return {true, false, true}", "return true", "return false", "return nil", "return ''", "return 'x\\r\\ny'",
    "return {}", "return {{}, {{}}}", "return {a = 1, b = 2}", "return {1, 2, a = 1}", "return {[2] = 2}",
    "return {[1.5] = 1, 7}", "return {ok = 'fine'}", "return {ok = 'a\\r\\nb'}", "return {ok = ''}",
    "return {ok = 5}", "return {ok = {}}", "return {1, 2, ok = 'x'}", "return {ok = 'o', err = 'e'}",
    "return {err = 'my error'}", "return {err = '-MINE with\\nnewline'}", "return {err = 5}", "return {err = ''}",
    "return {err = 'x', ignore_error_stats_update = false}", "return {err = 'x', ignore_error_stats_update = true}",
    "return {1, {err = 'nested'}, {ok = 'nested'}, {err = 'x', ignore_error_stats_update = true}}",
    "return {redis.error_reply('E1'), redis.status_reply('S1')}", "return redis.error_reply('ERR mine')",
    "return redis.status_reply('QUEUED')", "return redis.pcall('nosuch')", "return {redis.pcall('nosuch')}",
    "return setmetatable({1, 2}, {__index = function() return 3 end})",
    "return setmetatable({err = 'meta'}, {__index = {ignore_error_stats_update = true}})",
    "return setmetatable({}, {__index = {err = 'hidden'}})", "return {setmetatable({ok = 's'}, {})}",
    "return {print, coroutine.create(print), 1}", "return print", "return {1, print, 2}",
    # the RESP3 shapes (convert.py's), alone and nested, with a RESP2 script protocol
    "return {double = 1.5}", "return {double = 1/3}", "return {double = 'x'}", "return {1, {double = 2.5}}",
    "return {big_number = '123456789012345678901234567890'}", "return {big_number = 5}",
    "return {verbatim_string = {format = 'txt', string = 'hi'}}", "return {verbatim_string = {format = 1}}",
    "return {map = {a = 1}}", "return {set = {a = true}}", "return {1, {map = {x = 'y'}}, {set = {z = true}}}",
    # scripts at RESP3 (redis.setresp(3)): booleans and the shapes as RESP3 replies
    "redis.setresp(3) return {true, false, 1, 'x', {double = 0.5}}", "redis.setresp(3) return true",
    "redis.setresp(3) return false", "redis.setresp(3) return {1, {2, 'x'}, {ok = 'y'}}",
    "redis.setresp(3) return {map = {k = {1, 2}}}", "redis.setresp(3) redis.setresp(2) return {true, false}",
    # nesting up to and past what rx_conv converts (12 levels)
    "local t = {} local c = t for i = 1, 40 do c[1] = {} c = c[1] end c[1] = 'deep' return t",
    "local t = {1} local c = t for i = 1, 10 do c[2] = {i} c = c[2] end return t",
    "local t = {1} local c = t for i = 1, 11 do c[2] = {i, {err = 'e'}} c = c[2] end return t",
    "local t = {1} local c = t for i = 1, 12 do c[2] = {i} c = c[2] end return t",
    "local t = {1} local c = t for i = 1, 13 do c[2] = {i, x = 1} c = c[2] end return t",
    # err and ok beside an array part whose index 1 is a node of the hash part (set into a free
    # node, no rehash), after other nodes: found by their raw reads, not from the array's last key
    "local t = {} t.k33 = 1 t.k10 = 1 t.k17 = 1 t.k18 = 1 t.k29 = 1 t[1] = 'a' t.ok = 'O' t.k18 = nil t.k29 = nil return t",
    "local t = {} for i = 1, 12 do t['k' .. i] = i end t[1] = 'a' t.err = 'E' t.ok = 'O' return t",
    "local t = {} for i = 1, 12 do t['k' .. i] = i end t[1] = 'a' t.ok = 'O' t.k3 = nil return {t, 2}",
    # larger replies than the kept buffer
    "local t = {} for i = 1, 20000 do t[i] = i % 7 == 0 and {i, 'v' .. i} or i end return t",
    "return {string.rep('x', 3000000), 1}",
]


@pytest.mark.parametrize("body", RESULTS)
def test_results(diff, body):
    diff("EVAL", body, 1, "k", "v")


def test_function_results(diff):
    diff("FUNCTION", "FLUSH")
    diff("FUNCTION", "LOAD", "#!lua name=tables\n"
         "redis.register_function('arr', function(keys, args) return {keys[1], args[1], 1.5, {true, false}, {}} end)\n"
         "redis.register_function('st', function(keys, args) return {ok = args[1]} end)\n"
         "redis.register_function('er', function(keys, args) return {err = args[1]} end)\n"
         "redis.register_function('mixed', function(keys, args) return {{err = 'in'}, {ok = 'in'}, nil, 4} end)\n"
         "redis.register_function('r3', function(keys, args) redis.setresp(3) return {true, {map = {a = 1}}} end)")
    diff("FCALL", "arr", 1, "k", "a")
    diff("FCALL", "st", 0, "fine")
    diff("FCALL", "er", 0, "ERR bad\nthing")
    diff("FCALL", "mixed", 0)
    diff("FCALL", "r3", 0)
    diff("FUNCTION", "FLUSH")


def test_result_errors_count_in_errorstats(fresh):
    """A script's returned errors count in errorstats (at any depth, under their first word within
    32 bytes, else ERR), unless a called command's; a pcall's error table has Redis's keys."""
    import re

    from tests.support.diff import Diff

    d = Diff(fresh[0].port, fresh[1].port)
    pick = re.compile(rb"(errorstat_\w*:count=\d+|total_error_replies:\d+|cmdstat_eval:calls=\d+|failed_calls=\d+)")
    bad = []
    for body in ("return {err = 'MINE x'}", "return {err = 'ERR x', ignore_error_stats_update = false}",
                 "return {err = 'ERR x', ignore_error_stats_update = 0}",
                 "return {err = 'ERR x', ignore_error_stats_update = true}",
                 "return setmetatable({err = 'META x'}, {__index = {ignore_error_stats_update = true}})",
                 "return redis.pcall('nosuch')", "return {redis.pcall('nosuch')}",
                 "return {redis.pcall('nosuch'), redis.pcall('nosuch'), {err = 'MINE y'}}",
                 "return redis.error_reply('OWN reply')", "return {ok = 'fine'}",
                 # the code is the first word within 32 bytes, else ERR; errors inside arrays count
                 "return {err = 'x'}", "return {err = ' leading space'}",
                 "return {err = 'A23456789012345678901234567890 word of 30'}",
                 "return {err = 'A234567890123456789012345678901 word of 31'}",
                 "return {1, {err = 'NEST y'}, {2, {err = 'DEEP z'}}, {err = 'x'}}",
                 "return {1, {err = 'FLAG y', ignore_error_stats_update = true}}",
                 "local e = redis.pcall('nosuch') local r = {} for k in pairs(e) do r[#r + 1] = k end "
                 "table.sort(r) return r"):
        d("CONFIG", "RESETSTAT")
        d("EVAL", body, 0)
        ours, theirs = d.both("INFO", "all")
        if sorted(pick.findall(ours)) != sorted(pick.findall(theirs)):
            bad.append((body, pick.findall(ours), pick.findall(theirs)))
    assert not bad, bad


@pytest.mark.skipif(not BUILT, reason="cbridge is not built (an interpreted tree)")
def test_a_lupa_that_does_not_check_out_is_logged_once(monkeypatch):
    """bind's proof failing (a lupa laid out otherwise) leaves lupa's crossing in use, and the log
    says so, once a process: a slower EVAL is never silent."""
    import io

    from raxdb.server.base.log import LOG
    from raxdb.server.scripting import cbridge, engine

    monkeypatch.setattr(cbridge, "bind", lambda _eng: None)
    monkeypatch.setattr(engine, "_BRIDGE_REFUSED", [])
    monkeypatch.setattr(LOG, "stream", io.StringIO())
    srv = _server()
    assert engine.Engine(srv, b"@user_script").bridge is None
    assert engine.Engine(srv, b"@user_function", functions=True).bridge is None
    text = LOG.stream.getvalue()
    assert text.count("Scripting's C bridge not used: lupa 2.") == 1
