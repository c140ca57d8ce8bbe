"""LDB, the Lua debugger: SCRIPT DEBUG YES|SYNC|NO and the EVAL that follows it (`redis-cli --ldb`).

What Redis 7.0's eval.c does, in its words and on its wire:

- SCRIPT DEBUG YES (or SYNC) marks the client; its next EVAL runs under the debugger.  EVALSHA is
  refused ("Please use EVAL instead of EVALSHA for debugging"), SCRIPT DEBUG itself while
  replies are pending ("must be called outside a pipeline": earlier replies of the same read,
  or inside EXEC).
- YES forks (Persistence.fork, not the single child slot: a BGSAVE may run beside it): the parent
  drops the client at once and goes on serving; the child owns the connection, runs the script
  on its copy of the dataset, and exits, so every change is rolled back.  SYNC runs the session in
  the server itself, blocking it, and keeps the changes; the connection closes after the reply.
- The session does its own I/O on the client's socket, blocking (a 5 s send timeout), from inside
  the Lua line hook: the event loop never runs while a script is stopped, exactly as Redis's hook
  reads the socket itself.  What the debugger says travels as arrays of status replies (newlines
  become spaces); the client's commands arrive as RESP arrays read by Redis's forgiving little
  parser (`parse_command`, C-string quirks and all).  The session ends with "<endsession>", then
  the EVAL's reply.
- A stop happens on the first line, after `step`, on a breakpoint, after redis.breakpoint(), or
  when the script ran past busy-reply-threshold (5 s if 0) without one ("timeout reached, infinite
  loop?"; looked at on every line event, since Lua loses count events that fall due inside a
  Lua-side hook).  While stepping, redis.call logs "<redis> ..." and "<reply> ..." (the reply in
  Redis's human form) and the errors scripts get "<error> ...".

The Lua side (LDB_LUA, loaded into the EVAL interpreter) is the line hook and what must read the
interrupted frame: its locals, the stack, code evaluated beside it.  Scripts here are compiled
without tail calls (untail.py), so `frames` leaves out the frames a tail call would have dropped
and names their callee as Lua does after one ("top level").  Values are shown by
`cat_value`, ldbCatStackValue's rendering.  Breakpoints are kept as Redis keeps them, an array
of C ints, because deleting one moves the rest with a byte count where an int count was meant:
`b -3` with breakpoints 3, 5, 7 leaves 5, 5, and raxdb shows the same.
"""

from __future__ import annotations

import builtins
import os
import socket
import struct
import time
from array import array
from typing import TYPE_CHECKING, Any

from raxdb.protocol.request import quote_arg
from raxdb.server.base.errors import CommandError
from raxdb.server.base.log import LOG
from raxdb.server.scripting.untail import tail_calls
from raxdb.server.table.args import maybe_int
from raxdb.server.table.registry import NO_REPLY

if TYPE_CHECKING:
    from collections.abc import Callable

    from raxdb.server.net.client import Client
    from raxdb.server.scripting.interfaces import Engine

YES, SYNC = 1, 2  # Client.lua_debug
BREAKPOINTS_MAX = 64
MAX_LEN_DEFAULT = 256
MAX_VALUES_DEPTH = 10  # LUA_MINSTACK / 2
CBUF_LIMIT = 1 << 20
SEND_TIMEOUT_S = 5

LDB_LUA = r"""
local py, env, compile = ...
local dbg_getinfo, dbg_getlocal, dbg_sethook = debug.getinfo, debug.getlocal, debug.sethook
local rawpcall, rawtostring, rawerror, rawrawget = pcall, tostring, error, rawget
local INTERNAL = '=[raxdb]'
local line_cb = py.line
local hook

-- The level of the frame the hook interrupted, as seen from the function calling this one.
local function script_level()
  local level = 3
  while true do
    local info = dbg_getinfo(level, 'f')
    if info == nil then return nil end
    if info.func == hook then return level end
    level = level + 1
  end
end

hook = function(event)
  local info = dbg_getinfo(2, 'Sl')
  if info == nil or info.source == INTERNAL then return end
  local v = line_cb(event == 'count', info.currentline, info.short_src:find('user_script', 1, true) ~= nil)
  if v ~= nil then rawerror(v, 0) end
end

local function print_all()
  local level = script_level()
  local n, names, values = 0, {}, {}
  if level == nil then return 0, names, values end
  local i = 1
  while true do
    local name, value = dbg_getlocal(level, i)
    if name == nil then break end
    n = n + 1
    names[n], values[n] = name, value
    i = i + 1
  end
  return n, names, values
end

-- The frames Redis's stack would have, from the interrupted one up, as {level (seen from the
-- caller), in_script, name or false, currentline, short_src}: scripts here run without tail calls
-- (untail.py), so a script frame suspended where its code made a tail call into script code is
-- left out, and the function it called gets no name, as after Lua's own tail call.  Frames of
-- this file are left out too (Redis's library functions are C functions: kept, without locals).
local tails = {}
local function frames()
  local level = script_level()
  local out, n, callee = {}, 0, nil
  while level do
    local info = dbg_getinfo(level, 'Snl')
    if info == nil then break end
    local in_script = info.source == '@user_script'
    if info.source == INTERNAL then
      callee = nil
    elseif in_script and callee and callee[2] and tails[info.linedefined .. ':' .. info.currentline] then
      callee[3] = false
    else
      n = n + 1
      callee = {level - 1, in_script, info.name or false, info.currentline, info.short_src}
      out[n] = callee
    end
    level = level + 1
  end
  return n, out
end

local function print_var(want)
  local n, stack = frames()
  for f = 1, n do
    local i = 1
    while true do
      local name, value = dbg_getlocal(stack[f][1], i)
      if name == nil then break end
      if name == want then return true, value end
      i = i + 1
    end
  end
  if want == 'ARGV' or want == 'KEYS' then return true, rawrawget(env, want) end
  return false, nil
end

local function trace()
  local n, stack = frames()
  local out, m = {}, 0
  for f = 1, n do
    if stack[f][5]:find('user_script', 1, true) then
      m = m + 1
      out[m] = {f == 1, stack[f][3], stack[f][4]}
    end
  end
  return m, out
end

local function eval_code(code)
  local f = compile('return ' .. code, '@ldb_eval')
  if not f then
    local err
    f, err = compile(code, '@ldb_eval')
    if not f then return false, err end
  end
  local ok, v = rawpcall(f)
  return ok, v
end

local function redis_cmd(...)
  rawpcall(env.redis.call, ...)
end

return {
  start = function(t) tails = t; dbg_sethook(hook, 'l', 100000) end,
  dump = function(body) local f = loadstring(body, '@user_script'); return f and string.dump(f) end,
  print_all = print_all, print_var = print_var, trace = trace, eval_code = eval_code,
  redis_cmd = redis_cmd,
  address = function(v) return rawtostring(v):match('0x%x+') or '0x0' end,
}
"""


class Abort(Exception):
    """Stop the script with this error (the debugger's luaPushError + luaError)."""


# ---- showing values -------------------------------------------------------------------------------
def cat_repr(s: bytes) -> bytes:
    """sdscatrepr."""
    return quote_arg(s).encode()


def cat_value(engine: Engine, v: Any, level: int = 0) -> bytes:
    """ldbCatStackValueRec: a Lua value as the debugger shows it."""
    if level == MAX_VALUES_DEPTH:
        return b"<max recursion level reached! Nested table?>"
    level += 1
    from lupa.lua51 import lua_type  # imported with the engine, by the script being debugged

    kind = lua_type(v)
    if kind is None:  # a plain value, or a Python callable (a C function to Lua)
        if v is None:
            return b"nil"
        if v is True or v is False:
            return b"true" if v else b"false"
        if isinstance(v, bytes):
            return cat_repr(v)
        if isinstance(v, (int, float)):
            return b"%g" % v
        if callable(v):
            return b'"function@0x%x"' % id(v)
        return b'"<unknown-lua-type>"'
    if kind == "table":
        array_form: list[bytes] = []
        full_form: list[bytes] = []
        is_array, expected = True, 1
        for k, val in v.items():
            if is_array and (k.__class__ not in (int, float) or k != expected):
                is_array = False
            shown = cat_value(engine, val, level)
            array_form.append(shown)
            full_form.append(b"[" + cat_value(engine, k, level) + b"]=" + shown)
            expected += 1
        return b"{" + b"; ".join(array_form if is_array else full_form) + b"}"
    if kind in ("function", "userdata", "thread"):
        return b'"%s@%s"' % (kind.encode(), engine.ldb_lua.address(v))
    return b'"<unknown-lua-type>"'


def reply_to_human(reply: bytes, pos: int = 0) -> tuple[bytes, int]:
    """ldbRedisProtocolToHuman: a RESP reply as the debugger logs it, and where it ended."""
    kind = reply[pos : pos + 1]
    end = reply.find(b"\r", pos + 1)
    if end < 0:
        return b"", len(reply)
    line = reply[pos + 1 : end]
    nxt = end + 2
    if kind == b":":
        return line, nxt
    if kind == b"$":
        n = maybe_int(line)
        if n is None or n < 0:
            return b"NULL", nxt
        return cat_repr(reply[nxt : nxt + n]), nxt + n + 2
    if kind in (b"+", b"-"):
        return cat_repr(reply[pos:end]), nxt
    if kind in (b"*", b"~", b"%"):
        n = maybe_int(line) or 0
        if kind == b"*" and n == -1:
            return b"NULL", nxt
        parts = []
        for _ in range(max(n, 0)):
            if kind == b"%":
                k, nxt = reply_to_human(reply, nxt)
                v, nxt = reply_to_human(reply, nxt)
                parts.append(k + b" => " + v)
            else:
                v, nxt = reply_to_human(reply, nxt)
                parts.append(v)
        joined = b",".join(parts)
        return (b"[" + joined + b"]" if kind == b"*" else b"~(" + joined + b")" if kind == b"~"
                else b"{" + joined + b"}"), nxt
    if kind == b"_":
        return b"(null)", nxt
    if kind == b"#":
        return (b"#true" if line[:1] == b"t" else b"#false"), nxt
    if kind == b",":
        return b"(double) " + line, nxt
    return b"", pos  # a type Redis's converter does not know: it shows nothing


# ---- the client's commands --------------------------------------------------------------------------
def _atoi(s: bytes) -> int:
    """C's atoi: leading blanks, a sign, the digits up to the first other byte; 0 without any."""
    s = s.lstrip(b" \t\n\v\f\r")
    sign = 1
    if s[:1] in (b"-", b"+"):
        sign = -1 if s[:1] == b"-" else 1
        s = s[1:]
    n = 0
    for ch in s:
        if not 48 <= ch <= 57:
            break
        n = n * 10 + ch - 48
    n *= sign
    return (n + (1 << 31)) % (1 << 32) - (1 << 31)  # an int's wrap-around


def _c_str(buf: bytes, start: int) -> int:
    """Where the C string at `start` ends (its NUL, or the end of the buffer)."""
    nul = buf.find(b"\0", start)
    return len(buf) if nul < 0 else nul


def _header(buf: bytes, at: int) -> tuple[int, int]:
    """The count of the '*' or '$' line at `at` and where the line ends: (-1, 0) when the line
    is not whole yet, (0, 0) for a count outside 1..1024 (a protocol error)."""
    crlf = buf.find(b"\r\n", at, _c_str(buf, at))
    if crlf < 0:
        return -1, 0
    n = _atoi(buf[at + 1 : crlf])
    if n <= 0 or n > 1024:
        return 0, 0
    return n, crlf + 2


def parse_command(buf: bytes) -> tuple[list[bytes] | None, bool]:
    """ldbReplParseCommand: (argv, False) for a whole command, (None, False) to read more, (None,
    True) for a protocol error.  It works on C strings (the search for '*' and each CRLF stops at a
    NUL byte) and accepts counts and lengths from 1 to 1024 as atoi reads them."""
    if not buf:
        return None, False
    star = buf.find(b"*", 0, _c_str(buf, 0))
    if star < 0:
        return None, True
    argc, p = _header(buf, star)
    if argc <= 0:
        return None, argc == 0
    argv: list[bytes] = []
    while len(argv) < argc:
        if p >= len(buf) or buf[p] == 0:
            return None, False
        if buf[p] != 36:  # '$'
            return None, True
        n, p = _header(buf, p)
        if n <= 0:
            return None, n == 0
        if p + n + 2 > len(buf):
            return None, False
        argv.append(buf[p : p + n])
        p += n
        if buf[p : p + 2] != b"\r\n":
            return None, True
        p += 2
    return argv, False


_HELP = [
    b"Redis Lua debugger help:",
    b"[h]elp               Show this help.",
    b"[s]tep               Run current line and stop again.",
    b"[n]ext               Alias for step.",
    b"[c]ontinue           Run till next breakpoint.",
    b"[l]ist               List source code around current line.",
    b"[l]ist [line]        List source code around [line].",
    b"                     line = 0 means: current position.",
    b"[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    b"                     to show before/after [line].",
    b"[w]hole              List all source code. Alias for 'list 1 1000000'.",
    b"[p]rint              Show all the local variables.",
    b"[p]rint <var>        Show the value of the specified variable.",
    b"                     Can also show global vars KEYS and ARGV.",
    b"[b]reak              Show all breakpoints.",
    b"[b]reak <line>       Add a breakpoint to the specified line.",
    b"[b]reak -<line>      Remove breakpoint from the specified line.",
    b"[b]reak 0            Remove all breakpoints.",
    b"[t]race              Show a backtrace.",
    b"[e]val <code>        Execute some Lua code (in a different callframe).",
    b"[r]edis <cmd>        Execute a Redis command.",
    b"[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    b"                     Specifying zero as <len> means unlimited.",
    b"[a]bort              Stop the execution of the script. In sync",
    b"                     mode dataset changes will be retained.",
    b"",
    b"Debugger functions you can call from Lua scripts:",
    b"redis.debug()        Produce logs in the debugger console.",
    b"redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    b"                     next line of code.",
]


class Session:
    """One debugging session: Redis's `ldb` state while `active`."""

    def __init__(self, engine: Engine, sock: socket.socket, forked: bool, source: bytes) -> None:
        self.engine = engine
        self.sock = sock
        self.forked = forked
        self.logs: list[bytes] = []
        self.step = True
        self.luabp = False
        self.bp = array("i", bytes(4 * BREAKPOINTS_MAX))
        self.bpcount = 0
        source = source.rstrip(b"\r\n")
        self.src = source.split(b"\n") if source else []
        self.currentline = 0
        self.cbuf = b""
        self.maxlen = MAX_LEN_DEFAULT
        self.maxlen_hint_sent = False
        self.tails = self._tail_calls(source)

    def _tail_calls(self, source: bytes) -> Any:
        """The script's tail calls, for the Lua side's `frames` (keyed "linedefined:line")."""
        if source.startswith(b"#!"):  # compiled from its newline on (scripts.py), lines unchanged
            nl = source.find(b"\n")
            source = source[nl:] if nl >= 0 else b""
        chunk = self.engine.ldb_lua.dump(source)
        found = tail_calls(chunk) if chunk else set()
        return self.engine.lua.table_from({b"%d:%d" % pos: True for pos in found})

    # -- the log ------------------------------------------------------------------------------------
    def log(self, entry: bytes) -> None:
        self.logs.append(entry)

    def log_max_len(self, entry: bytes) -> None:
        """ldbLogWithMaxLen: trimmed to maxlen, with a hint the first time."""
        trimmed = bool(self.maxlen) and len(entry) > self.maxlen
        if trimmed:
            entry = entry[: self.maxlen] + b" ..."
        self.log(entry)
        if trimmed and not self.maxlen_hint_sent:
            self.maxlen_hint_sent = True
            self.log(b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")

    def send_logs(self) -> None:
        out = [b"*%d\r\n" % len(self.logs)]
        for entry in self.logs:
            out += (b"+", entry.replace(b"\r", b" ").replace(b"\n", b" "), b"\r\n")
        self.logs = []
        self.send(b"".join(out))

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError:
            pass  # the next read sees the connection gone and ends the session's stops

    def logging(self) -> bool:
        """ldbIsEnabled: redis.call and the errors scripts get are logged while stepping."""
        return self.step

    def log_command(self, argv: list[bytes]) -> None:
        shown = b"<redis>"
        for j, a in enumerate(argv):
            if j == 10:
                shown += b" ... (%d more)" % (len(argv) - j - 1)
                break
            shown += b" " + a
        self.log(shown)

    def log_reply(self, reply: bytes) -> None:
        self.log_max_len(b"<reply> " + reply_to_human(reply)[0])

    # -- the source and breakpoints -------------------------------------------------------------------
    def source_line(self, line: int) -> bytes:
        if 0 < line <= len(self.src):
            return self.src[line - 1]
        return b"<out of range source code line>"

    def is_breakpoint(self, line: int) -> bool:
        return line in self.bp[: self.bpcount]

    def log_source_line(self, line: int) -> None:
        current, bp = self.currentline == line, self.is_breakpoint(line)
        prefix = b"->#" if current and bp else b"-> " if current else b"  #" if bp else b"   "
        self.log(b"%s%-3d %s" % (prefix, line, self.source_line(line)))

    def list(self, around: int, context: int) -> None:
        for j in range(1, len(self.src) + 1):
            if around != 0 and abs(around - j) > context:
                continue
            self.log_source_line(j)

    def add_breakpoint(self, line: int) -> bool:
        if line <= 0 or line > len(self.src):
            return False
        if not self.is_breakpoint(line) and self.bpcount != BREAKPOINTS_MAX:
            self.bp[self.bpcount] = line
            self.bpcount += 1
            return True
        return False

    def del_breakpoint(self, line: int) -> bool:
        for j in range(self.bpcount):
            if self.bp[j] == line:
                self.bpcount -= 1
                # memmove(bp+j, bp+j+1, bpcount-j): a count of bytes, not of ints
                raw = memoryview(self.bp).cast("B")
                n = self.bpcount - j
                raw[4 * j : 4 * j + n] = bytes(raw[4 * (j + 1) : 4 * (j + 1) + n])
                return True
        return False

    def breakpoints(self, argv: builtins.list[bytes]) -> None:  # `list` here is the method
        if len(argv) == 1:
            if self.bpcount == 0:
                self.log(b"No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(b"%d breakpoints set:" % self.bpcount)
            for j in range(self.bpcount):
                self.log_source_line(self.bp[j])
            return
        for arg in argv[1:]:
            line = maybe_int(arg)
            if line is None:
                self.log(b"Invalid argument:'%s'" % arg.split(b"\0", 1)[0])
            elif line == 0:
                self.bpcount = 0
                self.log(b"All breakpoints removed.")
            elif line > 0:
                if self.bpcount == BREAKPOINTS_MAX:
                    self.log(b"Too many breakpoints set.")
                elif self.add_breakpoint(line):
                    self.list(line, 1)
                else:
                    self.log(b"Wrong line number.")
            elif self.del_breakpoint(-line):
                self.log(b"Breakpoint removed.")
            else:
                self.log(b"No breakpoint in the specified line.")

    # -- the hook --------------------------------------------------------------------------------------
    def line(self, is_count: bool, line: int, in_script: bool) -> Any:  # noqa: ARG002 - Redis's event kind
        """luaLdbLineHook: stop here if stepping, at a breakpoint, or past the time limit; the
        error to raise in the script, or None."""
        self.currentline = line
        bp = self.is_breakpoint(line) or self.luabp
        if not in_script:
            return None
        engine = self.engine
        run = engine.running
        timeout = False
        # Redis looks at the clock on its count events (every 100,000 instructions); here those
        # are lost whenever they fall due inside this hook's own Lua code (Lua 5.1 resets the
        # count and skips the call while a hook runs), so every event looks
        if not self.step and not bp:
            limit = _busy_threshold_ms(engine) or 5000
            if run is None or (time.monotonic() - run.start) * 1000 < limit:
                return None
            timeout = True
            self.step = True
        if not (self.step or bp):
            return None
        reason = (b"redis.breakpoint() called" if self.luabp else b"break point") if bp else \
            b"timeout reached, infinite loop?" if timeout else b"step over"
        self.step = self.luabp = False
        self.log(b"* Stopped at %d, stop reason = %s" % (line, reason))
        self.log_source_line(line)
        self.send_logs()
        try:
            alive = self.repl()
        except Abort as e:
            return engine.h.err(b"ERR " + str(e).encode())
        if not alive and timeout:
            return engine.h.err(b"ERR timeout during Lua debugging with client closing connection")
        if run is not None:
            run.start = time.monotonic()
        engine.server.update_clock()
        return None

    def repl(self) -> bool:
        """ldbRepl: serve the client's commands until one resumes the script; False when the
        client is gone (the script then runs on without stopping)."""
        while True:
            argv, bad = parse_command(self.cbuf)
            while argv is None:
                if bad:
                    raise Abort("protocol error")
                try:
                    data = self.sock.recv(1024)
                except OSError:
                    data = b""
                if not data:
                    self.step = False
                    self.bpcount = 0
                    return False
                self.cbuf += data
                if len(self.cbuf) > CBUF_LIMIT:
                    self.cbuf = b""
                    raise Abort("max client buffer reached")
                argv, bad = parse_command(self.cbuf)
            self.cbuf = b""
            if self.command(argv):
                return True

    def command(self, argv: builtins.list[bytes]) -> bool:  # `list` here is the method
        """One debugger command; True when it resumes the script."""
        name = argv[0].split(b"\0", 1)[0].lower()  # strcasecmp reads a C string
        lua = self.engine.ldb_lua
        if name in (b"h", b"help"):
            for text in _HELP:
                self.log(text)
        elif name in (b"s", b"step", b"n", b"next"):
            self.step = True
            return True
        elif name in (b"c", b"continue"):
            return True
        elif name in (b"t", b"trace"):
            n, frames = lua.trace()
            for i in range(1, n + 1):
                first, fname, line = frames[i][1], frames[i][2], frames[i][3]
                self.log(b"%s %s:" % (b"In" if first else b"From", fname if fname else b"top level"))
                self.log_source_line(line)
        elif name in (b"m", b"maxlen"):
            if len(argv) == 2:
                n = _atoi(argv[1])
                self.maxlen_hint_sent = True
                self.maxlen = 60 if n != 0 and n <= 60 else n
            self.log(b"<value> replies are truncated at %d bytes." % self.maxlen if self.maxlen
                     else b"<value> replies are unlimited.")
        elif name in (b"b", b"break"):
            self.breakpoints(argv)
        elif name in (b"e", b"eval"):
            ok, value = lua.eval_code(b" ".join(argv[1:]))
            if ok:
                self.log_max_len(b"<retval> " + cat_value(self.engine, value))
            else:
                self.log(b"<error> " + _lua_text(self.engine, value))
        elif name in (b"a", b"abort"):
            raise Abort("script aborted for user request")
        elif len(argv) > 1 and name in (b"r", b"redis"):
            self.step = True  # redis.call logs the command and its reply
            try:
                lua.redis_cmd(*argv[1:])
            finally:
                self.step = False
        elif name in (b"p", b"print"):
            if len(argv) == 2:
                found, value = lua.print_var(argv[1].split(b"\0", 1)[0])
                if found:
                    self.log_max_len(b"<value> " + cat_value(self.engine, value))
                else:
                    self.log(b"No such variable.")
            else:
                n, names, values = lua.print_all()
                shown = 0
                for i in range(1, n + 1):
                    if b"(*temporary)" not in names[i]:
                        self.log_max_len(b"<value> %s = %s" % (names[i], cat_value(self.engine, values[i])))
                        shown += 1
                if not shown:
                    self.log(b"No local variables in the current context.")
        elif name in (b"l", b"list"):
            around, ctx = self.currentline, 5
            if len(argv) > 1:
                n = _atoi(argv[1])
                if n > 0:
                    around = n
            if len(argv) > 2:
                ctx = _atoi(argv[2])
            self.list(around, ctx)
        elif name in (b"w", b"whole"):
            self.list(1, 1000000)
        else:
            self.log(b"<error> Unknown Redis Lua debugger command or wrong number of arguments.")
        self.send_logs()
        return False


def _lua_text(engine: Engine, value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (int, float)):
        return b"%.14g" % value
    from lupa.lua51 import lua_type  # as cat_value

    if lua_type(value) == "table":
        err = value[b"err"]
        if isinstance(err, bytes):
            return err
    return b"(null)"


def _busy_threshold_ms(engine: Engine) -> int:
    try:
        return int(engine.server.config.values.get("busy-reply-threshold", "5000"))
    except ValueError:
        return 5000


# ---- sessions ---------------------------------------------------------------------------------------
def _client_socket(c: Client) -> socket.socket:
    """The client's connection as a blocking socket of our own (a dup of its descriptor), with
    Redis's 5 s send timeout."""
    fd = os.dup(c.transport.get_extra_info("socket").fileno())  # type: ignore[union-attr]
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", SEND_TIMEOUT_S, 0))
    return sock


def _run_session(c: Client, engine: Engine, forked: bool, source: bytes, run: Callable[[], bytes]) -> bytes:
    """ldbStartSession, the EVAL, ldbEndSession: the EVAL's encoded reply (errors included)."""
    sock = _client_socket(c)
    session = Session(engine, sock, forked, source)
    engine.ldb = session
    try:
        try:
            reply = run()
        except CommandError as e:
            reply = c.error_reply(e.msg, None, e.counted)
        session.log(b"<endsession>")
        session.send_logs()
    finally:
        engine.ldb = None
        if not forked:  # the loop's descriptor again: non-blocking, no send timeout
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 0))
            sock.setblocking(False)
        if forked:
            session.send(reply)
        sock.close()
    return reply


def eval_debugging(c: Client, engine: Engine, source: bytes, run: Callable[[], bytes]) -> bytes:
    """evalGenericCommandWithDebugging: EVAL of `source` under the debugger, forked or in-process."""
    srv = c.server
    if c.lua_debug == SYNC:
        LOG.warning("Redis synchronous debugging eval session started")
        reply = _run_session(c, engine, False, source, run)
        LOG.warning("Redis synchronous debugging eval session ended")
        c.close_after_reply = True
        return reply

    def child() -> bool:
        LOG.warning("Redis forked for debugging eval")
        _run_session(c, engine, True, source, run)
        LOG.warning("Lua debugging session child exiting")
        return True

    try:
        pid = srv.persistence.fork(child, None)
    except OSError as e:
        c.lua_debug = 0
        raise CommandError(f"ERR Fork() failed: can't run EVAL in debugging mode: {e.strerror}") from None
    srv.ldb_children.append(pid)
    c.abort()  # the child has the connection now
    return NO_REPLY


def reap_children(srv: Any) -> None:
    """The forked sessions that ended (checkChildrenDone's part for them)."""
    for pid in list(srv.ldb_children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            srv.ldb_children.remove(pid)


def kill_children(srv: Any) -> None:
    """ldbKillForkedSessions, at shutdown."""
    for pid in srv.ldb_children:
        LOG.warning(f"Killing debugging session {pid}")
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    srv.ldb_children = []
