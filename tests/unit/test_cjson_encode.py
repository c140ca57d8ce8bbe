"""cjson.encode against redis-server: the Lua encoder in front (server/scripting/cjson_lua.py) and
the Python encode it hands the rest to must together write what lua-cjson writes.

Each case encodes a value built in the script, so both sides see the same table (the order `next`
walks an object in is the Lua table's, the same in both Lua 5.1s); errors are compared in their
wording and position, direct, under pcall and on a later line.  test_scripting.py's CJSON and
CJSON_SETTINGS cases cover the rest of the library.
"""

from __future__ import annotations

import pytest


def ev(diff, body: str) -> bytes:
    return diff("EVAL", body, 0)


VALUES = [
    # strings: every escape lua-cjson writes, and bytes it leaves raw
    "'plain'", "''", "'a/b'", "'\\0x\\0'", "'\\1\\2\\31 \\127\\128\\255'", "'q\"b\\\\s'",
    "'\\b\\t\\n\\f\\r'", "'é€'", "string.rep('x/', 300)",
    # numbers: "%.14g"
    "0", "-0", "0.0 * -1", "1", "-1", "0.1", "1/3", "-2.5e-7", "1e14", "1e15", "123456789012345678",
    "2^53", "2^53 + 1", "2^63", "-2^63", "1e300", "5e-324", "1795620383764", "1795620383764.5",
    # booleans and tables
    "true", "false", "{}", "{{}}", "{{}, {{}}}", "{1, 2, 3}", "{'a', nil, 'c'}", "{nil, nil, 3}",
    "{[1]=1, [2]=2, [4]=4}", "{[1]=1, [10]=2}", "{[1]=1, [11]=2}", "{[1]=1, [2]=2, [3]=3, [4]=4, [5]=5, [12]=1}",
    "{[1]=1, [2]=2, [3]=3, [4]=4, [5]=5, [6]=6, [12]=1}", "{[1.5]=1}", "{[0]=1}", "{[-1]=1}", "{[1]=1, [0]=2}",
    "{[2.5]='x', [1]='y'}",
    # lua-cjson's largest array index is a C int: keys of 2^31 and up make the table an object
    "{[1e15]=1}", "{[2^31]=1}", "{[2^31]=1, [2^32]=2}", "{[1]=1, [2^31]=2}", "{[1]=1, [2]=2, [2^40]=3}", "{a=1}", "{['a/b']='c/d', ['\\n']=true}",
    "{a={b={c={d={}}}}}", "{1, {a={2, {b=3}}}, 'x'}", "{[1]='a', x='b'}",
    # BullMQ's job options (storeJob.lua) and a parent key (addStandardJob)
    "{attempts=3, backoff={type='exponential', delay=1000}, removeOnComplete=true, removeOnFail=false, "
    "delay=0, timestamp=1732550400123, jobId='42', priority=0, lifo=false}",
    "{id='42', queueKey='bull:my-queue', fpof=true}",
    "{keepJobs={count=-1}, limiter=false, lockDuration=30000, attempts=0, name='job', age=86400}",
    # given up in Lua, answered by Python (same bytes)
    "cjson.null", "{cjson.null}", "{a=cjson.null}", "{1, {2, {cjson.null}}}", "nil",
]

ERRORS = [
    "1/0", "-1/0", "0/0", "{1/0}", "{a={b=0/0}}", "{[1/0]=1}", "{[0/0 + 0]=1}",  # NaN and Inf
    "function() end", "{function() end}", "{a={b=print}}", "{[true]=1}", "{[{}]=1}",  # types
    "{[1]=1, [20]=2}", "{a={[1]=1, [50]=2}}", "{[2^31 - 1]=1}",  # excessively sparse
]


@pytest.mark.parametrize("expr", VALUES)
def test_encode_values(diff, expr):
    ev(diff, f"return cjson.encode({expr})")


@pytest.mark.parametrize("expr", ERRORS)
def test_encode_errors(diff, expr):
    ev(diff, f"return cjson.encode({expr})")
    ev(diff, f"local ok, e = pcall(cjson.encode, {expr}) return {{tostring(ok), tostring(e)}}")
    ev(diff, f"local x = 1\nlocal ok, e = pcall(function() return cjson.encode({expr}) end)\n"
             "return {tostring(ok), tostring(e)}")
    ev(diff, f"local x = 1\n\nreturn cjson.encode({expr})")


def test_depth_limit(diff):
    """1000 nested tables are written, 1001 refused (Python's message), with the table that holds
    itself refused at the same depth."""
    for n in (999, 1000, 1001):
        ev(diff, f"local t = {{}} for i = 2, {n} do t = {{t}} end return string.len(cjson.encode(t))")
        ev(diff, f"local t = {{}} for i = 2, {n} do t = {{a = t}} end return {{pcall(cjson.encode, t)}}")
    ev(diff, "local t = {} t[1] = t return {pcall(cjson.encode, t)}")


@pytest.mark.parametrize("body", [
    "return cjson.encode()", "return cjson.encode(1, 2)",
    "return cjson.encode(nil)", "return type(cjson.encode)",
    # tables are read raw: holes under an __index are null, a __pairs-less metatable is ignored
    "local t = setmetatable({1, nil, 3}, {__index = function() return 'x' end}) return cjson.encode(t)",
    "local t = setmetatable({a = 1}, {__index = {b = 2}}) return cjson.encode(t)",
    # the same table twice, and a big flat one
    "local a = {1} return cjson.encode({a, a, {a}})",
    "local t = {} for i = 1, 5000 do t[i] = i * 1.5 end return cjson.encode(t)",
    "local t = {} for i = 1, 300 do t['k' .. i] = 'v/' .. i end return cjson.encode(t)",
    # encode then decode gives the value back
    "return cjson.decode(cjson.encode({a = {1, 2, 'x/y'}, b = true})).a[3]",
])
def test_encode_calls(diff, body):
    ev(diff, body)


def test_settings_turn_the_lua_encoder_off_and_on(diff):
    """A changed setting is the Python encoder's (what each writes: test_scripting's CJSON_SETTINGS);
    set back to the defaults, both give the default output again.  Settings last until SCRIPT FLUSH."""
    diff("SCRIPT", "FLUSH")
    try:
        for body in (
            "return cjson.encode({3.14159265358979, {a = {1}}})",
            "cjson.encode_number_precision(3) return cjson.encode({3.14159265358979})",
            "cjson.encode_number_precision(14) return cjson.encode({3.14159265358979})",
            "cjson.encode_max_depth(2) return {pcall(cjson.encode, {a = {{1}}})}",
            "return {pcall(cjson.encode, {a = {1}})}",
            "cjson.encode_max_depth(1000) return cjson.encode({a = {{1}}})",
            "cjson.encode_sparse_array(true) return cjson.encode({[1] = 1, [20] = 2})",
            "cjson.encode_sparse_array(false) return {pcall(cjson.encode, {[1] = 1, [20] = 2})}",
            "return cjson.encode_sparse_array(true, -1)",  # refused after the first argument
            "return cjson.encode({[1] = 1, [20] = 2})",
            "cjson.encode_sparse_array(false, 2, 10) return {pcall(cjson.encode, {[1] = 1, [20] = 2})}",
            "cjson.encode_invalid_numbers('null') return cjson.encode({1/0, 2})",
            "cjson.encode_invalid_numbers(false) return {pcall(cjson.encode, {1/0, 2})}",
            "return cjson.encode({1.5, 'x/'})",
        ):
            ev(diff, body)
    finally:
        diff("SCRIPT", "FLUSH")
