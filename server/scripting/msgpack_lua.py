"""cmsgpack.unpack's common case decoded in Lua (or in C), in front of lib_cmsgpack's Python `unpack`.

Job queues (BullMQ) pass every job's options as MessagePack and unpack them in each script; in
Python each unpack crossed into Python and back once per table built (~6-20 us where Redis takes
~1.5).  This decoder runs in the script's own Lua state and builds the tables as lua-cmsgpack's
mp_decode_to_lua_array / _hash do (a new table, one settable per element, in input order), so
they behave alike under `#`, `next` and `pairs`.

Rule: it answers only an input of exactly one value made of nil, booleans, integers of up to 32
bits, floats other than zeros, subnormals, infinities and NaN (BullMQ's timestamps are float64s),
strings, arrays and maps (a nil key raises lua_settable's error, as there), nested less than
MP_DEPTH deep; anything else (64-bit integers, ext and bin types, several values, short or bad
input, a non-string argument) goes, untouched, to the Python `unpack`, which owns every other
error message.  Decoding has no side effects, so giving up part way and starting again in Python
is safe.  When the C bridge is built (cbridge.pyx), its `rx_mp_unpack` decodes the same inputs by
the same rules, building the same tables, and this Lua decoder is not used.

The chunk is loaded under the sandbox's internal source name, so the debugger and the kill hook
skip its frames; `where` reports the line of the script that called `cmsgpack.unpack`, one level
further up than lua_env's `where` since the Python unpack is now called by this front.
"""

from __future__ import annotations

from typing import Any

UNPACK_CHUNK = r"""
local sbyte, ssub, rawtype, rawerror, dbg_getinfo = string.byte, string.sub, type, error, debug.getinfo
local floor, ldexp = math.floor, math.ldexp
local MP_DEPTH = 64
-- the types followed by a 1-, 2- or 4-byte count: unsigned / signed integers, str, array, map
local WIDTH = {[0xcc] = 1, [0xcd] = 2, [0xce] = 4, [0xd0] = 1, [0xd1] = 2, [0xd2] = 4, [0xd9] = 1, [0xda] = 2,
               [0xdb] = 4, [0xdc] = 2, [0xdd] = 4, [0xde] = 2, [0xdf] = 4}
local KIND = {[0xcc] = 'u', [0xcd] = 'u', [0xce] = 'u', [0xd0] = 'i', [0xd1] = 'i', [0xd2] = 'i', [0xd9] = 's',
              [0xda] = 's', [0xdb] = 's', [0xdc] = 'a', [0xdd] = 'a', [0xde] = 'm', [0xdf] = 'm'}
local SIGN = {[1] = 0x80, [2] = 0x8000, [4] = 0x80000000}
local value

local function array(s, p, n, depth)
  if depth >= MP_DEPTH then return nil, nil end
  local t = {}
  for i = 1, n do
    local v
    v, p = value(s, p, depth + 1)
    if p == nil then return nil, nil end
    t[i] = v
  end
  return t, p
end

local function map(s, p, n, depth)
  if depth >= MP_DEPTH then return nil, nil end
  local t = {}
  for _ = 1, n do
    local k, v
    k, p = value(s, p, depth + 1)
    if p == nil then return nil, nil end
    v, p = value(s, p, depth + 1)
    if p == nil then return nil, nil end
    if k == nil then rawerror('table index is nil', 0) end  -- lua_settable's, from C: unplaced
    t[k] = v
  end
  return t, p
end

-- a string of n bytes from index p; nil, nil when the input is short
local function str(s, p, n)
  local e = p + n - 1
  if e > #s then return nil, nil end
  return ssub(s, p, e), e + 1
end

-- the value at index p: it and the index after it, or nil, nil for "ask Python".  No tail calls
-- (`local v, q = f() return v, q`): a tail-called frame would hide the script's line from the
-- error handler's walk up the stack.
value = function(s, p, depth)
  local b = sbyte(s, p)
  if b == nil then return nil, nil end
  if b <= 0x7f then return b, p + 1 end
  if b >= 0xe0 then return b - 256, p + 1 end
  if b >= 0xa0 and b <= 0xbf then local v, q = str(s, p + 1, b - 0xa0) return v, q end
  if b >= 0x90 and b <= 0x9f then local v, q = array(s, p + 1, b - 0x90, depth) return v, q end
  if b >= 0x80 and b <= 0x8f then local v, q = map(s, p + 1, b - 0x80, depth) return v, q end
  if b == 0xc0 then return nil, p + 1 end
  if b == 0xc2 then return false, p + 1 end
  if b == 0xc3 then return true, p + 1 end
  local k = WIDTH[b]
  if k ~= nil then  -- a big-endian count of k bytes: an integer, or a length of what follows
    local n, q = 0, p + k
    if q > #s then return nil, nil end
    for i = p + 1, q do n = n * 0x100 + sbyte(s, i) end
    local kind = KIND[b]
    if kind == 'u' then return n, q + 1 end
    if kind == 'i' then
      if n >= SIGN[k] then n = n - 2 * SIGN[k] end
      return n, q + 1
    end
    if kind == 'a' then local v, r = array(s, q + 1, n, depth) return v, r end
    if kind == 'm' then local v, r = map(s, q + 1, n, depth) return v, r end
    local v, r = str(s, q + 1, n) return v, r
  end
  if b == 0xcb then  -- float64, normal numbers: (2^52 + mantissa) * 2^(exponent - 1075), exact
    local a1, a2, a3, a4, a5, a6, a7, a8 = sbyte(s, p + 1, p + 8)
    if a8 == nil then return nil, nil end
    local e = (a1 % 0x80) * 0x10 + floor(a2 / 0x10)
    if e == 0 or e == 0x7ff then return nil, nil end  -- zeros, subnormals, inf, NaN: Python's
    local m = ((a2 % 0x10) * 0x1000000 + a3 * 0x10000 + a4 * 0x100 + a5) * 0x1000000 + a6 * 0x10000 + a7 * 0x100 + a8
    local v = ldexp(m + 0x10000000000000, e - 1075)
    if a1 >= 0x80 then v = -v end
    return v, p + 9
  end
  if b == 0xca then  -- float32, likewise
    local a1, a2, a3, a4 = sbyte(s, p + 1, p + 4)
    if a4 == nil then return nil, nil end
    local e = (a1 % 0x80) * 2 + floor(a2 / 0x80)
    if e == 0 or e == 0xff then return nil, nil end
    local v = ldexp((a2 % 0x80) * 0x10000 + a3 * 0x100 + a4 + 0x800000, e - 150)
    if a1 >= 0x80 then v = -v end
    return v, p + 5
  end
  return nil, nil  -- 64-bit integers, ext and bin types, 0xc1: Python's
end

-- the front of py_unpack; with `decode` (cbridge's rx_mp_unpack: true and the value, or nothing),
-- the common case is decoded by it, in C, instead of by `value`
local function wrap(py_unpack, decode)
  if decode ~= nil then
    return function(...)
      local ok, v = decode(...)
      if ok then return v end
      return py_unpack(...)
    end
  end
  return function(...)  -- (a C function tail-called keeps this frame: `where` counts it)
    local s = ...
    if rawtype(s) == 'string' then
      local v, p = value(s, 1, 0)
      if p ~= nil and p > #s then return v end
    end
    return py_unpack(...)
  end
end

-- where for the Python unpack behind the front: the caller of cmsgpack.unpack is level 4
local function where()
  local info = dbg_getinfo(4, 'Sl')
  if info and info.currentline > 0 then return info.short_src .. ':' .. info.currentline .. ': ' end
  return ''
end

return wrap, where
"""


def load(lua: Any) -> tuple[Any, Any]:
    """The chunk in `lua`: (wrap, where), `wrap(py_unpack, decode)` making the front of a Python
    unpack (with cbridge's C decoder when `decode` is not None) whose errors are placed by `where`."""
    return lua.execute(UNPACK_CHUNK, name="=[raxdb]")
