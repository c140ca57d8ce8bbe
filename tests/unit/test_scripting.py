"""EVAL / EVALSHA / SCRIPT against redis-server 7.0, byte for byte, in RESP2 and RESP3: the sandbox,
Lua <-> RESP conversions, error texts and positions, the bundled libraries, busy scripts."""

from __future__ import annotations

import hashlib
import sys
import threading

import pytest

from tests.support.diff import RawConnection
from tests.support.servers import start_raxdb, start_redis


def ev(diff, body: str, *args) -> bytes:
    if not args:
        args = (0,)
    return diff("EVAL", body, *args)


CONVERSIONS = [
    "return 1", "return -3.99", "return 3.99", "return 1e20", "return 0/0", "return 1/0", "return 'abc'",
    "return true", "return false", "return nil", "return {1,2,{3,'x'},nil,5}", "return {1,false,3}",
    "return {1,true,3}", "return {}", "return {nil, 1}", "return {[1]='a', x='b'}", "return {x='b'}",
    "return {err='x y'}", "return {ok='fine'}", "return {err='a\\r\\nb'}", "return {ok='a\\r\\nb'}",
    "return {err=5}", "return {ok=5}", "return {err={}}", "return {1, {err='inner'}, {ok='st'}}",
    "return {ok='a', err='b'}", "return {err='-X y'}", "return {1.5, 2.5, 'x'}",
    "return {map={a=1}}", "return {set={a=true}}", "return {set={a=false, b=true}}", "return {double=3.5}",
    "return {double='3.5'}", "return {big_number='123'}", "return {big_number=123}",
    "return {verbatim_string={format='txt', string='hi'}}", "return {map={a=1}, ok='x'}", "return {map={}}",
    "return {1, {map={x={1,2}}}}", "return {double=1/0}", "return {double=0/0}", "return {double=1e300}",
    "return {double=0.1}",
    "redis.setresp(3); return true", "redis.setresp(3); return false", "redis.setresp(3); return nil",
    "redis.setresp(3); return {1,false,true}", "redis.setresp(2); return false",
    "return redis.error_reply('E1 hello')", "return redis.error_reply('hello')", "return redis.error_reply('-X y')",
    "return redis.error_reply('')", "return redis.error_reply()", "return redis.error_reply(5)",
    "return redis.status_reply('FINE')", "return redis.status_reply()", "return redis.error_reply('MY_ERR')",
    # tables are read raw: a metatable's __index (the globals' strictness included) is never asked
    "return _G", "return setmetatable({}, {__index=function() return 'x' end})",
    "return setmetatable({1}, {__index=function(t, k) return k end})",
    "return {verbatim_string={format='txt', string='hi'}, map={a=1}}", "return {set={a=true}, map={b=1}}",
    "local t = {} for i = 1, 9000 do t[i] = i end return t",
    "local t = {} for i = 1, 9000 do t[i] = {i} end t[4001] = {err='e'} return t",
]


@pytest.mark.parametrize("body", CONVERSIONS)
def test_lua_to_resp(diff, body):
    ev(diff, body)


REPLIES = [
    "return redis.call('get','nokey')", "return {redis.call('get','nokey')}", "return redis.call('ping')",
    "return redis.call('set','a',1.5)", "redis.call('set','a',123456789012); return redis.call('get','a')",
    "redis.call('set','a',1e20); return redis.call('get','a')", "redis.call('set','a',0.1); return redis.call('get','a')",
    "redis.call('set','a',1/0); return redis.call('get','a')", "redis.call('set','a',2^53); return redis.call('get','a')",
    "redis.call('set','a',3.14159265358979); return redis.call('get','a')",
    "return redis.call('echo', 'a\\r\\nb')", "return redis.pcall('incr','str')", "return type(redis.pcall('incr','str'))",
    "redis.setresp(3); return type(redis.call('get','nokey'))", "redis.setresp(3); return redis.call('get','nokey')",
    "redis.setresp(3); return {redis.call('get','nokey')}", "redis.setresp(3); return {1, redis.call('get','nokey'), 3}",
    "redis.setresp(3); return redis.call('ping')", "redis.setresp(3); return redis.pcall('incr','str')",
    "redis.setresp(3); redis.call('set','a','1'); return redis.call('set','a','2','get')",
    "return redis.call('lpop','nolist', 2)", "redis.setresp(3); return redis.call('lpop','nolist', 2)",
    "return type(redis.call('lpop','nolist', 2))", "redis.setresp(3); return type(redis.call('lpop','nolist', 2))",
    "redis.call('sadd','s','a'); redis.setresp(3); local r = redis.call('smembers','s'); return {type(r.set), tostring(r.set.a)}",
    "redis.call('sadd','s','a'); redis.setresp(3); return redis.call('smembers','s')",
    "redis.call('hset','h','f','v','g','w'); redis.setresp(3); return redis.call('hgetall','h')",
    "redis.call('hset','h','f','v','g','w'); return redis.call('hgetall','h')",
    "redis.call('hset','h','f','v'); redis.setresp(3); local r = redis.call('hgetall','h'); return r.map.f",
    "redis.call('rpush','l','a','b'); return redis.call('lrange','l',0,-1)",
    # RESP2 arrays (read by hiredis when they hold only integers, bulks, nulls and arrays): nulls
    # inside are false, nested arrays tables, and a status or error inside keeps its table
    "redis.call('hset','h','f','v'); local r = redis.call('hmget','h','f','nof','f'); return {type(r[2]), #r, r[3]}",
    "redis.call('xadd','x','1-1','a','1'); local r = redis.call('xrange','x','-','+'); return {r[1][1], r[1][2]}",
    "local r = redis.call('scan', 0, 'count', 1000); return {type(r[1]), type(r[2])}",
    "redis.call('set','k','+OK\r\n-ERR'); return redis.call('mget','k','k','nokey')",
    "return redis.call('zrange', 'nozset', 0, -1)", "return #redis.call('zrange', 'nozset', 0, -1)",
    "redis.call('zadd','z',1,'a',2,'b'); return redis.call('zrange','z',0,-1,'withscores')",
    "return redis.call('select', '1')",
    "redis.call('select', '1') redis.call('set','indb1','x') return redis.call('get', 'indb1')",
]


@pytest.mark.parametrize("body", REPLIES)
def test_resp_to_lua(diff, body):
    diff("SET", "str", "abc")
    ev(diff, body)
    diff("GET", "indb1")


ERRORS = [
    "return redis.call('incr','str')", "return {pcall(redis.call, 'incr', 'str')}",
    "local ok, e = pcall(redis.call, 'incr', 'str'); return type(e)",
    "local ok, e = pcall(redis.call, 'incr', 'str'); return e",
    "local ok, e = pcall(redis.call,'nosuch'); return e", "local ok, e = pcall(redis.call); return e",
    "local ok, e = pcall(redis.call,'get'); return e", "local ok, e = pcall(error, {err='X'}); return type(e)",
    "local ok, e = pcall(function() return x end); return e",
    "local ok, e = pcall(function() error('boom') end); return e",
    "local ok, e = pcall(function() error({err='boom'}) end); return e",
    "local ok, e = pcall(function() error({err='X', other=1}) end) return e",
    "local ok, e = pcall(function() error({other=1}) end) return type(e)",
    "return {xpcall(function() return redis.call('incr','str') end, function(e) return type(e) end)}",
    "return {xpcall(function() return redis.call('incr','str') end, function(e) return e.err end)}",
    "return xpcall(function() error('x') end, function(e) return 'handled: ' .. e end)",
    "return x", "x = 1", "error('boom')", "error({err='MY custom'})", "error({err='custom no code'})",
    "error('ERR custom')", "error('WRONGTYPE x', 0)", "error('x', 0)", "error('')", "error()", "error(nil)",
    "error(5)", "error({err=5})", "error({err='a\\r\\nb'})", "error({err='-X y'})",
    "local function f() return redis.call('incr','str') end\nreturn f()",
    "local a = 1\nlocal b = 2\nredis.call('incr','str')", "local a = 1\nlocal b = 2\nerror('on line 3')",
    "return redis.pcall('nosuch')", "return redis.pcall()", "local ok, e = pcall(redis.pcall); return e",
    "return redis.call('nosuch')", "return redis.call('get')", "return redis.call('subscribe','x')",
    "return redis.call()", "return redis.call({})", "return redis.call('set','a',{})",
    "return redis.call('set','a',true)", "return redis.call('get', KEYS[1])",
    "return redis.call('eval', 'return 1', 0)", "return redis.call('multi')", "return redis.call('script', 'flush')",
    "return redis.call('pubsub')", "return redis.call('pubsub', 'nosuch')",
    "syntax error here", "#comment\nreturn 1", "return {pcall(error)}",
    "return redis.sha1hex()", "redis.setresp(4)", "return redis.setresp()",
    "redis.log(redis.LOG_WARNING)", "redis.log('x', 'y')", "redis.log(99, 'y')",
    "return redis.set_repl()", "return redis.set_repl(99)",
]


@pytest.mark.parametrize("body", ERRORS)
def test_errors(diff, body):
    diff("SET", "str", "abc")
    ev(diff, body)


SANDBOX = [
    "return _VERSION", "return redis.call = nil", "redis.call = nil", "string.x = 1", "_G.y = 1",
    "rawset(_G, 'z', 1)", "setmetatable(_G, nil)", "return getmetatable(_G) == nil",
    "return type(getmetatable('').__index)", "return print", "return {1, print, 3}", "return coroutine",
    "return type(dofile)", "return type(load)", "return type(loadfile)", "return type(require)",
    "return type(module)", "return type(getfenv)", "return type(newproxy)", "return type(gcinfo)",
    "return type(os)", "return type(io)", "return type(package)", "return type(debug)",
    "local t = {} for k,v in pairs(_G) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(redis) do t[#t+1] = k .. '=' .. type(v) end table.sort(t) return t",
    "local t = {} for k,v in pairs(bit) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(cjson) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(cmsgpack) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(struct) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(string) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(table) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(math) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k,v in pairs(coroutine) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for i, v in ipairs({'a','b'}) do t[#t+1] = v end return t",
    "return loadstring('return 1')()", "local f = loadstring('return KEYS') return type(f())",
    "return loadstring('x = ')", "return {loadstring('x = ')}",
    "return select('#', loadstring(string.dump(function() end)))", "return type(redis.call)",
    "return #KEYS", "KEYS[1] = 'x' return KEYS[1]", "return tostring(12345678901234567)",
    "return tostring(0.1)", "return string.format('%d %s %5.2f', 3, 'x', 1.234)",
    "math.randomseed(1); return tostring(math.random())",
    "math.randomseed(7); return {math.random(10), math.random(5, 9), tostring(math.random())}",
    "return math.random(0)", "return math.random(1,2,3)", "return math.random(3, 1)",
    "return redis.sha1hex('abc')", "return redis.sha1hex(123)", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, "
    "redis.LOG_NOTICE, redis.LOG_WARNING}", "return redis.set_repl(redis.REPL_ALL)",
    "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
    "return redis.replicate_commands()", "return redis.REDIS_VERSION .. ' ' .. redis.REDIS_VERSION_NUM",
    "return redis.breakpoint()", "return redis.debug('x')", "redis.log(redis.LOG_WARNING, 'hello', 1)",
    "return redis.acl_check_cmd('get', 'x')", "return redis.acl_check_cmd('nosuch')",
    "return {type(cjson.null), tostring(cjson.null)}",
    # the wrapped builtins' argument errors, worded and placed as the C builtins raise them
    "return pairs('x')", "return pairs()", "return pairs(nil)", "return ipairs(5)", "return ipairs()",
    "return rawget('x', 1)", "return rawget({})", "return rawget()",
    "return rawset(5, 1, 2)", "return rawset({}, 1)", "return rawset({})", "return setmetatable(5, {})",
    "return setmetatable({}, 5)", "return setmetatable()", "return getmetatable()",
    "return type(nil)", "return tostring(nil)", "return xpcall()",
    "return xpcall(function() return 1 end)", "local ok, e = pcall() return {tostring(ok), tostring(e)}",
    "return {pcall(pcall)}", "return rawset(_G, 'a', 1)", "return setmetatable(_G, {})",
    "return {xpcall(function() error('x') end, function(e) return 'h:' .. e end)}",
]


@pytest.mark.parametrize("body", SANDBOX)
def test_sandbox(diff, body):
    ev(diff, body)


def test_keys_and_argv(diff):
    ev(diff, "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", 1, "k", "a")
    ev(diff, "return {KEYS, ARGV}", 2, "k1", "k2", "a1", "a2")
    ev(diff, "return KEYS[2]", 1, "k")
    # KEYS is built as the argument list with ARGV moved out: its length, iteration and growth are
    # those of a table of the keys alone
    ev(diff, "local n, m = 0, 0 for _ in pairs(KEYS) do n = n + 1 end for _ in pairs(ARGV) do m = m + 1 end "
             "return {n, m, #KEYS, #ARGV, select('#', unpack(KEYS))}", 2, "k1", "k2", "a1", "a2", "a3")
    ev(diff, "KEYS[#KEYS + 1] = 'x' table.insert(KEYS, 'y') "
             "return {#KEYS, KEYS[2], KEYS[3], table.getn(KEYS), select('#', unpack(KEYS))}", 1, "k", "a1", "a2")
    ev(diff, "return {#KEYS, #ARGV, next(KEYS), ARGV[2]}", 0, "a1", "a2")
    ev(diff, "return 1", 2, "k")
    ev(diff, "return 1", -1)
    ev(diff, "return 1", "abc")
    ev(diff, "syntax error (", "abc")
    diff("EVAL", "return 1")
    diff("EVALSHA", "x")


BIT = [
    "return {bit.tobit(0xffffffff), bit.tohex(255), bit.tohex(-1, 4), bit.tohex(255,-4), bit.bnot(0), "
    "bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(3,5), bit.lshift(1, 31), bit.rshift(-1, 28), "
    "bit.arshift(-256, 4), bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.bswap(0x12345678), "
    "bit.tobit(2^40 + 5), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5)}",
    "return bit.tohex(0x12345678, 0)", "return bit.band()", "return bit.band('x')", "return bit.band('12', 4)",
    "return bit.lshift(1, 33)", "return bit.tohex(-1, -9)",
]

CJSON = [
    "return cjson.encode({1,2,3,'a',{x=1}})",
    "return cjson.encode({a=1, b='x', c={true,false}, d=0.1, e=1e20, g=1/3})",
    "return cjson.encode('a\"b\\\\c/d\\n\\r\\t\\b\\f\\1\\127\\200é')",
    "return cjson.encode({[1]=1,[2]=2,[4]=4})", "return cjson.encode({[1]=1,[20]=2})", "return cjson.encode({})",
    "return cjson.encode({[1.5]=1})", "return cjson.encode({[true]=1})", "return cjson.encode(1/0)",
    "return cjson.encode(0/0)", "return cjson.encode(cjson.null)", "return cjson.encode(function() end)",
    "return cjson.encode()", "return cjson.encode(123456789012345678)", "return cjson.encode({[10]=1, a=2})",
    "local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\\\u00e9\\\\n\",\"d\":1.5e3,\"e\":true,\"f\":false}'); "
    "return {t.a[1], t.a[3].b == cjson.null, t.c, t.d, tostring(t.e), tostring(t.f), type(t.a[3].b)}",
    "return cjson.decode('[1,2')", "return cjson.decode('x')", "return cjson.decode('')",
    "return cjson.decode('{\"a\":1,}')", "return cjson.decode('[1] x')", "return cjson.decode('\"\\\\ud83d\\\\ude00\"')",
    "return cjson.decode('123456789012345678901')", "return tostring(cjson.decode('0.1'))",
    "return cjson.decode('{\"1\":2}')['1']", "return cjson.decode('[' .. string.rep('[', 1000) .. ']')",
    "local t = {} t[1] = t return cjson.encode(t)", "return cjson.encode({a={b={c={}}}})",
    "return cjson.encode({'a', nil, 'c'})", "return cjson.encode({0.5, -2.25, 100, 3.14159265358979, 1e-5, 2^53})",
    "return cjson.decode('[01, 0x10, -0x1, 1e2]')", "return cjson.decode('\"\\\\q\"')", "return cjson.decode('\"abc')",
    "return cjson.decode('{\"a\" 1}')", "return cjson.decode('{1:2}')", "return cjson.decode('[1 2]')",
    "return cjson.decode('tru')", "return cjson.decode(' [ 1 , 2 ] ')", "return cjson.decode(5)",
    "return cjson.decode({})", "return cjson.decode()", "local t = cjson.decode('{\"b\":1,\"a\":2,\"c\":3}') "
    "local o = {} for k, v in pairs(t) do o[#o+1] = k end return o",
    "return cjson.encode(cjson.decode('{\"k\":[1,{\"x\":null}],\"z\":\"\\\\/\"}'))",
    "return cjson.decode('\"\\\\ud800\"')",
]

CMSGPACK = [
    "return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, 2^32, "
    "-2^31-1, 2^53, 0.5, 1.1, 1e300, 1/0)",
    "return cmsgpack.pack('a', string.rep('x', 31), string.rep('y', 32), string.rep('z', 256))",
    "return string.len(cmsgpack.pack(string.rep('y', 255))) .. ' ' .. string.len(cmsgpack.pack(string.rep('y', 256)))"
    " .. ' ' .. string.len(cmsgpack.pack(string.rep('y', 65536)))",
    "return cmsgpack.pack({1,2,3}, {a=1}, {}, true, false, nil, {[1]=1,[3]=3})", "return cmsgpack.pack(cjson.null)",
    "return cmsgpack.pack(function() end)", "return cmsgpack.pack()",
    "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2}, {x='y'}, true, 1.5))}",
    "local a,b,c = cmsgpack.unpack(cmsgpack.pack(1, 'a', {x='y'})) return {a, b, c.x}",
    "return cmsgpack.unpack('\\192')", "return {cmsgpack.unpack('\\192\\1')}", "return cmsgpack.unpack('\\193')",
    "return cmsgpack.unpack('\\217')", "return cmsgpack.unpack('')",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}", "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 2)}",
    "return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}",
    "return cmsgpack.pack({a={b={c=1}}})", "local t = {} for i=1,20 do t[i]=i end return cmsgpack.pack(t)",
    "local t = {} for i=1,20 do t['k'..i]=i end return cmsgpack.pack(t)",
    "return {cmsgpack.unpack('\\203\\63\\248\\0\\0\\0\\0\\0\\0', '\\202\\63\\192\\0\\0')}",
    "return tostring(cmsgpack.unpack('\\202\\63\\192\\0\\0'))",
    "return tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255'))",
    "return tostring(cmsgpack.unpack('\\211\\255\\255\\255\\255\\255\\255\\255\\255'))",
    "local t = {} t[1]=t return cmsgpack.pack(t)",
    "return {cmsgpack.pack(-1/0), cmsgpack.pack(0/0), cmsgpack.pack(2^63), cmsgpack.pack(-2^63), "
    "cmsgpack.pack(2^64), cmsgpack.pack(1e19), cmsgpack.pack(3.4e38), cmsgpack.pack(1e-46)}",
]

STRUCT = [
    "return struct.pack('>I2 <i4 b B h H l L f d s c3 i', 258, -2, -1, 255, -3, 65535, -5, 7, 1.5, 2.25, 'zz', 'abc', 9)",
    "return {struct.unpack('>I2i4', '\\1\\2\\255\\255\\255\\254')}", "return {struct.unpack('>I2', '\\1\\2\\3\\4', 3)}",
    "return {struct.size('>I2i4dc5'), struct.size('!4 b i')}", "return struct.pack('q', 1)",
    "return struct.unpack('>I4', '\\1')", "return struct.pack('i17', 1)", "return {struct.unpack('s', 'ab\\0cd')}",
    "return {struct.unpack('c0', 'abc')}", "return {struct.unpack('bc0', '\\3abcd')}",
    "return struct.pack('!4 b i x', 1, 2)", "return {struct.unpack('<d', struct.pack('<d', 0.1))}",
    "return struct.pack('>I3', 2^24 + 5)", "return struct.pack('>i8', -2)",
    "return tostring(struct.unpack('>I8', '\\255\\255\\255\\255\\255\\255\\255\\255'))",
    "return struct.pack('i', 'x')", "return struct.pack('c2', 'a')",
]


@pytest.mark.parametrize("body", BIT + CJSON + CMSGPACK + STRUCT)
def test_libraries(diff, body):
    ev(diff, body)


CJSON_SETTINGS = [
    "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}",
    "return {cjson.encode_sparse_array()}", "return {cjson.encode_keep_buffer(), cjson.decode_invalid_numbers()}",
    "return cjson.encode_invalid_numbers()",
    "cjson.encode_max_depth(1) return {pcall(cjson.encode, {a={1}})}",
    "return {pcall(cjson.encode, {a={1}})}",  # the setting outlives the script that made it
    "return cjson.encode({a=1})", "return cjson.encode_max_depth(2)",
    "return {pcall(cjson.encode, {a={b={1}}})}",
    "cjson.decode_max_depth(1) return {pcall(cjson.decode, '{\"obj\": {\"array\": [1,2,3,4]}}')}",
    "return {pcall(cjson.decode, '[1]')}", "return {pcall(cjson.decode, '[[1]]')}",
    "return {cjson.encode_sparse_array(true, 1, 2)}", "return cjson.encode({[1]=1,[5]=2})",
    "return {cjson.encode_sparse_array(false, 0)}", "return cjson.encode({[1]=1,[500]=2})",
    "return {cjson.encode_sparse_array(nil, 3, 4)}", "return {pcall(cjson.encode, {[1]=1,[50]=2})}",
    "return cjson.encode_sparse_array('x')", "return cjson.encode_sparse_array(1, 2, 3, 4)",
    "return cjson.encode_sparse_array(nil, -1)", "return {cjson.encode_sparse_array('on', '5')}",
    "return cjson.encode_number_precision(15)", "return cjson.encode_number_precision(0)",
    "cjson.encode_number_precision(3) return cjson.encode({3.14159, 1234567, 0.5, {[2.71828]=1}})",
    "return cjson.encode_number_precision(14.9)",
    "return cjson.encode_invalid_numbers('null')", "return cjson.encode({1/0, -1/0, 0/0})",
    "return cjson.encode_invalid_numbers(true)", "return cjson.encode({1/0, -1/0, 0/0})",
    "return cjson.encode_invalid_numbers('off')", "return {pcall(cjson.encode, {1/0})}",
    "return cjson.encode_invalid_numbers('maybe')", "return cjson.encode_invalid_numbers({})",
    "return {pcall(cjson.decode, '[0x10, +1, 01, -0x2, Inf, nan]')}",
    "return cjson.decode_invalid_numbers(false)",
    "return {pcall(cjson.decode, '[0x10]')}", "return {pcall(cjson.decode, '[01]')}",
    "return {pcall(cjson.decode, '[-inf]')}", "return {pcall(cjson.decode, '[+1]')}",
    "return {pcall(cjson.decode, '[1, -2.5e3]')}", "return {pcall(cjson.decode, 'inf')}",
    "return {cjson.encode_keep_buffer('off'), cjson.encode_keep_buffer(true)}",
    "return cjson.encode_keep_buffer({})", "return cjson.encode_max_depth('abc')",
    "return cjson.encode_max_depth('5')", "return cjson.encode_max_depth(2.7)",
    "return cjson.encode_max_depth(0)", "return cjson.decode_max_depth(1, 2)",
]


def test_cjson_settings(diff):
    """cjson's settings functions: what they return, what they check, and what each setting does to
    encode and decode.  A setting lasts until SCRIPT FLUSH, as in Redis, so the sequence runs between
    two flushes and every step sees the settings of the steps before it.  (Argument errors are raised
    directly: under pcall Lua names the function '?', which raxdb's Python functions do not.)"""
    diff("SCRIPT", "FLUSH")
    try:
        for body in CJSON_SETTINGS:
            ev(diff, body)
    finally:
        diff("SCRIPT", "FLUSH")
    ev(diff, "return {pcall(cjson.encode, {a={1}})}")


def test_a_table_that_contains_itself(diff):
    """Redis converts a returned table on the Lua C stack, so a table that contains itself ends,
    ~8,000 levels down, in 'reached lua stack limit' errors, at the depth Redis's stack accounting
    gives for arrays, maps (key and value) and sets; the connection keeps working."""
    for body in ("local a = {}; local b = {a}; a[1] = b; return a",
                 "local a = {}; local b = {a}; a[1] = b; return {1, 2, a, 3}",
                 "local a = {}; a.map = a; return a", "local a = {}; local m = {}; m[1] = a; a.map = m; return a",
                 "local a = {}; local s = {}; s[a] = true; a.set = s; return a",
                 "local a = {}; a[1] = {err = 'deep'}; local t = a; for i = 1, 7995 do t = {t} end return t"):
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 40_000))  # the harness reads nested frames recursively
        try:
            ev(diff, body)
        finally:
            sys.setrecursionlimit(limit)
    diff("PING")


def test_big_maps_sets_and_objects_reach_lua(diff):
    """Replies and decoded documents with more members than one call into Lua can carry (RESP3
    maps and sets from redis.call, cjson and cmsgpack objects) arrive whole."""
    ev(diff, "for i = 1, 10000 do redis.call('hset', 'bh', 'f' .. i, i) redis.call('sadd', 'bs', 'm' .. i) end")
    ev(diff, "redis.setresp(3) local t = redis.call('hgetall', 'bh') local n = 0 "
             "for k, v in pairs(t.map) do n = n + 1 end return {n, t.map['f77'], t.map['f10000']}")
    ev(diff, "redis.setresp(3) local t = redis.call('smembers', 'bs') local n = 0 "
             "for k, v in pairs(t.set) do n = n + 1 end return {n, tostring(t.set['m9999'])}")
    for lib in ("cjson.decode(cjson.encode(t))", "cmsgpack.unpack(cmsgpack.pack(t))"):
        ev(diff, "local t = {} for i = 1, 100000 do t['k' .. i] = i end local d = " + lib +
                 " local n = 0 for k in pairs(d) do n = n + 1 end return {n, d.k4999, d.k100000}")
        ev(diff, "local t = {} for i = 1, 5000 do t['k' .. i] = i end local d = " + lib +
                 " local o = {} for k in pairs(d) do o[#o + 1] = k end return o")


# (-0 and 0/0 are left out: lupa hands -0 to Python as the integer 0, and Python prints NaN without
# the sign glibc's printf shows, so raxdb sends "0" and "nan" where Redis sends "-0" and "-nan")
NUMBER_ARGS = ["0", "1", "-1", "7", "1023", "1024", "1732550400123", "-1732550400123",
               "99999999999999999", "2^53 - 1", "2^53", "2^53 + 2", "-2^53", "-2^53 - 2", "1e16", "1e17", "1e17 + 8",
               "123456789012345678", "2^62", "2^63", "-2^63", "2^64", "1e300", "0.5", "-0.1", "1/3", "1e-300",
               "5e-324", "2^53 + 0.5", "1/0", "-1/0"]


@pytest.mark.parametrize("expr", NUMBER_ARGS)
def test_number_arguments_are_formatted_as_redis_does(diff, expr):
    """A Lua number given to redis.call becomes its "%.17g" text (integers below 2^53 take a
    cheaper path to the same bytes), as the command and its propagated form both see it."""
    ev(diff, f"redis.call('set', 'num', {expr}) return redis.call('get', 'num')")
    ev(diff, f"return redis.call('rpush', 'nums', {expr}, {expr} + 1, -({expr}))")
    diff("LRANGE", "nums", "0", "-1")


def test_redis_call_takes_all_that_unpack_gives(diff):
    """unit/scripting 'Script check unpack with massive arguments': redis.call and redis.pcall take
    the 7999 values unpack() can give besides the command and key (lupa stops a Python callable at
    7997 arguments), nils and tables among them are refused as Redis refuses them, and an error of
    a redis.call in a tail position, in a chunk the script compiles too, names the calling line."""
    big = "local a = {} for i = 1, 7999 do a[i] = i end "
    ev(diff, big + "return redis.call('lpush', 'l', unpack(a))")
    ev(diff, big + "return redis.pcall('rpush', 'l', unpack(a))")
    ev(diff, big + "a[7000] = {} return redis.pcall('rpush', 'l', unpack(a))")
    ev(diff, big + "a[7000] = nil return redis.call('rpush', 'l', unpack(a, 1, 7997))")
    ev(diff, big + "\nreturn redis.call('nosuch', 'l', unpack(a))")
    ev(diff, "local a = {} for i = 1, 8000 do a[i] = i end return redis.call('lpush', 'l', unpack(a))")
    ev(diff, "local function f(n)\n if n == 0 then return redis.call('nosuch') end\n return f(n - 1) end\n"
             "return f(10)")
    ev(diff, "local f = loadstring('\\nreturn redis.call(\\'nosuch\\')', 'chunk')\nreturn f()")
    diff("LLEN", "l")


def test_blocking_stream_reads_refused_in_scripts(diff):
    """XREAD and XREADGROUP with BLOCK fail inside a script, naming the command as the script spelled
    it, before the timeout is even parsed."""
    diff("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for call in ("redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')",
                 "redis.pcall('XREAD', 'COUNT', 1, 'block', 'x', 'STREAMS', 's', '$')",
                 "redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', 's', '>')",
                 "redis.pcall('XREADGROUP', 'GROUP', 'nosuch', 'c', 'BLOCK', 10, 'STREAMS', 's', '>')",
                 "redis.pcall('xread', 'STREAMS', 's', '$')", "redis.call('xread', 'block', 0, 'streams', 's', '0')"):
        ev(diff, "return " + call)


def test_shebang_flags(diff):
    diff("SET", "a", "1")
    for body in ["#!lua flags=no-writes\nreturn redis.call('set','a','1')", "#!lua flags=no-writes\nreturn x",
                 "#!lua\nreturn x", "#!lua flags=bad-flag\nreturn 1", "#!lua name=foo\nreturn 1",
                 "#!python\nreturn 1", "#!lua flags=no-writes,allow-oom\nreturn 1", "#!lua flags=\nreturn 1",
                 "#!lua   flags=no-writes  \nreturn 1", "#!lua x\nreturn 1",
                 "#!lua flags=no-cluster,allow-cross-slot-keys,allow-stale\nreturn 1", "#! lua\nreturn 1", "#!lua",
                 "#!luax\nreturn 1", "#!lua flags=no-writes\nreturn redis.pcall('set','a','b')",
                 "#!lua flags=allow-oom\nreturn redis.call('get','a')", "", "-- only a comment", "return"]:
        diff("EVAL", body, 0)
    for body in ["#!lua\nreturn 1", "#!lua flags=no-writes\nreturn 1", "return redis.call('set','a','1')",
                 "return redis.pcall('set','a','1')", "return redis.call('get','a')"]:
        diff("EVAL_RO", body, 0)


def test_evalsha_finds_each_of_many_scripts_and_none_after_a_flush(diff):
    """EVALSHA of 40 cached scripts, in turn and in both cases (many share their sha's first byte,
    by which the cache remembers the last script it found), then none once SCRIPT FLUSH has run,
    then the ones loaded again: each reply beside redis-server's."""
    bodies = [f"return {i}" for i in range(40)]
    shas = [hashlib.sha1(b.encode()).hexdigest() for b in bodies]
    for b in bodies:
        diff("SCRIPT", "LOAD", b)
    for _ in range(2):
        for sha in shas + shas[::-1]:
            diff("EVALSHA", sha, 0)
            diff("EVALSHA", sha.upper(), 0)
    diff("SCRIPT", "FLUSH")
    for sha in shas:
        diff("EVALSHA", sha, 0)
    for b in bodies[:5]:
        diff("EVAL", b, 0)
    for sha in shas[:10]:
        diff("EVALSHA", sha, 0)


@pytest.mark.parametrize("numkeys", ["0", "1", "2", "00", "01", "007", "+1", "-0", "-1", " 1", "1 ", "",
                                     "1.0", "0x1", "999999999999999", "9999999999999999999999"])
def test_numkeys_is_read_as_redis_reads_it(diff, numkeys):
    """numkeys of EVAL, EVALSHA and FCALL: plain digits (read without string2ll), and what
    string2ll refuses or reads otherwise (leading zeros, signs, blanks, too many digits)."""
    diff("EVAL", "return #KEYS", numkeys, "a", "b")
    diff("EVALSHA", hashlib.sha1(b"return #KEYS").hexdigest(), numkeys, "a", "b")
    diff("FCALL", "nosuchfunction", numkeys, "a", "b")


def test_script_cache_commands(diff):
    diff.script("""
        SCRIPT FLUSH
        EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
        EVALSHA abc 0
        SCRIPT LOAD "return 1"
        EVALSHA E0E1F9FABFC9D4800C877A703B823AC0578FF8DB 0
        EVALSHA_RO e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
        EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db x
        SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db E0E1F9FABFC9D4800C877A703B823AC0578FF8DB x
        SCRIPT LOAD "bad code ("
        SCRIPT LOAD "#!lua flags=bad\\nreturn 1"
        SCRIPT LOAD "#!lua flags=no-writes\\nreturn 1"
        SCRIPT FLUSH x
        SCRIPT FLUSH ASYNC
        SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db
        EVAL "return 2" 0
        SCRIPT EXISTS 7f923f79fe76194c868d7e1d0820de36700eb649
        SCRIPT FLUSH SYNC
        SCRIPT DEBUG x
        SCRIPT DEBUG NO
        SCRIPT HELP
        SCRIPT KILL
        SCRIPT KILL x
        SCRIPT NOSUCH
        SCRIPT
        FUNCTION KILL
    """)


def test_script_writes_and_atomic_effects(diff):
    diff("EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('incr', KEYS[2]); return redis.call('mget', "
         "KEYS[1], KEYS[2])", 2, "a", "n", "v")
    diff("MGET", "a", "n")
    diff("EVAL", "redis.call('set', 'x', 1); return redis.call('incr', 'str')", 0)
    diff("GET", "x")  # the write before the error stays, as in Redis
    diff("EVAL", "return redis.call('get', 'x')", 0)


def test_eval_inside_multi(diff):
    diff.script("""
        MULTI
        EVAL "return redis.call('incr', 'c')" 0
        EVAL "return redis.call('incr', 'c')" 0
        EVAL "return {err='E in exec'}" 0
        EXEC
    """)


def test_errorstats_count_script_errors(raxdb):
    c = RawConnection(raxdb.port)
    try:
        c.call("CONFIG", "RESETSTAT")
        c.call("EVAL", "return {err='MYCODE something'}", "0")
        info = c.call("INFO", "errorstats")
    finally:
        c.close()
    if info.startswith(b"-"):
        pytest.fail(f"INFO errorstats unavailable: {info!r}")
    assert b"errorstat_MYCODE:count=1" in info


def test_commands_called_from_scripts_are_counted(raxdb):
    c = RawConnection(raxdb.port)
    try:
        c.call("CONFIG", "RESETSTAT")
        c.call("EVAL", "redis.call('set','k','v'); return redis.call('get','k')", "0")
        stats = c.call("INFO", "commandstats")
    finally:
        c.close()
    assert b"cmdstat_set:calls=1" in stats and b"cmdstat_get:calls=1" in stats


def test_publish_from_script_reaches_subscribers(raxdb, oracle):
    results = []
    for port in (raxdb.port, oracle.port):
        sub, pub = RawConnection(port), RawConnection(port)
        try:
            sub.call("SUBSCRIBE", "ch")
            out = [pub.call("EVAL", "return redis.call('publish', 'ch', ARGV[1])", "0", "hi"), sub.read_frame()]
            results.append(out)
        finally:
            sub.close()
            pub.close()
    assert results[0] == results[1]


# ---- busy scripts ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def busy_pair():
    ours = start_raxdb("--busy-reply-threshold", "100")
    try:
        theirs = start_redis("--busy-reply-threshold", "100")
    except Exception:
        ours.stop()
        raise
    yield ours, theirs
    ours.stop()
    theirs.stop()


def _busy_session(port: int, body: str, actions) -> list:
    """Start `body` on one connection; once another connection sees BUSY, run `actions`."""
    runner, other = _connected(port), _connected(port)
    try:
        runner.send(_cmd("EVAL", body, "0"))
        out = []
        while True:
            r = other.call("PING")
            if r.startswith(b"-BUSY"):
                out.append(r)
                break
            assert r == b"+PONG\r\n"  # the script has not reached the threshold yet
        out += actions(other)
        out.append(runner.read_frame())
        out.append(other.call("PING"))
        return out
    finally:
        runner.close()
        other.close()


def _connected(port: int) -> RawConnection:
    """A connection the server has accepted (a script holding the loop does not accept new ones)."""
    c = RawConnection(port)
    assert c.call("PING") == b"+PONG\r\n"
    return c


def _cmd(*args) -> bytes:
    from tests.support.diff import encode_command

    return encode_command(args)


@pytest.mark.oracle
def test_busy_script_killed(busy_pair):
    def actions(other):
        out = [other.call("GET", "x"), other.call("SCRIPT", "EXISTS", "x"), other.call("FUNCTION", "KILL")]
        out.append(other.call("SCRIPT", "KILL"))
        return out

    ours, theirs = busy_pair
    body = "local i = 0 while true do i = i + 1 end"
    assert _busy_session(ours.port, body, actions) == _busy_session(theirs.port, body, actions)


@pytest.mark.oracle
def test_busy_script_with_pcall_is_still_killed(busy_pair):
    def actions(other):
        return [other.call("SCRIPT", "KILL")]

    ours, theirs = busy_pair
    body = "while true do pcall(function() local i = 0 while true do i = i + 1 end end) end"
    assert _busy_session(ours.port, body, actions) == _busy_session(theirs.port, body, actions)


@pytest.mark.oracle
def test_busy_script_that_wrote_is_unkillable(busy_pair):
    ours, theirs = busy_pair
    results = []
    for srv in (ours, theirs):
        runner, other = _connected(srv.port), _connected(srv.port)
        try:
            runner.send(_cmd("EVAL", "redis.call('set', KEYS[1], 'v') local t = redis.call('time') "
                             "while true do local n = redis.call('time') if n[1] - t[1] > 1 then break end end "
                             "return 'done'", "1", "busykey"))
            out = []
            while True:
                r = other.call("PING")
                if r.startswith(b"-BUSY"):
                    break
            out.append(other.call("SCRIPT", "KILL"))
            out.append(runner.read_frame())
            out.append(other.call("GET", "busykey"))
            results.append(out)
        finally:
            runner.close()
            other.close()
    assert results[0] == results[1]


@pytest.mark.oracle
def test_a_busy_script_serves_no_waiter_before_it_ends(busy_pair):
    """A command run while a script is busy (HELLO ... SETNAME here) must not hand a blocked BLPOP
    the list the script pushed to halfway (Redis's "Timedout scripts and unblocked command"):
    the waiter gets the script's last push.  raxdb served it the first."""
    body = ("redis.call('lpush', KEYS[1], 'y') "
            "while true do if string.find(redis.call('client', 'list'), 'abortscript') then break end end "
            "redis.call('lpush', KEYS[1], 'z') return 'done'")
    results = []
    for srv in busy_pair:
        runner, waiter, other = _connected(srv.port), _connected(srv.port), _connected(srv.port)
        try:
            other.call("DEL", "busylist")
            other.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")  # CLIENT LIST from the script
            waiter.send(_cmd("BLPOP", "busylist", "0"))
            while b"blocked_clients:1" not in other.call("INFO", "clients"):
                pass
            runner.send(_cmd("EVAL", body, "1", "busylist"))
            while not other.call("PING").startswith(b"-BUSY"):
                pass
            out = [other.call("HELLO", "2", "SETNAME", "abortscript")[:1], runner.read_frame(), waiter.read_frame(),
                   other.call("LRANGE", "busylist", "0", "-1")]
            results.append(out)
        finally:
            other.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
            for conn in (runner, waiter, other):
                conn.close()
    assert results[0] == results[1]
    assert results[0][2] == b"*2\r\n$8\r\nbusylist\r\n$1\r\nz\r\n"


@pytest.mark.oracle
def test_a_client_that_hangs_up_during_a_busy_script_is_gone_at_once(busy_pair):
    """A busy script sees a client that closed its connection leave (freed between the events
    Redis processes while blocked): Redis's "not enough good replicas state change during long
    script" waits so for a replica.  raxdb freed it only after the script, which then never ended."""
    body = "while string.find(redis.call('client', 'list'), 'leaver', 1, true) do end return 'gone'"
    results = []
    for srv in busy_pair:
        runner, leaver, other = _connected(srv.port), _connected(srv.port), _connected(srv.port)
        try:
            leaver.call("CLIENT", "SETNAME", "leaver")
            other.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")
            runner.send(_cmd("EVAL", body, "0"))
            while not other.call("PING").startswith(b"-BUSY"):
                pass
            leaver.close()
            results.append([runner.read_frame(), other.call("PING")])
        finally:
            other.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
            runner.close()
            other.close()
    assert results[0] == results[1] == [b"$4\r\ngone\r\n", b"+PONG\r\n"]


def test_scripts_on_a_stale_replica(fresh):
    """replica-serve-stale-data no with the link down: a script without a shebang is refused as
    it starts, one that declares flags without allow-stale by its flags (MASTERDOWN both), and
    an allow-stale one runs but may call only commands flagged stale; functions the same; EXEC
    of a queued script by its flags too.  raxdb ran them all (EVAL is flagged stale)."""
    lib = ("#!lua name=stalelib\n"
           "redis.register_function{function_name='fresh_only', callback=function() return 1 end, flags={'no-writes'}}\n"
           "redis.register_function{function_name='any', callback=function(k) return redis.call('get', k[1]) end, "
           "flags={'no-writes', 'allow-stale'}}")
    cases = [
        ("EVAL", "return redis.call('get', KEYS[1])", "1", "x"),
        ("EVAL", "#!lua flags=no-writes\nreturn 1", "0"),
        ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('get', KEYS[1])", "1", "x"),
        ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.pcall('get', KEYS[1])", "1", "x"),
        ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo', 'foobar')", "0"),
        ("EVALSHA", "a" * 40, "0"),
        ("FCALL", "fresh_only", "0"), ("FCALL", "any", "1", "x"),
    ]
    results = []
    for srv in fresh:
        c, q = _connected(srv.port), _connected(srv.port)
        try:
            c.call("SET", "x", "v")
            c.call("FUNCTION", "LOAD", "REPLACE", lib)
            c.call("SCRIPT", "LOAD", "return 1")
            c.call("CONFIG", "SET", "replica-serve-stale-data", "no")
            q.call("MULTI")
            q.call("EVAL", "#!lua flags=no-writes\nreturn 1", "0")
            c.call("REPLICAOF", "127.0.0.1", "1")
            out = [c.call(*case) for case in cases]
            out.append(c.call("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"))  # return 1, no shebang
            out.append(q.call("EXEC"))
            results.append(out)
        finally:
            c.call("REPLICAOF", "NO", "ONE")
            c.call("CONFIG", "SET", "replica-serve-stale-data", "yes")
            c.close()
            q.close()
    assert results[0] == results[1]
    assert results[0][0].startswith(b"-MASTERDOWN") and results[0][4] == b"$6\r\nfoobar\r\n"


def test_exec_of_a_script_that_may_write_is_refused_on_a_replica(fresh):
    """A queued EVAL of a script whose shebang does not say no-writes is a write: EXEC on a
    read-only replica aborts with READONLY (Redis's "no-writes shebang flag on replica"); raxdb
    ran it.  A no-writes script and a script without a shebang (checked as it runs) still run."""
    results = []
    for srv in fresh:
        conns = [_connected(srv.port) for _ in range(4)]
        admin, may_write, no_writes, plain = conns
        try:
            for c, body in ((may_write, "#!lua\nreturn 1"), (no_writes, "#!lua flags=no-writes\nreturn 2"),
                            (plain, "return redis.call('get', KEYS[1])")):
                c.call("MULTI")
                c.call("EVAL", body, "1", "k")
            admin.call("REPLICAOF", "127.0.0.1", "1")  # no master there: the role is what counts
            results.append([may_write.call("EXEC"), no_writes.call("EXEC"), plain.call("EXEC")])
        finally:
            admin.call("REPLICAOF", "NO", "ONE")
            for c in conns:
                c.close()
    assert results[0] == results[1]
    assert results[0][0].startswith(b"-EXECABORT Transaction discarded because of: READONLY")


@pytest.mark.oracle
def test_busy_answers_many_clients_and_multi(busy_pair):
    ours, _ = busy_pair
    runner = _connected(ours.port)
    others = [_connected(ours.port) for _ in range(3)]
    try:
        runner.send(_cmd("EVAL", "local i = 0 while true do i = i + 1 end", "0"))
        while not others[0].call("PING").startswith(b"-BUSY"):
            pass
        for o in others:
            assert o.call("GET", "x").startswith(b"-BUSY")
        assert others[1].call("MULTI") == b"+OK\r\n"  # allowed while busy, as in Redis
        assert others[1].call("DISCARD") == b"+OK\r\n"
        assert others[2].call("SCRIPT", "KILL") == b"+OK\r\n"
        assert runner.read_frame().startswith(b"-ERR Script killed by user with SCRIPT KILL...")
        for o in others:
            assert o.call("PING") == b"+PONG\r\n"
    finally:
        runner.close()
        for o in others:
            o.close()


# ---- redis-py -------------------------------------------------------------------------------------

def test_redis_py_register_script_and_evalsha_fallback(r):
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    r.script_flush()
    assert incr_by(keys=["n"], args=[2]) == 7  # NOSCRIPT -> EVAL fallback inside redis-py
    with r.pipeline() as p:
        incr_by(keys=["n"], args=[1], client=p)
        incr_by(keys=["n"], args=[1], client=p)
        assert p.execute() == [8, 9]


def test_redis_py_lock(r):
    import redis

    lock = r.lock("resource", timeout=10, blocking=False)
    assert lock.acquire()
    other = r.lock("resource", timeout=10, blocking=False)
    assert not other.acquire()
    lock.extend(5)
    assert r.pttl("resource") > 10000
    lock.reacquire()
    lock.release()
    assert other.acquire()
    lock.local.token = b"not-the-owner"  # the server-side script must refuse a foreign token
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lock.release()
    other.release()


def test_redis_py_lock_contention_threads(raxdb):
    import redis

    client = redis.Redis(port=raxdb.port)
    client.delete("counter", "mutex")
    errors = []

    def worker():
        try:
            local = redis.Redis(port=raxdb.port)
            for _ in range(20):
                with local.lock("mutex", timeout=5, sleep=0.001, blocking_timeout=30):
                    v = int(local.get("counter") or 0)
                    local.set("counter", v + 1)
            local.close()
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert client.get("counter") == b"80"
    client.close()


def test_globals_metatable_is_read_only(diff2):
    """A script cannot lift the undefined-global check for later scripts through getmetatable(_G)
    (Redis's "Try trick global protection 2")."""
    d = diff2
    d("EVAL", "local g = getmetatable(_G); g.__index = {}", "0")
    d("EVAL", "local g = getmetatable(_G); rawset(g, '__index', {})", "0")
    d("EVAL", "return type(getmetatable(_G).__index)", "0")
    d("EVAL", "local ok, res = pcall(function() return foo end); return {tostring(ok), res}", "0")
    for name in ("print", "loadfile", "dofile"):
        d("EVAL", f"{name}('x')", "0")


def test_rejected_script_calls_count_for_their_command(fresh):
    """A command a script may not run (read-only script, noscript, wrong arity, OOM) counts as a
    rejected call of that command, not as a call (INFO commandstats)."""
    import re

    from tests.support.diff import Diff

    d = Diff(fresh[0].port, fresh[1].port)
    d("EVAL_RO", "return redis.pcall('set', 'x', 'y')", "1", "x")
    d("EVAL", "return redis.pcall('multi')", "0")
    d("EVAL", "return redis.pcall('get')", "0")
    d("CONFIG", "SET", "maxmemory", "1")
    try:
        d("EVAL", "return redis.call('set', 'x', 'y')", "1", "x")
    finally:
        d("CONFIG", "SET", "maxmemory", "0")
    pick = re.compile(rb"cmdstat_(\w+):calls=(\d+),usec=\d+,usec_per_call=[\d.]+,(rejected_calls=\d+,failed_calls=\d+)")
    ours, theirs = d.both("INFO", "commandstats")
    keep = {b"set", b"multi", b"get", b"eval", b"eval_ro"}
    assert sorted(m for m in pick.findall(ours) if m[0] in keep) == sorted(m for m in pick.findall(theirs) if m[0] in keep)


def test_debug_object_sees_a_key_past_its_deadline(diff2):
    d = diff2
    d("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        d("SET", "key", "value", "PX", "1")
        import time

        time.sleep(0.01)  # the key must be past its deadline; no event marks that moment
        ours, theirs = d.both("DEBUG", "OBJECT", "key")
        assert ours.split(b" ")[2:4] == theirs.split(b" ")[2:4] == [b"refcount:1", b"encoding:embstr"]
        d("EVAL", "return redis.call('EXISTS', 'key')", "0")
        d("EXISTS", "key")
    finally:
        d("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_script_errors_count_once_in_errorstats(fresh):
    """An error of a command a script called (or was refused) counts once in errorstats and
    total_error_replies, when it happens, not again when the script passes it on (Redis's
    "Consistent eval error reporting")."""
    import re

    from tests.support.diff import Diff

    d = Diff(fresh[0].port, fresh[1].port)
    pick = re.compile(rb"(errorstat_\w+:count=\d+|total_error_replies:\d+)")
    scripts = [
        ("EVAL", "return redis.call('select', 99)", "0"),
        ("EVAL", "return redis.pcall('select', 99)", "0"),
        ("EVAL", "local t = redis.pcall('select', 99); return 1", "0"),
        ("EVAL_RO", "local t = redis.pcall('set', 'x', 'y'); return t['err']", "1", "x"),
        ("EVAL", "return redis.call('nosuchcommand')", "0"),
        ("EVAL", "return redis.pcall('get')", "0"),
        ("EVAL", "error('own error')", "0"),
        ("EVAL", "return redis.error_reply('MY own')", "0"),
        ("EVAL", "return redis.call()", "0"),
        ("EVAL", "return redis.call('GEOADD', 'Sicily', '13.361389', '38.115556', 'Palermo')", "1", "Sicily"),
    ]
    d("SET", "Sicily", "1")
    for script in scripts:
        d("CONFIG", "RESETSTAT")
        d(*script)
        ours, theirs = d.both("INFO", "all")
        assert sorted(pick.findall(ours)) == sorted(pick.findall(theirs)), script
    d("CONFIG", "SET", "maxmemory", "1")
    try:
        for script in (("EVAL", "return redis.call('set', 'x', 'y')", "1", "x"),
                       ("EVAL", "local t = redis.pcall('set', 'x', 'y'); return t['err']", "1", "x")):
            d("CONFIG", "RESETSTAT")
            d(*script)
            ours, theirs = d.both("INFO", "all")
            assert sorted(pick.findall(ours)) == sorted(pick.findall(theirs)), script
    finally:
        d("CONFIG", "SET", "maxmemory", "0")
