"""The Lua side of the scripting sandbox, as source text run once per Lua state.

Redis 7.0 runs scripts in a global environment where every library table and the globals table are
read-only (a patched Lua) and reading an undefined global is an error.  Stock Lua 5.1 (lupa) has no
read-only tables, so each protected table is an empty proxy whose metatable forwards reads to the
real table and refuses writes; `next`, `pairs`, `ipairs`, `rawget`, `rawset`, `setmetatable`,
`getmetatable` see through the proxies so scripts observe what they observe in Redis.

Functions implemented in Python (redis.call, cjson, ...) are lupa callables: C functions from Lua's
point of view, which matters because a C function is never tail-called away, so an error it raises is
still reported at the calling script line.  Their errors are Python exceptions carrying the Lua value
to raise; `unwrap` turns such a value back into what Redis would have raised (a string, or an
{err=...} table) wherever Lua code can observe it: the pcall/xpcall overrides and the error handler.
`type` reports those callables as functions.  redis.call and redis.pcall are the exception: a Lua
function in front of the callable (`front`), as lupa passes a Python callable at most 7997
arguments and Redis's takes more; so that a script's `return redis.call(...)` keeps the script's
frame all the same, the chunks scripts compile are loaded with no tail calls (untail.py).

`bootstrap(py)` receives a table of Python helpers and returns the table of Lua helpers the engine
uses (the proxy of the globals, the environment table, the error handler, constructors for reply
values).
"""

BOOTSTRAP = r"""
local py = ...
local G = _G
local rawtype, rawnext, rawipairs, rawrawget, rawrawset = type, next, ipairs, rawget, rawset
local rawsetmetatable, rawgetmetatable, rawtostring = setmetatable, getmetatable, tostring
local rawpcall, rawxpcall, rawerror, rawselect = pcall, xpcall, error, select
local rawloadstring, rawload, rawsetfenv = loadstring, load, setfenv
local dbg_getinfo, dbg_sethook = debug.getinfo, debug.sethook
local unwrap, is_pyfunc, untail = py.unwrap, py.is_pyfunc, py.untail
local rawdump = string.dump
local INTERNAL = '=[raxdb]'

local real_of = rawsetmetatable({}, {__mode = 'k'})   -- proxy -> protected table
local pyfuncs = rawsetmetatable({}, {__mode = 'k'})   -- callables to report as functions

local function ro_error() rawerror('Attempt to modify a readonly table', 2) end

local mt_of = rawsetmetatable({}, {__mode = 'k'})    -- proxy -> its metatable

local function protect(real)
  local proxy = {}
  local mt = {__index = real, __newindex = ro_error, __metatable = false}
  real_of[proxy] = real
  mt_of[proxy] = mt
  rawsetmetatable(proxy, mt)
  return proxy
end

-- Reading a missing key of `t` is an error, worded as Redis words it for globals.
local function strict(t)
  return rawsetmetatable(t, {__index = function(_, k)
    rawerror("Script attempted to access nonexistent global variable '" .. rawtostring(k) .. "'", 2)
  end})
end

local function mark_functions(t)
  for k, v in rawnext, t do
    if rawtype(v) == 'userdata' and is_pyfunc(v) then pyfuncs[v] = true end
  end
end

local env = strict({})   -- the real globals of scripts
local proxy_env = protect(env)

-- FUNCTION libraries see a different set of globals while loading than while running: the
-- globals proxy is repointed (closures keep the proxy as their environment, as in Redis).
local function use_env(t)
  real_of[proxy_env] = t
  mt_of[proxy_env].__index = t
end

local function see(t) return real_of[t] or t end

-- A builtin's argument error as luaL_argerror words it, raised at the line of the script that
-- called the builtin (level 3: past this function and the wrapper).
local function badarg(n, name, why)
  rawerror('bad argument #' .. n .. " to '" .. name .. "' (" .. why .. ')', 3)
end

local function l_type(v)
  local t = rawtype(v)
  if t == 'userdata' and pyfuncs[v] then return 'function' end
  return t
end
local function l_tostring(v)
  if pyfuncs[v] then return 'function: ' .. (rawtostring(v):match('0x%x+') or 'builtin') end
  return rawtostring(v)
end

-- The wrapped builtins check their arguments as the C builtins do (luaL_checktype, checkany),
-- before the raw function could fail at a line of this file under its local's name.  Not
-- `next`, `type` and `tostring`: a script calls them in its loops (`next` is pairs' iterator),
-- where a check or a vararg function costs every step; their argument errors keep this file's
-- wording (next of a non-table, type() and tostring() with no argument at all).
local function table_expected(v, nargs, n)
  return 'table expected, got ' .. (nargs < n and 'no value' or l_type(v))
end
local function l_next(t, k) return rawnext(see(t), k) end
local function l_pairs(...)
  local t = ...
  if rawtype(t) ~= 'table' then badarg(1, 'pairs', table_expected(t, rawselect('#', ...), 1)) end
  return l_next, t, nil
end
local function l_ipairs(...)
  local t = ...
  if rawtype(t) ~= 'table' then badarg(1, 'ipairs', table_expected(t, rawselect('#', ...), 1)) end
  return rawipairs(see(t))
end
local function l_rawget(...)
  local t, k = ...
  local n = rawselect('#', ...)
  if rawtype(t) ~= 'table' then badarg(1, 'rawget', table_expected(t, n, 1)) end
  if n < 2 then badarg(2, 'rawget', 'value expected') end
  return rawrawget(see(t), k)
end
local function l_rawset(...)
  local t, k, v = ...
  local n = rawselect('#', ...)
  if rawtype(t) ~= 'table' then badarg(1, 'rawset', table_expected(t, n, 1)) end
  if n < 3 then badarg(n + 1, 'rawset', 'value expected') end
  if real_of[t] then rawerror('Attempt to modify a readonly table', 0) end
  return rawrawset(t, k, v)
end
local function l_setmetatable(...)
  local t, mt = ...
  if rawtype(t) ~= 'table' then badarg(1, 'setmetatable', table_expected(t, rawselect('#', ...), 1)) end
  if mt ~= nil and rawtype(mt) ~= 'table' then badarg(2, 'setmetatable', 'nil or table expected') end
  if real_of[t] then rawerror('Attempt to modify a readonly table', 0) end
  return rawsetmetatable(t, mt)
end
-- The metatable of a protected table is as read-only as the table (a script that rewrote the
-- globals' __index would lift the undefined-global check for every later script).
local mt_views = rawsetmetatable({}, {__mode = 'k'})
local function l_getmetatable(...)
  if rawselect('#', ...) == 0 then badarg(1, 'getmetatable', 'value expected') end
  local t = ...
  local real = real_of[t]
  local mt = rawgetmetatable(real or t)
  if real and rawtype(mt) == 'table' then
    local view = mt_views[mt]
    if not view then
      view = protect(mt)
      mt_views[mt] = view
    end
    return view
  end
  return mt
end

-- pcall as Redis 7.0 patches it: a raised {err=...} table is returned as its err string.
local function fix_pcall(ok, ...)
  if ok then return ok, ... end
  local e = unwrap((...))
  if rawtype(e) == 'table' then
    local m = e.err
    local mt = rawtype(m)
    if mt == 'string' or mt == 'number' then e = m end
  end
  return false, e
end
local function l_pcall(...)
  -- Redis's pcall (luaRedisPcall) with nothing to call calls its own result placeholder
  if rawselect('#', ...) == 0 then return false, 'attempt to call a boolean value' end
  return fix_pcall(rawpcall(...))
end
local function l_xpcall(...)
  if rawselect('#', ...) < 2 then badarg(2, 'xpcall', 'value expected') end
  local f, handler = ...
  return rawxpcall(f, function(e) return handler(unwrap(e)) end)
end

-- Every chunk a script compiles is loaded without tail calls (untail.py: redis.call is a Lua
-- function, and a tail call into it would lose the calling line of its errors).
local function no_tail_calls(f, err)
  if f then
    f = rawloadstring(untail(rawdump(f)))
    rawsetfenv(f, proxy_env)
  end
  return f, err
end
local function l_loadstring(s, name)
  if rawtype(s) == 'string' and s:byte(1) == 27 then
    return nil, 'attempt to load a binary chunk'
  end
  return no_tail_calls(rawloadstring(s, name))
end
local function l_load(fn, name)
  return no_tail_calls(rawload(fn, name))
end

local function copy(t)
  local c = {}
  for k, v in rawnext, t do c[k] = v end
  return c
end

-- math.random / randomseed: Redis's rand48 generator (Python, so errors point at the caller).
local mathlib = copy(math)
mathlib.random, mathlib.randomseed = py.random, py.randomseed
mark_functions(mathlib)

-- The error handler: the value raised plus where, as Redis's __redis__err__handler.
local function err_handler(err)
  err = unwrap(err)
  local level, info = 2, nil
  while true do
    info = dbg_getinfo(level, 'Sl')
    if info == nil then break end
    if info.what ~= 'C' and info.source ~= INTERNAL then break end
    level = level + 1
  end
  if rawtype(err) ~= 'table' then err = {err = 'ERR ' .. rawtostring(err)} end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

for k, v in rawnext, {
  assert = assert, collectgarbage = collectgarbage, error = error, gcinfo = gcinfo,
  getmetatable = l_getmetatable, ipairs = l_ipairs, load = l_load, loadstring = l_loadstring,
  next = l_next, pairs = l_pairs, pcall = l_pcall, rawequal = rawequal, rawget = l_rawget,
  rawset = l_rawset, select = select, setmetatable = l_setmetatable, tonumber = tonumber,
  tostring = l_tostring, type = l_type, unpack = unpack, xpcall = l_xpcall, _VERSION = _VERSION,
  __redis__err__handler = err_handler,
  string = protect(copy(string)), table = protect(copy(table)), math = protect(mathlib),
  coroutine = protect(copy(coroutine)),
} do env[k] = v end
env._G = proxy_env

local function run(f, ...)
  local n, args = rawselect('#', ...), {...}
  local ok, v
  if n == 0 then
    ok, v = rawxpcall(f, err_handler)
  else
    ok, v = rawxpcall(function() return f(unpack(args, 1, n)) end, err_handler)
  end
  return ok, v
end

-- One call per EVAL / FCALL: build KEYS and ARGV (or the callback's keys and args) from the
-- flat argument list and run protected.  Returns ok and the first result.  The keys table is the
-- argument list itself with the arguments moved out (its length is still the number of keys: its
-- only border is there), which spares a third table per call.
local function split(nkeys, ...)
  local keys, args = {...}, {}
  for i = nkeys + 1, rawselect('#', ...) do
    args[i - nkeys] = keys[i]
    keys[i] = nil
  end
  return keys, args
end
local function run_eval(f, nkeys, ...)
  env.KEYS, env.ARGV = split(nkeys, ...)
  local ok, v = rawxpcall(f, err_handler)
  return ok, v
end
-- A function's call, as one closure made once: its callee and arguments are upvalues set for the
-- call (FCALL never nests: a function cannot call FCALL).
local fc_f, fc_keys, fc_args
local function fcall_body() return fc_f(fc_keys, fc_args) end
local function run_fcall(f, nkeys, ...)
  fc_f, fc_keys, fc_args = f, split(nkeys, ...)
  local ok, v = rawxpcall(fcall_body, err_handler)
  fc_f, fc_keys, fc_args = nil, nil, nil
  return ok, v
end

local function compile(body, name)
  return no_tail_calls(rawloadstring(body, name))
end

-- redis.call and redis.pcall: lupa lets a Python callable take at most 7997 arguments (it checks
-- two free slots against Lua's 8000-slot C-function limit), Redis's C function takes all that
-- unpack() can give, so more arrive packed in a table.
local PY_MAX_ARGS = 7997
local function front(direct, packed)
  return function(...)
    local n = rawselect('#', ...)
    if n <= PY_MAX_ARGS then return direct(...) end
    return packed(n, {...})
  end
end

-- Reply constructors (tables laid out as Redis builds them, so iteration orders match).  A call can
-- pass only so many arguments (Lua's C stack), so Python passes big ones in slices: the mk* call
-- makes the table from the first slice and the add* calls insert the rest, in the same order.
local function putpairs(t, skipnil, ...)
  local a, n = {...}, rawselect('#', ...)
  for i = 1, n, 2 do
    local k = a[i]
    if k ~= nil or not skipnil then t[k] = a[i + 1] end
  end
  return t
end
local function putkeys(t, ...)
  local a, n = {...}, rawselect('#', ...)
  for i = 1, n do
    if a[i] ~= nil then t[a[i]] = true end
  end
  return t
end
local function mkmap(...) return {map = putpairs({}, true, ...)} end
local function addmap(r, ...) putpairs(r.map, true, ...) return r end
local function mkset(...) return {set = putkeys({}, ...)} end
local function addset(r, ...) putkeys(r.set, ...) return r end
local function mkobj(...) return putpairs({}, false, ...) end
local function addobj(t, ...) return putpairs(t, false, ...) end

-- A returned table's reply shape, read with raw access as Redis reads it (a metatable, such as the
-- globals proxy's, is never consulted): a kind code and its payload.  The codes follow Redis's
-- order of checks: 1 err, 2 ok, 3 double, 4 big_number, 5 verbatim_string (format, string), 6 map,
-- 7 set; otherwise 8 and the array's elements up to the first nil, or, for an array too long to
-- return at once, 9 and its length: the caller then asks for slices, reply_shape(t, i, j).
local ARRAY_AT_ONCE = 4000
local rawunpack = unpack
local function reply_shape(t, i, j)
  if i then return rawunpack(t, i, j) end
  local v = rawrawget(t, 'err'); if rawtype(v) == 'string' then return 1, v end
  v = rawrawget(t, 'ok'); if rawtype(v) == 'string' then return 2, v end
  v = rawrawget(t, 'double'); if rawtype(v) == 'number' then return 3, v end
  v = rawrawget(t, 'big_number'); if rawtype(v) == 'string' then return 4, v end
  v = rawrawget(t, 'verbatim_string')
  if rawtype(v) == 'table' then
    local f, s = rawrawget(v, 'format'), rawrawget(v, 'string')
    if rawtype(f) == 'string' and rawtype(s) == 'string' then return 5, f, s end
  end
  v = rawrawget(t, 'map'); if rawtype(v) == 'table' then return 6, v end
  v = rawrawget(t, 'set'); if rawtype(v) == 'table' then return 7, v end
  local n = 0
  while rawrawget(t, n + 1) ~= nil do n = n + 1 end
  if n > ARRAY_AT_ONCE then return 9, n end
  return 8, rawunpack(t, 1, n)   -- unpack reads raw (lua_rawgeti)
end

-- The count hook calls `fn`; a non-nil result is the error that kills the script.  From then on a
-- line hook raises it again on every line of script code, so a pcall cannot swallow the kill.
-- Internal frames (this file) are never interrupted.
local function hook_count(fn, count)
  local kill
  local function killed_line()
    local info = dbg_getinfo(2, 'S')
    if info and info.source ~= INTERNAL then rawerror(kill, 0) end
  end
  dbg_sethook(function()
    local v = fn()
    if v ~= nil then
      kill = v
      dbg_sethook(killed_line, 'l')
      local info = dbg_getinfo(2, 'S')
      if info and info.source ~= INTERNAL then rawerror(v, 0) end
    end
  end, '', count)
end
local function hook_off() dbg_sethook() end

-- A library: protected, its Python callables reported as functions.
local function install(name, t)
  mark_functions(t)
  env[name] = protect(t)
  return env[name]
end

return {
  env = env, proxy_env = proxy_env, run = run, run_eval = run_eval, run_fcall = run_fcall, handler = err_handler,
  compile = compile, install = install, front = front,
  protect = protect, strict = strict, use_env = use_env, mark_functions = mark_functions,
  copy = copy, new_table = function() return {} end,
  mkmap = mkmap, mkset = mkset, mkobj = mkobj, addmap = addmap, addset = addset, addobj = addobj,
  reply_shape = reply_shape,
  ok = function(s) return {ok = s} end,
  err = function(s) return {err = s} end,
  -- the error of a command the script called: already in errorstats (Redis's ignore_error_stats_update)
  cmd_err = function(s) return {err = s, ignore_error_stats_update = true} end,
  double = function(d) return {double = d} end,
  big_number = function(s) return {big_number = s} end,
  verbatim = function(f, s) return {verbatim_string = {format = f, string = s}} end,
  hook_count = hook_count, hook_off = hook_off,
  where = function()
    local info = dbg_getinfo(3, 'Sl')
    if info and info.currentline > 0 then return info.short_src .. ':' .. info.currentline .. ': ' end
    return ''
  end,
}
"""
