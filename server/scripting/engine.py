"""One Lua interpreter (lupa, Lua 5.1 as in Redis) with Redis's sandbox and `redis` library.

The server has two, like Redis 7.0: one for EVAL scripts, one for FUNCTION libraries
(server/scripting/functions.py).  A script runs on the event loop thread, start to finish, so
nothing interleaves with it: that is the atomicity guarantee.  Commands issued by `redis.call` run
through `Client.call`'s body (`call_command`) on a private client (Redis's "lua client"): same
handlers, same stats, same keyspace effects and wake-ups as a client's command, with the caller's
database at the start and `in_exec` set so blocking commands answer at once instead of blocking.

A count hook fires every `HOOK_INSTRUCTIONS` Lua instructions; past busy-reply-threshold it hands
control to server/scripting/busy.py, which answers other clients (BUSY, SCRIPT KILL, SHUTDOWN
NOSAVE) while the script keeps the loop, and kills the script when asked.

Errors raised from Python into Lua travel as `LuaRaise` exceptions holding the Lua value to raise;
see lua_env.py for how scripts observe them.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

import lupa.lua51 as lupa51

from raxdb.protocol import reply as R
from raxdb.server.base.errors import READONLY, CommandError
from raxdb.server.base.log import LOG
from raxdb.server.base.version import version_num
from raxdb.server.conn import lifecycle
from raxdb.server.events import propagate, tracking
from raxdb.server.memory.evict import OOM
from raxdb.server.net.client import Client, call_command
from raxdb.server.scripting import busy, convert, ldb, libs, luanum
from raxdb.server.scripting.ldb import cat_value
from raxdb.server.scripting.lua_env import BOOTSTRAP
from raxdb.server.scripting.luanum import LuaRaise
from raxdb.server.scripting.runner import Runner
from raxdb.server.scripting.untail import untail
from raxdb.server.security import acl
from raxdb.server.table.registry import BLOCKED
from raxdb.server.table.scriptflags import sha1hex

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, engine.pxd cimports it: client.pxd's inline clock_gettime
    from raxdb.server.net.client import perf_clock_ns  # CLOCK_MONOTONIC in ns, time.monotonic's clock

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

HOOK_INSTRUCTIONS = 100000
_LLONG_MIN, _LLONG_LIMIT = -(1 << 63), 1 << 63
_SMALL_INT_REPLIES = R.small_ints()  # reply.integer's cached replies of -1..10000, by value + 1


_LOG_LEVELS = {0: "debug", 1: "verbose", 2: "notice", 3: "warning"}
REPL_ALL = 3  # redis.set_repl()'s default, PROPAGATE_AOF | PROPAGATE_REPL (server/events/propagate.py's TO_BOTH)

# cjson and cmsgpack walk nested values recursively, up to 1000 levels (Redis's limits).
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


def error_text(msg: bytes) -> bytes:
    """Redis's luaPushErrorBuff: '-CODE msg' keeps its code, anything else gets ERR."""
    if msg[:1] == b"-":
        sp = msg.find(b" ")
        if sp < 0:
            code, body = b"ERR", msg[1:]
        else:
            code, body = msg[1:sp], msg[sp + 1:]
    else:
        code, body = b"ERR", msg
    return code + b" " + body.strip(b"\r\n")


class Rand48:
    """redisLrand48: the 48-bit linear congruential generator behind math.random in scripts.

    One per process, shared by EVAL and FUNCTION, starting from drand48's default state and never
    reseeded behind the scripts' back — so sequences continue across calls exactly as in Redis."""

    __slots__ = ("x",)

    def __init__(self) -> None:
        self.x = 0x1234ABCD330E

    def seed(self, n: int) -> None:
        self.x = ((n & 0xFFFFFFFF) << 16) | 0x330E

    def next(self) -> int:
        self.x = (0x5DEECE66D * self.x + 0xB) & 0xFFFFFFFFFFFF
        return self.x >> 17


RAND = Rand48()


class Crossing:
    """The call into Lua that `Engine.run` makes when cbridge is built: cbridge's Bridge subclasses
    this, and engine.pxd declares it an extension type, so that the compiled `Engine.run` calls the
    bridge through its method table rather than as a Python method.  The interpreted build has no
    bridge (the engine's `bridge` is None) and never makes one of these."""

    __slots__ = ()

    def run(self, fn: Any, numkeys: int, argv: list[bytes], is_function: bool) -> tuple[bool, Any] | bytes | None:
        """(ok, the result or the error) of running `fn`, or the result's reply already encoded as
        `Engine.run` would encode it (bytes), or (None, its text) for an error reply not yet in
        errorstats, or None when it cannot: lupa's path runs it."""
        return None


class Running:
    """What is executing now: for SCRIPT KILL, FUNCTION STATS, the busy handling.  An engine keeps
    one and `begin`s it for each run (an object made per EVALSHA cost more than its fields)."""

    __slots__ = ("engine", "caller", "name", "argv", "start", "ro", "allow_oom", "wrote", "killed", "busy",
                 "is_function", "repl", "guarded", "cross_slot", "cluster_slot")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def begin(self, caller: Client, name: bytes, argv: list[bytes], ro: bool, is_function: bool,
              allow_oom: bool, cross_slot: bool) -> None:
        self.caller = caller
        self.name = name
        self.argv = argv
        self.start = perf_clock_ns() / 1e9  # time.monotonic()'s value, without its call
        self.ro = ro
        self.allow_oom = allow_oom  # declared allow-oom: writes even when used memory > maxmemory
        self.wrote = False
        self.killed = False
        self.busy = False
        self.is_function = is_function
        self.repl = REPL_ALL  # redis.set_repl(): where the commands it calls propagate
        # Can a command the script calls be refused other than for being a first write
        # (engine._refusal)?  Settled at the start: what it depends on changes only through
        # commands a script may not call (ACL, CONFIG, REPLICAOF).
        srv = self.engine.server
        self.guarded = not caller.user.free or ro or srv.replica_gate or bool(srv.maxmemory)
        # cluster mode: may its commands touch keys of several slots (allow-cross-slot-keys, or a
        # script without a shebang), and the slot they are held to (server/cluster/routing.py)
        self.cross_slot = cross_slot
        self.cluster_slot: int | None = None


class Engine(Runner):
    def __init__(self, server: Server, chunk_name: bytes, functions: bool = False) -> None:
        self.server = server
        self.chunk_name = chunk_name  # b"@user_script" or b"@user_function"
        self.functions = functions
        self.lua = lua = lupa51.LuaRuntime(encoding=None, register_eval=False, register_builtins=False,
                                           unpack_returned_tuples=True)
        self._where: Any = None
        py = lua.table_from({
            b"unwrap": self._unwrap, b"is_pyfunc": _is_pyfunc, b"untail": untail,
            b"random": self._random, b"randomseed": self._randomseed,
        })
        # The Lua helpers, each read out of their table once: reading a member of a Lua table
        # through lupa costs a lookup, a registry reference and a wrapper object (~0.7 us), which
        # the hot helpers (run_eval, reply_shape, ok, err) would otherwise pay on every call.
        self.h = SimpleNamespace(**{k.decode(): v for k, v in lua.execute(BOOTSTRAP, py, name="=[raxdb]").items()})
        self._where = self.h.where
        self.env = self.h.env
        self.parser = convert.ReplyParser(lua, self.h)
        self._commands = server.table.dispatch  # by name; changed in place by rename-command
        self._lookup = server.table.lookup
        self._cmd_err = self.h.cmd_err
        self._run_eval = self.h.run_eval
        self._run_fcall = self.h.run_fcall
        self._shape = self.h.reply_shape
        self.client = _script_client(server)
        self.running: Running | None = None
        self._spare: Running | None = Running(self)  # the Running the next run begins
        self.ldb: Any = None  # the debugging session (server/scripting/ldb.py) while one runs
        self.ldb_lua: Any = None
        if not functions:
            self.ldb_lua = lua.execute(ldb.LDB_LUA, lua.table_from({b"line": self._ldb_line}), self.env,
                                       self.h.compile, name="=[raxdb]")
        self.redis = self._redis_table()
        # redis.call and redis.pcall as C functions of this Lua state when cbridge is built and
        # lupa checks out (server/scripting/cbridge.pyx); else lupa's crossing into `_command`
        bridge = _bridge(self)
        self.bridge = bridge
        if bridge is not None:
            bridge.install_calls(self.redis)
        libs.install(self)
        if functions:
            # Functions run without the EVAL-only globals and redis members.
            self.env[b"__redis__err__handler"] = None
            for name in (b"breakpoint", b"debug", b"replicate_commands"):
                self.redis[name] = None
        self.install_redis(self.redis)
        self.install_hook()
        # Every call lupa makes into Lua looks up the global `debug.traceback` for lua_pcall's
        # message handler (two table reads per EVALSHA); the Lua code run here captured what it
        # needs of `debug`, scripts never see these globals (they run in `env`), and the calls into
        # Lua (run_eval, run_fcall, the reply helpers) catch their errors themselves.
        lua.globals()[b"debug"] = None

    # ---- the redis library -----------------------------------------------------------------
    def _redis_table(self) -> Any:
        lua = self.lua
        t = lua.table()
        api = {
            # partials of _command: one Python frame per redis.call, not two
            b"call": self.h.front(functools.partial(self._command, True), self._call_packed),
            b"pcall": self.h.front(functools.partial(self._command, False), self._pcall_packed),
            b"sha1hex": self._sha1hex,
            b"error_reply": self._error_reply, b"status_reply": self._status_reply, b"log": self._log,
            b"setresp": self._setresp, b"set_repl": self._set_repl,
            b"replicate_commands": _true, b"breakpoint": self._breakpoint, b"debug": self._debug,
            b"acl_check_cmd": self._acl_check_cmd,
        }
        for k, v in api.items():
            t[k] = v
        consts = {b"LOG_DEBUG": 0, b"LOG_VERBOSE": 1, b"LOG_NOTICE": 2, b"LOG_WARNING": 3,
                  b"REPL_NONE": 0, b"REPL_AOF": 1, b"REPL_SLAVE": 2, b"REPL_REPLICA": 2, b"REPL_ALL": 3,
                  b"REDIS_VERSION": self.server.redis_version.encode(),
                  b"REDIS_VERSION_NUM": version_num(self.server.redis_version)}
        for k, v in consts.items():
            t[k] = v
        return t

    def install_redis(self, table: Any) -> None:
        self.h.install(b"redis", table)

    def raise_error(self, msg: bytes) -> NoReturn:
        if self.ldb is not None and self.ldb.logging():
            self.ldb.log(b"<error> " + msg)
        raise LuaRaise(self.h.err(error_text(msg)))

    # ---- the debugger's side of the library (server/scripting/ldb.py) ---------------------------
    def _ldb_line(self, is_count: bool, line: int, in_script: bool) -> Any:
        return self.ldb.line(is_count, line, in_script) if self.ldb is not None else None

    def _breakpoint(self, *args: Any) -> bool:
        """redis.breakpoint(): stop at the next line, when a session runs."""
        if self.ldb is None:
            return False
        self.ldb.luabp = True
        return True

    def _debug(self, *args: Any) -> None:
        """redis.debug(...): its arguments in the debugger's console, when a session runs."""
        if self.ldb is not None:
            self.ldb.log(b"<debug> line %d: " % self.ldb.currentline
                         + b", ".join(cat_value(self, a) for a in args))

    def _command(self, raise_errors: bool, *args: Any) -> Any:
        """redis.call / redis.pcall (Redis's scriptCall): the command's reply as a Lua value.

        The checks a called command passes are Redis's, in Redis's order (`_refusal`); a run whose
        caller and server make none of them possible (`Running.guarded` false) skips them for
        commands that cannot trip them: any command once the script has written, a non-write one
        before."""
        argv = []
        for a in args:
            cls = type(a)
            if cls is bytes:
                argv.append(a)
            elif cls is int:  # lupa's integral numbers: below 2^53, "%.17g" is their decimal digits
                argv.append(b"%d" % a if -9007199254740992 <= a <= 9007199254740992 else b"%.17g" % a)
            elif cls is float:
                argv.append(convert.format_double(a))  # %.17g as C prints it: a NaN keeps its sign
            else:
                return self._fail(raise_errors, b"Lua redis lib command arguments must be strings or integers")
        return self._call_argv(raise_errors, argv)

    def _call_argv(self, raise_errors: bool, argv: list[bytes]) -> Any:
        """_command's body once its arguments are bytes: the command's reply as a Lua value."""
        r = self._reply_of(raise_errors, argv)
        if type(r) is not bytes:
            return r  # a refusal: the error _fail made
        return self._to_lua(raise_errors, r)

    def _reply_of(self, raise_errors: bool, argv: list[bytes]) -> Any:
        """The command's reply (RESP bytes, a blocked command's as the null), or the error value of
        a refusal (`_fail`'s).  A method of its own so that, compiled, it holds the run and the
        command in typed locals (engine.pxd), and so that cbridge's redis.call can take the bytes."""
        if not argv:
            return self._fail(raise_errors, b"Please specify at least one argument for this redis lib call")
        return self._reply_cmd(raise_errors, argv, self._commands.get(argv[0]))  # a C dict get, compiled

    def _reply_cmd(self, raise_errors: bool, argv: list[bytes], cmd: Any) -> Any:
        """_reply_of's body for a non-empty argv, given what the dispatch table maps its name to
        (`cmd`, None for a name it lacks): cbridge's redis.call passes the command it remembers
        for the name's object (the table's entries do not change once scripts run)."""
        session = self.ldb
        if session is not None and session.logging():
            session.log_command(argv)
        if cmd is None or cmd.subcommands or cmd.proc is None:
            cmd = self._lookup(argv)
            if cmd is None or cmd.proc is None and not cmd.subcommands:
                return self._fail(raise_errors, b"Unknown Redis command called from script", True)
        # Refusals of a command that exists count as its rejected calls (scriptCall's error path).
        if cmd.proc is None or not cmd.arity_ok(len(argv)):
            cmd.rejected_calls += 1
            return self._fail(raise_errors, b"Wrong number of args calling Redis command from script", True)
        srv = self.server
        if cmd.noscript and not srv.script_deny_disabled:
            cmd.rejected_calls += 1
            return self._fail(raise_errors, b"This Redis command is not allowed from script", True)
        run = self.running
        is_write = cmd.is_write
        if run is None or run.guarded or is_write and not run.wrote:
            # unguarded, a first write can be refused only behind these gates (_refusal's
            # persistence and min-replicas checks): closed, it needs no _refusal
            if run is None or run.guarded or srv.aof.state or srv.rdb_gate or srv.repl.write_gate:
                refused = _refusal(srv, run, cmd, argv)
                if refused is not None:
                    cmd.rejected_calls += 1
                    return self._fail(raise_errors, refused, True)
            if is_write and run is not None:
                run.wrote = True
        if srv.cluster_script_check is not None and run is not None:
            denied = srv.cluster_script_check(run, cmd, argv)  # scriptVerifyClusterState
            if denied is not None:
                cmd.rejected_calls += 1
                return self._fail(raise_errors, denied, True)
        client = self.client
        if srv.monitors:
            lifecycle.feed_monitors(client, argv, cmd)
        if run is not None and run.repl != REPL_ALL:
            # set_repl: the command's own argv goes only where the flags say (scriptCall's call
            # flags); what it propagates itself (XCLAIMs, expired keys' DELs) goes to both
            client.prop_targets = run.repl
            try:
                r = call_command(client, cmd, argv, None, True)
            finally:
                client.prop_targets = REPL_ALL
        else:
            r = call_command(client, cmd, argv, None, True)  # slow-logged too, before their script
        if cmd.is_readonly and run is not None and run.caller.tracking is not None:
            tracking.remember_script_read(run.caller, run.argv)
        if r is BLOCKED:
            r = client.enc.null
        else:  # the script sees a value, not a reply in pieces (protocol/reply.py's value)
            r = R.flat(r)
        if session is not None and session.logging():
            session.log_reply(r)
        return r

    def _to_lua(self, raise_errors: bool, r: bytes) -> Any:
        """A command's reply as the Lua value redis.call returns (an error reply raised, for
        redis.call): the replies scripts get most converted here, the rest by the parser."""
        t = r[0]
        if t == 58:  # :
            return int(r[1:-2])
        if t == 36 and r[1] != 45:  # $, not the null bulk
            return r[r.index(b"\r\n") + 2:-2]
        if t == 45:  # -
            err = self._cmd_err(error_text(r[:-2]))  # counted when the command failed
            if raise_errors:
                raise LuaRaise(err)
            return err
        if t == 42 and self.client.resp == 2:  # *
            return self.parser.array2(r)
        return self.parser.parse(r)[0]

    def _fail(self, raise_errors: bool, msg: bytes, refused: bool = False) -> Any:
        """An error for the script.  `refused`: a command scriptCall refused (unknown, arity,
        noscript, read-only script, OOM), which counts in errorstats now, as its afterErrorReply
        does, and not again when the script passes the error on."""
        if self.ldb is not None and self.ldb.logging():
            self.ldb.log(b"<error> " + msg)
        if refused:
            self.server.count_error(msg[1:] if msg[:1] == b"-" else b"ERR " + msg)
            t = self.h.cmd_err(error_text(msg))
        else:
            t = self.h.err(error_text(msg))
        if raise_errors:
            raise LuaRaise(t)
        return t

    # more arguments than lupa passes to Python at once: their count and a table of them
    def _call_packed(self, n: int, args: Any) -> Any:
        return self._command(True, *[args[i] for i in range(1, n + 1)])

    def _pcall_packed(self, n: int, args: Any) -> Any:
        return self._command(False, *[args[i] for i in range(1, n + 1)])

    def _sha1hex(self, *args: Any) -> Any:
        if len(args) != 1 or not is_lua_string(args[0]):
            self.raise_error(b"wrong number of arguments")
        return sha1hex(lua_tostring(args[0]))

    def _error_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self.h.err(b"ERR wrong number or type of arguments")
        msg = args[0]
        return self.h.err(error_text(msg if msg[:1] == b"-" else b"-" + msg))

    def _status_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self.h.err(b"ERR wrong number or type of arguments")
        return self.h.ok(args[0])

    def _log(self, *args: Any) -> None:
        if len(args) < 2:
            self.raise_error(b"redis.log() requires two arguments or more.")
        level = args[0]
        if type(level) is not int and type(level) is not float:
            self.raise_error(b"First argument must be a number (log level).")
        name = _LOG_LEVELS.get(int(level)) if level == int(level) else None
        if name is None:
            self.raise_error(b"Invalid debug level.")
        parts = [lua_tostring(a) for a in args[1:] if is_lua_string(a)]
        getattr(LOG, name)(b" ".join(parts).decode(errors="replace"))

    def _setresp(self, *args: Any) -> None:
        if len(args) != 1:
            self.raise_error(b"redis.setresp() requires one argument.")
        v = args[0]
        if (type(v) is not int and type(v) is not float) or v not in (2, 3):
            self.raise_error(b"RESP version must be 2 or 3.")
        self.client.set_protocol(int(v))

    def _set_repl(self, *args: Any) -> None:
        """redis.set_repl(flags): the flags as lua_tonumber reads them (a numeric string counts, any
        other value is 0, REPL_NONE) and C truncates them to an int."""
        if self.running is None:
            self.raise_error(b"redis.set_repl can only be called inside a script invocation")
        if len(args) != 1:
            self.raise_error(b"redis.set_repl() requires two arguments.")
        n = luanum.to_number(args[0])
        flags = 0 if n is None else _c_int(n)
        if flags & ~REPL_ALL:
            self.raise_error(b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
        self.running.repl = flags

    def _acl_check_cmd(self, *args: Any) -> bool:
        if not args:
            self.raise_error(b"Please specify at least one argument for this redis lib call")
        argv = []
        for a in args:
            if not is_lua_string(a):
                self.raise_error(b"Lua redis lib command arguments must be strings or integers")
            argv.append(lua_tostring(a))
        cmd = self.server.table.lookup(argv)
        if cmd is None:
            self.raise_error(b"Invalid command passed to redis.acl_check_cmd()")
        run = self.running
        if run is None or run.caller.user.free:
            return True
        return run.caller.user.check(cmd, argv)[0] == acl.OK

    # ---- math.random --------------------------------------------------------------------------
    def _where_text(self) -> str:
        return self._where().decode(errors="replace")

    def _random(self, *args: Any) -> float | int:
        r = (RAND.next() % 2147483647) / 2147483647
        n = len(args)
        if n == 0:
            return r
        if n == 1:
            hi = _c_int(luanum.check_number(args, 0, "random", self._where_text))
            if hi < 1:
                luanum.raise_lua(luanum.arg_error(self._where_text(), 1, "random", "interval is empty"))
            return math.floor(r * hi) + 1
        if n == 2:
            lo = _c_int(luanum.check_number(args, 0, "random", self._where_text))
            hi = _c_int(luanum.check_number(args, 1, "random", self._where_text))
            if lo > hi:
                luanum.raise_lua(luanum.arg_error(self._where_text(), 2, "random", "interval is empty"))
            return math.floor(r * (hi - lo + 1)) + lo
        luanum.raise_lua(self._where_text() + "wrong number of arguments")
        return 0

    def _randomseed(self, *args: Any) -> None:
        RAND.seed(_c_int(luanum.check_number(args, 0, "randomseed", self._where_text)))

    # ---- errors seen from Lua -------------------------------------------------------------------
    def _unwrap(self, e: Any) -> Any:
        if isinstance(e, LuaRaise):
            return e.value
        if isinstance(e, BaseException):
            LOG.warning(f"Internal error in a scripting helper: {type(e).__name__}: {e}")
            return b"Internal error: " + type(e).__name__.encode()
        return e

    # ---- running -------------------------------------------------------------------------------
    def compile(self, body: bytes) -> Any:
        """A compiled chunk, or raise CommandError with Redis's compile error text."""
        f, err = self.h.compile(body, self.chunk_name)
        if f is None:
            raise CommandError(b"ERR Error compiling script (new function): " + convert.clean(lua_tostring(err)))
        return f

    def run(self, c: Client, fn: Any, name: bytes, argv: list[bytes], numkeys: int, ro: bool,
            is_function: bool, allow_oom: bool = False, cross_slot: bool = True) -> bytes:
        """Run `fn` for client `c` with argv[3:] as keys (the first `numkeys`) and arguments: as
        KEYS/ARGV for a script, as the callback's parameters for a function.  The encoded reply, or
        CommandError for an error reply."""
        srv = self.server
        client = self.client
        client.db = c.db
        client.dbid = c.dbid
        if client.resp != 2:
            client.set_protocol(2)
        run = self._spare
        if run is None:  # a run inside a run (none is expected: scripts cannot call EVAL or FCALL)
            run = Running(self)
        self._spare = None
        run.begin(c, name, argv, ro, is_function, allow_oom, cross_slot)
        self.running = run
        if srv.also_propagate is not None:
            propagate.prevent(c)  # scriptResetRun: a script travels as the effects it had, never itself
        now = srv.now_ms
        if self.ldb is not None:
            self.ldb_lua.start(self.ldb.tails)  # the debugger's line hook instead of the busy hook, as Redis
        try:
            # cbridge's call into Lua (not under the debugger, whose hooks expect lupa's frames)
            bridge = self.bridge
            res = bridge.run(fn, numkeys, argv, is_function) if bridge is not None and self.ldb is None else None
            if res is None:
                res = (self._run_fcall if is_function else self._run_eval)(fn, numkeys, *argv[3:])
        finally:
            self.running = None
            # nothing of the caller's kept alive between runs (read only while it runs, set by begin)
            run.caller = run.argv = None  # type: ignore[assignment]
            self._spare = run
            srv.now_ms = now
            if run.busy:
                busy.leave(srv, run)
            if run.killed or srv.shutting_down or self.ldb is not None:
                self.install_hook()  # the kill (or the debugger) left a line hook behind
        if type(res) is bytes:
            return res  # the bridge's reply, encoded as below
        ok, value = res
        if not ok:
            if ok is None:  # the bridge's error reply (a script's own {err=...}): counted, as below
                raise CommandError(value)
            raise CommandError(self._format_error(value, name), _counted(value))
        if type(value) is int and _LLONG_MIN <= value < _LLONG_LIMIT:
            # the commonest reply, without the general conversion: reply.integer's, inline (a call
            # of the interpreted reply module costs more than the rest of this return)
            return _SMALL_INT_REPLIES[value + 1] if -1 <= value <= 10000 else b":%d\r\n" % value
        errors: list = []
        r = convert.lua_to_resp(value, c.enc, client.resp, self._shape, errors)
        if r[0] == 45:  # an error reply: counted in errorstats unless a called command's, counted already
            raise CommandError(r[1:-2], _counted(value))
        if errors:
            self._count_inner_errors(argv, errors)
        return r

    def _count_inner_errors(self, argv: list[bytes], errors: list) -> None:
        """The errors inside a script's array reply, counted as Redis's luaReplyToRedisReply counts
        them: each in errorstats, or, one a called command raised (counted already), in the
        script command's failed_calls; and the script command failed once if any was counted
        (call()'s error-count delta)."""
        cmd = self._lookup(argv)
        counted = False
        for t, text in errors:
            if _counted(t):
                if cmd is not None:
                    cmd.failed_calls += 1
            else:
                self.server.count_error(text)
                counted = True
        if counted and cmd is not None:
            cmd.failed_calls += 1

    def install_hook(self) -> None:
        """The count hook, installed once: it costs nothing until a script runs long."""
        self.h.hook_count(self._hook, HOOK_INSTRUCTIONS)

    def _format_error(self, err: Any, name: bytes) -> bytes:
        if lupa51.lua_type(err) != "table":
            return b"ERR " + convert.clean(lua_tostring(err))
        e = err[b"err"]
        msg = lua_tostring(e) if e is not None else b"ERR unknown error"
        msg = convert.clean(msg)
        source, line = err[b"source"], err[b"line"]
        if source is not None:
            msg += b" script: " + name + b", on " + lua_tostring(source) + b":" + lua_tostring(line) + b"."
        return msg

    # ---- the busy hook ---------------------------------------------------------------------------
    def _hook(self) -> Any:
        """Every HOOK_INSTRUCTIONS: past the threshold, serve other clients; the kill error or None."""
        run = self.running
        if run is None:
            return None
        from raxdb.server.scripting import busy

        if not run.busy:
            threshold = _busy_threshold(self.server)
            if threshold <= 0 or (time.monotonic() - run.start) * 1000 < threshold:
                return None
            busy.enter(self.server, run)
        busy.poll(self.server, run)
        if run.killed or self.server.shutting_down:
            return self.h.err(b"ERR Script killed by user with SCRIPT KILL...")
        return None


def _refusal(srv: Server, run: Running | None, cmd: Any, argv: list[bytes]) -> bytes | None:
    """Why scriptCall refuses a command the script may call (after the noscript check), in Redis's
    order, or None: a stale replica, the caller's ACL, a read-only script, and the checks of a
    script's first write (scriptVerifyWriteCommandAllow, scriptVerifyOOM)."""
    if srv.replica_gate and "stale" not in cmd.flags and srv.repl.link.serving_stale():
        return b"Can not execute the command on a stale replica"  # scriptVerifyAllowStale
    if run is not None and not run.caller.user.free:  # scriptVerifyACL, for the caller's user
        denied = srv.acl.check(run.caller, cmd, argv, acl.CTX_LUA)
        if denied:
            return acl.script_denied_text(denied)
    if run is None:
        return None
    if run.ro and (cmd.is_write or "may_replicate" in cmd.flags):
        # a read-only script may not PUBLISH either: it could replicate (and CLIENT PAUSE
        # WRITE lets read-only scripts run)
        return b"Write commands are not allowed from read-only scripts."
    first_write = cmd.is_write and not run.wrote
    if (first_write and srv.replica_gate and srv.config.values["replica-read-only"] == "yes"
            and not run.caller.must_obey):
        return b"-" + READONLY  # scriptVerifyWriteCommandAllow on a read-only replica
    if first_write and (srv.aof.state or srv.rdb_gate):
        # scriptVerifyWriteCommandAllow: the last save failed, or the AOF cannot be written
        denied = srv.persistence.writes_denied()
        if denied is not None:
            return b"-" + denied
    if first_write and srv.repl.write_gate and not srv.repl.master.enough_good_replicas():
        # scriptVerifyWriteCommandAllow: min-replicas-to-write (a script without flags; one with
        # flags was refused before it ran)
        return b"-NOREPLICAS Not enough good replicas to write."
    if srv.maxmemory and srv.pre_command_oom and not run.allow_oom and not run.wrote and "denyoom" in cmd.flags:
        # scriptVerifyOOM: out of memory when the script started, and nothing written yet (a
        # script is never stopped halfway through its writes)
        return b"-" + OOM
    return None


def _bridge(engine: Engine) -> Any:
    """cbridge's crossing for `engine`, or None: not built (RAXDB_PURE=1, no compiler), or lupa's
    objects not laid out as it checks."""
    try:
        from raxdb.server.scripting import cbridge  # type: ignore[attr-defined]  # a .pyx, built or absent
    except ImportError:
        return None
    except Exception as e:  # noqa: BLE001 - built against types this build does not have (a mixed build)
        LOG.warning(f"Scripting's C bridge not used, it does not load: {type(e).__name__}: {e}")
        return None
    try:
        bridge = cbridge.bind(engine)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, lupa's own path works
        LOG.warning(f"Scripting's C bridge not used: {type(e).__name__}: {e}")
        return None
    if bridge is None and not _BRIDGE_REFUSED:
        # the proof in bind failed: this lupa's objects are not laid out as the bridge checks (a lupa
        # outside the range pyproject.toml pins, which the bridge was proven on); said once a process
        _BRIDGE_REFUSED.append(True)
        LOG.warning(f"Scripting's C bridge not used: lupa {_lupa_version()} does not check out as the bridge "
                    "expects (proven on the versions pyproject.toml allows); scripts run through lupa's own "
                    "crossing, the same replies, several times slower")
    return bridge


_BRIDGE_REFUSED: list[bool] = []


def _lupa_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lupa")
    except PackageNotFoundError:
        return "(version unknown)"


def _counted(err: Any) -> bool:
    """Is this error (table) one a called command raised, already in errorstats?"""
    if lupa51.lua_type(err) != "table":
        return False
    try:
        return err[b"ignore_error_stats_update"] is True  # lua_isboolean and true, as Redis reads it
    except Exception:  # noqa: BLE001 - a script's own table may have an __index that raises
        return False


def _c_int(n: float) -> int:
    """luaL_checkint: C's (int) conversion, truncating toward zero."""
    try:
        v = int(n)
    except (OverflowError, ValueError):
        return -(1 << 31)
    return v if -(1 << 31) <= v < (1 << 31) else -(1 << 31)


def _busy_threshold(srv: Server) -> int:
    try:
        return int(srv.config.values.get("busy-reply-threshold", "5000"))
    except ValueError:
        return 5000


def _script_client(server: Server) -> Client:
    c = Client(server)
    c.addr = "lua"
    c.authenticated = True
    c.in_exec = True  # blocking commands must not block inside a script
    c.is_script = True
    c.plain = False
    return c


def _is_pyfunc(v: Any) -> bool:
    return callable(v) and lupa51.lua_type(v) is None


def is_lua_string(v: Any) -> bool:
    """lua_isstring: strings and numbers."""
    cls = type(v)
    return cls is bytes or cls is int or cls is float


def lua_tostring(v: Any) -> bytes:
    """Lua's tostring for strings and numbers (numbers print as %.14g)."""
    cls = type(v)
    if cls is bytes:
        return v
    if cls is int or cls is float:
        return lua_number_text(v)
    if cls is bool:
        return b"true" if v else b"false"
    if v is None:
        return b"nil"
    return str(v).encode(errors="replace")


def lua_number_text(v: int | float) -> bytes:
    f = float(v)
    if f != f:
        return b"nan" if str(f)[0] != "-" else b"-nan"
    if f in (float("inf"), float("-inf")):
        return b"inf" if f > 0 else b"-inf"
    return b"%.14g" % f


def _true(*_a: Any) -> bool:
    return True

