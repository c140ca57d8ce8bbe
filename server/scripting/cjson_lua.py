"""cjson.encode's common case encoded in Lua, in front of lib_cjson's Python `encode`.

Job queues (BullMQ) encode a job's options with cjson in each script that stores a job; in
Python each encode crossed into Python and back once per table entry read (~2.5 us for a small
table where Redis takes ~0.3).  This encoder runs in the script's own Lua state and writes what
lua-cjson 2.1.0 writes with Redis's defaults: strings escaped as json_append_string does (", \\,
/, control characters, DEL), numbers as "%.14g", a table whose keys are all positive integers an
array (holes as null), any other (the empty table included) an object in `next` order with number
keys as strings.  Tables are read raw (rawget, next), as lua-cjson reads them.

Rule: it answers only one argument made of strings, finite numbers, booleans and tables (array
or object keys strings or finite numbers), nested at most 1000 deep, arrays not excessively
sparse, and only while every cjson setting is at its default (Python clears `fast` when one
changes); anything else (cjson.null, functions, NaN and Inf, sparse arrays, a wrong number of
arguments) goes, untouched, to the Python `encode`, which owns every error message.  Encoding has
no side effects, so giving up part way and starting again in Python is safe.

The chunk is loaded under the sandbox's internal source name, so the debugger and the kill hook
skip its frames; the Python encode behind it places its errors with msgpack_lua's front `where`
(both fronts keep one frame between the script and the Python callable).
"""

from __future__ import annotations

from typing import Any

ENCODE_CHUNK = r"""
local rawtype, rawnext, rawget, rawselect = type, next, rawget, select
local sfind, sgsub, sformat, schar, tconcat = string.find, string.gsub, string.format, string.char, table.concat
local floor, HUGE = math.floor, math.huge
local MAX_DEPTH, SPARSE_RATIO, SPARSE_SAFE = 1000, 2, 10   -- lua-cjson's defaults
local INT_LIMIT, INT_MIN = 2147483648, -2147483648
local fast = true   -- every setting at its default

-- json_append_string's escapes (char2escape)
local ESC = {}
for i = 0, 31 do ESC[schar(i)] = sformat('\\u%04x', i) end
ESC['\b'], ESC['\t'], ESC['\n'], ESC['\f'], ESC['\r'] = '\\b', '\\t', '\\n', '\\f', '\\r'
ESC['"'], ESC['\\'], ESC['/'], ESC['\127'] = '\\"', '\\\\', '\\/', '\\u007f'
local SPECIAL = '[%z\1-\31"\\/\127]'

-- Quoted strings of up to CACHE_LEN bytes are kept, values in `quoted`, object keys with their
-- colon in `keyed` (keys repeat from call to call: a job's option names), CACHE_MAX of them in
-- all: both start again empty when full.
local CACHE_LEN, CACHE_MAX = 64, 1024
local quoted, keyed, cached = {}, {}, 0

local function quote(s)
  if sfind(s, SPECIAL) then return '"' .. sgsub(s, SPECIAL, ESC) .. '"' end
  return '"' .. s .. '"'
end

local function remember(s, q, is_key)
  if #s > CACHE_LEN then return end
  if cached >= CACHE_MAX then quoted, keyed, cached = {}, {}, 0 end
  if is_key then keyed[s] = q else quoted[s] = q end
  cached = cached + 1
end

local function str(s)
  local q = quoted[s]
  if q ~= nil then return q end
  q = quote(s)
  remember(s, q, false)
  return q
end

-- A finite number as "%.14g"; nil for NaN and the infinities (Python's error, or setting).  An
-- integer of at most 14 digits is the same text in "%d", which is cheaper; the small ones are
-- kept.  Zero goes to "%.14g" (-0 is written "-0").
local SMALL = {}
for i = 1, 1023 do SMALL[i] = sformat('%d', i) end
local function num(x)
  local s = SMALL[x]
  if s ~= nil then return s end
  if x ~= x or x == HUGE or x == -HUGE then return nil end
  if x ~= 0 and floor(x) == x and x < 1e14 and x > -1e14 then return sformat('%d', x) end
  return sformat('%.14g', x)
end

-- An object key as written before its value ('"k":'); nil for keys lua-cjson refuses.
local function key(k)
  local kt = rawtype(k)
  if kt == 'string' then
    local q = quote(k) .. ':'
    remember(k, q, true)
    return q
  end
  if kt == 'number' then
    local s = num(k)
    if s == nil then return nil end
    return '"' .. s .. '":'
  end
  return nil
end

-- The text of a string, number or boolean; nil for anything else.
local function scalar(v, vt)
  if vt == 'string' then return str(v) end
  if vt == 'number' then return num(v) end
  if vt == 'boolean' then return v and 'true' or 'false' end
  return nil  -- cjson.null (a Python object), functions, ...: Python's
end

-- tbl appends table t to buf after index n and returns the new last index, or nil to give up;
-- member does the same for any value but nil.
local member

local function tbl(t, buf, n, depth)
  depth = depth + 1
  if depth > MAX_DEPTH then return nil end
  -- lua_array_length: the largest key when every key is a positive integer, else -1; its `max`
  -- is a C int, which a key of 2^31 or more sets to INT_MIN (x86's conversion), so such a table
  -- is an object unless a smaller key comes after it in `next` order
  local max, items = 0, 0
  for k in rawnext, t do
    if rawtype(k) == 'number' and k >= 1 and floor(k) == k then
      if k > max then max = k < INT_LIMIT and k or INT_MIN end
      items = items + 1
    else
      max = -1
      break
    end
  end
  if max > 0 then
    if max > items * SPARSE_RATIO and max > SPARSE_SAFE then return nil end
    n = n + 1
    buf[n] = '['
    for i = 1, max do
      if i > 1 then
        n = n + 1
        buf[n] = ','
      end
      local v = rawget(t, i)
      if v == nil then
        n = n + 1
        buf[n] = 'null'
      else
        n = member(v, buf, n, depth)
        if n == nil then return nil end
      end
    end
    n = n + 1
    buf[n] = ']'
    return n
  end
  n = n + 1
  buf[n] = '{'
  local first = true
  for k, v in rawnext, t do
    if first then
      first = false
    else
      n = n + 1
      buf[n] = ','
    end
    local q = keyed[k] or key(k)
    if q == nil then return nil end
    n = n + 1
    buf[n] = q
    n = member(v, buf, n, depth)
    if n == nil then return nil end
  end
  n = n + 1
  buf[n] = '}'
  return n
end

member = function(v, buf, n, depth)
  local vt = rawtype(v)
  if vt == 'table' then
    local m = tbl(v, buf, n, depth)
    return m
  end
  local s = vt == 'string' and quoted[v] or scalar(v, vt)
  if s == nil then return nil end
  n = n + 1
  buf[n] = s
  return n
end

-- The whole value: its text, or nil to give up.  The pieces go to one buffer kept from call to
-- call (growing a new table piece by piece cost more than the pieces); nothing run while it is in
-- use can call encode again (rawnext and rawget call no metamethods), and a buffer grown past
-- BUF_KEEP pieces is dropped after use.
local BUF_KEEP = 4096
local shared = {}
local function encode(v)
  local vt = rawtype(v)
  if vt ~= 'table' then return scalar(v, vt) end
  local buf = shared
  local n = tbl(v, buf, 0, 0)
  if n == nil then return nil end
  local s = tconcat(buf, '', 1, n)
  if n > BUF_KEEP then shared = {} end
  return s
end

local function wrap(py_encode)
  return function(...)  -- (a C function tail-called keeps this frame: the front `where` counts it)
    if fast and rawselect('#', ...) == 1 then
      local s = encode((...))
      if s ~= nil then return s end
    end
    return py_encode(...)
  end
end

local function set_fast(on) fast = on end

return wrap, set_fast
"""


def load(lua: Any) -> tuple[Any, Any]:
    """The chunk in `lua`: (wrap, set_fast), `wrap(py_encode)` making the front of a Python
    encode, `set_fast(bool)` saying whether every cjson setting is at its default."""
    return lua.execute(ENCODE_CHUNK, name="=[raxdb]")
