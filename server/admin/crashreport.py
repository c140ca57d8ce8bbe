"""Crash reports, the software watchdog and the restarts of DEBUG (Redis's debug.c crash handling
and server.c's restartServer / setupSignalHandlers / serverLogFromHandler).

The report.  `report()` writes what Redis's bug report holds, in its order and under its titles,
through the log's raw writes (the logfile, or stdout): the START banner, the headline lines of
whatever crashed, the STACK TRACE, INFO OUTPUT (INFO all), CLIENT LIST OUTPUT, CURRENT CLIENT INFO
(only when a client is executing a command), MODULES INFO OUTPUT (empty: raxdb has no modules),
CONFIG DEBUG OUTPUT (Redis's DEBUG_CONFIG options, in CONFIG REWRITE form), the END banner and a
closing paragraph of raxdb's.  The stack trace is Python's: the main thread's from the frame the
crash was caught in, then every other thread's, each labelled with raxdb's own function names
(Redis's C names, such as "debugCommand", are not faked).  There is no FAST MEMORY TEST
section: a Python process cannot reach its memory to test it meaningfully (Redis's memtest walks
its anonymous mappings), so crash-memcheck-enabled is stored and reported only.  The current
client is found without any cost to request handling: the frames from the one the crash was
caught in outwards are searched for a Client beside an `argv` list (the outermost such frame is
the client whose command came from the network: Redis's current_client, not a script's caller).
Nothing is recorded per command.

Signals.  Python cannot run code inside a real fault, so there are two paths.  Real faults in C
(SIGSEGV, SIGBUS, SIGFPE, SIGILL) go to `faulthandler`, which writes every thread's Python stack
to the log and lets the signal kill the process.  A SIGABRT sent from outside reaches a
Python-level handler (it runs on the main thread between bytecodes: uvloop wakes on the signal's
wakeup fd when idle, and time.sleep under DEBUG SLEEP returns early for it, PEP 475), which writes
the full report and then dies of the same signal (the handler reset to SIG_DFL, the signal sent
again), as bugReportEnd does, so a core is dumped when enabled.  Python handlers get no siginfo,
so there is no "Killed by PID" line there.  With crash-log-enabled no neither is installed, as
Redis installs no crash handlers then; CONFIG SET turns them on and off (updateSighandlerEnabled).

DEBUG SEGFAULT cannot fault for real without losing the report, so it writes the report a
SIGSEGV handler would (si_code 0 and "Killed by PID" of its own pid: true, since the process sends
the signal to itself) and then dies of SIGSEGV.  DEBUG PANIC, ASSERT and OOM follow _serverPanic
and _serverAssertWithInfo (the file:line is the Python caller's) and abort().

The watchdog.  watchdog-period arms a one-shot ITIMER_REAL that the cron re-arms every tick (one
test of `Server.watchdog_period` there, nothing per command); when the loop is held longer than
the period (a long command, DEBUG SLEEP), or a load takes longer (the cron re-arms nothing while a
dataset loads, as Redis runs no timers then), SIGALRM's handler logs the stack as Redis's does.  The
period is raised to two cron periods at least, and 0 stops the timer and ignores SIGALRM
(applyWatchdogPeriod).  A Python handler runs only between bytecodes, so a thread held inside one
long C call is reported when that call returns.

Restarts.  DEBUG RESTART (config rewritten, graceful shutdown) and CRASH-AND-RECOVER (neither)
exec the interpreter again with the original command line from the directory the process started
in (`START_DIR`, taken when this module is first imported, before the configuration's `dir` can
change it).  Python opens every file and socket close-on-exec, so the listening sockets, client
connections, AOF and log files are released by the exec itself; stdout and stderr carry over.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from raxdb.protocol.request import quote_arg
from raxdb.server.admin import info, shutdown
from raxdb.server.base.log import LOG
from raxdb.server.base.version import VERSION
from raxdb.server.config.options import ALIASES, OPTIONS, ConfigError
from raxdb.server.conn.clientinfo import client_info_line
from raxdb.server.events.keyaccess import is_string, string_encoding, type_name
from raxdb.server.net import unixsocket
from raxdb.server.net.client import Client

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

START_DIR = os.getcwd()
_WARNING = 3
_FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)

# DEBUG_CONFIG options of config.c, in its declaration order; an alias is printed under its own
# name too, as Redis's options dictionary holds it beside the primary.
_DEBUG_CONFIG = ("io-threads-do-reads", "lazyfree-lazy-eviction", "lazyfree-lazy-expire",
                 "lazyfree-lazy-server-del", "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush",
                 "repl-diskless-sync", "replica-read-only", "slave-read-only", "activedefrag",
                 "repl-diskless-load", "sanitize-dump-payload", "io-threads", "list-compress-depth",
                 "proto-max-bulk-len", "client-query-buffer-limit")

# serverLogObjectDebugInfo prints the object's type and encoding as server.h numbers them
_TYPES = {"string": 0, "list": 1, "set": 2, "zset": 3, "hash": 4, "stream": 6}
_ENCODINGS = {"raw": 0, "int": 1, "hashtable": 2, "linkedlist": 4, "ziplist": 5, "intset": 6,
              "skiplist": 7, "embstr": 8, "quicklist": 9, "stream": 10, "listpack": 11}
_EMBSTR_LIMIT = 44  # createStringObject: argv strings up to 44 bytes are embstr, longer ones raw

_END = ("\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n"
        "       raxdb (a Python server speaking Redis's protocol) crashed or was told to.\n"
        "       The report above, from START to END, says where: the Python stacks,\n"
        "       the server's INFO, its clients and the command that was running.\n\n"
        "  Send it with the raxdb version and the steps that led here to raxdb's maintainers.\n"
        "  A Python traceback above names the module and line to look at first.\n\n")


class _State:
    srv: Server | None = None
    started = False  # bug_report_start: the START banner is written once per process


_state = _State()


# ---- installation -------------------------------------------------------------------------------
def install(srv: Server) -> None:
    """Hooks crash-log-enabled and watchdog-period to their settings and applies both as the
    configuration left them (Redis applies both at start-up too)."""
    _state.srv = srv
    on = srv.config.on_change.setdefault
    on("crash-log-enabled", []).append(lambda v: _apply_crash_log(v == "yes"))
    on("watchdog-period", []).append(lambda _v: apply_watchdog_period(srv))
    _apply_crash_log(srv.config.values["crash-log-enabled"] == "yes")
    apply_watchdog_period(srv)


def _apply_crash_log(enabled: bool) -> None:
    """setupSignalHandlers / removeSignalHandlers for the fatal signals."""
    if enabled:
        faulthandler.enable(file=LOG.stream, all_threads=True)
        signal.signal(signal.SIGABRT, _on_abort_signal)  # after faulthandler, which also claims it
    else:
        _remove_handlers()


def _remove_handlers() -> None:
    """removeSignalHandlers: the default action for every fatal signal, so what follows ends the
    process as the signal does."""
    faulthandler.disable()
    for sig in (*_FAULTS, signal.SIGABRT):
        signal.signal(sig, signal.SIG_DFL)


# ---- the report ---------------------------------------------------------------------------------
def _raw(text: str) -> None:
    LOG.raw(_WARNING, text)


def _start() -> None:
    """bugReportStart: the banner, once."""
    if not _state.started:
        _state.started = True
        _raw("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n")


def _format_stack(frame: FrameType | None) -> str:
    out = [f'  File "{f.f_code.co_filename}", line {lineno}, in {f.f_code.co_name}\n'
           for f, lineno in traceback.walk_stack(frame)]
    out.reverse()  # most recent call last, as Python prints tracebacks
    return "".join(out)


def stack_trace(frame: FrameType | None) -> None:
    """logStackTrace: the main thread's stack from `frame`, then every other thread's."""
    _raw("\n------ STACK TRACE ------\n")
    _raw("\nBacktrace (main thread, most recent call last):\n" + _format_stack(frame))
    threads = {t.ident: t.name for t in threading.enumerate()}
    for ident, other in sys._current_frames().items():
        if ident == threading.main_thread().ident:
            continue
        _raw(f"\nThread {ident} ({threads.get(ident, '?')}), most recent call last:\n"
             + _format_stack(other))


def _section(title: str, body: Any) -> None:
    """A report section; one that fails to render says so and the report goes on."""
    _raw(f"\n------ {title} ------\n")
    try:
        _raw(body())
    except Exception as exc:  # noqa: BLE001 - a crash report must get to its end
        _raw(f"(unavailable: {exc!r})\n")


def _info(srv: Server) -> str:
    return info.generate(srv, [b"all"]).decode(errors="replace")


def _client_list(srv: Server, current: Client | None) -> str:
    return "".join(client_info_line(c, current) + "\n" for c in list(srv.clients.values()))


def _config_debug(srv: Server) -> str:
    """getConfigDebugInfo: the options' lines as CONFIG REWRITE writes them (forced)."""
    cfg = srv.config
    lines = []
    for name in _DEBUG_CONFIG:
        primary = ALIASES.get(name, name)
        for line in cfg._rewrite_lines(OPTIONS[primary]) or []:
            lines.append(name + line[len(primary):] + "\n")
    return "".join(lines)


def current_client(frame: FrameType | None) -> tuple[Client, list[bytes]] | None:
    """The client executing a command, and its argv, from the frames around `frame` (Redis's
    server.current_client): the outermost frame with a Client beside an `argv` list."""
    found = None
    for f, _ in traceback.walk_stack(frame):
        local = f.f_locals
        argv = local.get("argv")
        if not isinstance(argv, list):
            continue
        for name in ("self", "c"):
            if isinstance(local.get(name), Client):
                found = (local[name], argv)
                break
    return found


def _object_info(value: Any) -> None:
    """serverLogObjectDebugInfo for a stored value."""
    enc = string_encoding(value) if is_string(value) else value.encoding()
    LOG.warning(f"Object type: {_TYPES.get(type_name(value), 0)}")
    LOG.warning(f"Object encoding: {_ENCODINGS.get(enc, 0)}")
    LOG.warning("Object refcount: 1")


def _current_client_section(running: tuple[Client, list[bytes]] | None) -> None:
    """logCurrentClient: the client's line, its arguments (128 bytes of each at most) and, when
    the first argument names a key of its database, that value's description."""
    if running is None:
        return
    from raxdb.server.conn.clientinfo import client_info_line

    c, argv = running
    _raw("\n------ CURRENT CLIENT INFO ------\n")
    try:
        _raw(client_info_line(c, c) + "\n")
        for j, arg in enumerate(argv):
            _raw(f"argv[{j}]: '{quote_arg(bytes(arg[:128]))}'\n")
        if len(argv) > 1:
            value = c.db.stored(argv[1])
            if value is not None:
                LOG.warning(f"key '{argv[1].decode(errors='replace')}' found in DB containing the following object:")
                _object_info(value)
    except Exception as exc:  # noqa: BLE001 - a crash report must get to its end
        _raw(f"(unavailable: {exc!r})\n")


def print_crash_report(frame: FrameType | None) -> None:
    """printCrashReport: INFO, the clients, the current client, modules, debug config."""
    srv = _state.srv
    if srv is None:
        return
    running = current_client(frame)
    current = None
    if running is not None:
        current = running[0]
        current.last_argv = running[1]  # its line shows the command running (the fast path keeps none)
    _section("INFO OUTPUT", lambda: _info(srv))
    _section("CLIENT LIST OUTPUT", lambda: _client_list(srv, current))
    _current_client_section(running)
    _section("MODULES INFO OUTPUT", lambda: "")
    _section("CONFIG DEBUG OUTPUT", lambda: _config_debug(srv))


def _crash_log_enabled() -> bool:
    srv = _state.srv
    return srv is None or srv.config.values["crash-log-enabled"] == "yes"


def _end_by_signal(sig: int) -> NoReturn:
    """bugReportEnd(1, sig): the END text, then death by `sig` with its default action."""
    _raw(_END)
    _remove_handlers()
    _die_by(sig)


def _die_by(sig: int) -> NoReturn:
    """The signal's default action on this process (a core dumped if enabled)."""
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    while True:  # delivered at once to the thread that sent it; wait for it all the same
        signal.pause()


def _end_by_abort() -> NoReturn:
    """bugReportEnd(0, 0) after removeSignalHandlers: the END text, then abort(), or exit status 1
    with use-exit-on-panic (what Redis's tests and sanitizer builds ask for)."""
    _remove_handlers()
    _raw(_END)
    sys.stdout.flush()
    srv = _state.srv
    if srv is not None and srv.config.values["use-exit-on-panic"] == "yes":
        os._exit(1)
    os.abort()


def _signal_crash(sig: int, frame: FrameType | None, killed_by_self: bool) -> NoReturn:
    """sigsegvHandler's report for a signal, then death by it."""
    _start()
    LOG.warning(f"Redis {VERSION} crashed by signal: {sig}, si_code: 0")
    if killed_by_self:
        if sig in (signal.SIGSEGV, signal.SIGBUS):
            # for SI_USER si_addr overlays si_pid and si_uid, which Redis prints as the address
            LOG.warning(f"Accessing address: {hex(os.getpid() | os.getuid() << 32)}")
        LOG.warning(f"Killed by PID: {os.getpid()}, UID: {os.getuid()}")
    stack_trace(frame)
    print_crash_report(frame)
    _end_by_signal(sig)


def _on_abort_signal(sig: int, frame: FrameType | None) -> None:
    _signal_crash(sig, frame, False)


def segfault(frame: FrameType | None) -> NoReturn:
    """DEBUG SEGFAULT: the report a fault in `frame` would give, then death by SIGSEGV."""
    if not _crash_log_enabled():  # no handler installed: the signal kills, nothing is logged
        _die_by(signal.SIGSEGV)
    _signal_crash(signal.SIGSEGV, frame, True)


def _where(frame: FrameType | None) -> str:
    if frame is None:
        return "?:0"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def panic(message: str, frame: FrameType | None) -> NoReturn:
    """_serverPanic: the Guru Meditation naming the caller's file:line, the report, abort()."""
    _start()
    LOG.warning("------------------------------------------------")
    LOG.warning("!!! Software Failure. Press left mouse button to continue")
    LOG.warning(f"Guru Meditation: {message} #{_where(frame)}")
    if _crash_log_enabled():
        stack_trace(frame)
        print_crash_report(frame)
    _end_by_abort()


def out_of_memory(size: int, frame: FrameType | None) -> NoReturn:
    """redisOutOfMemoryHandler: the allocation logged, then the panic."""
    LOG.warning(f"Out Of Memory allocating {size} bytes!")
    panic(f"Redis aborting for OUT OF MEMORY. Allocating {size} bytes!", frame)


def assert_failed(c: Client, argv: list[bytes], expression: str, frame: FrameType | None) -> NoReturn:
    """_serverAssertWithInfo(c, argv[0], expression): the client and object contexts, the
    failed assertion at the caller's file:line, the report, abort()."""
    _start()
    LOG.warning("=== ASSERTION FAILED CLIENT CONTEXT ===")
    fields = dict(f.split("=", 1) for f in _client_fields(c))
    LOG.warning(f"client->flags = {_flag_bits(fields.get('flags', 'N'))}")
    LOG.warning(f"client->conn = fd={fields.get('fd', '-1')}")
    LOG.warning(f"client->argc = {len(argv)}")
    for j, arg in enumerate(argv):
        LOG.warning(f'client->argv[{j}] = "{bytes(arg).decode(errors="replace")}" (refcount: 1)')
    _start()
    LOG.warning("=== ASSERTION FAILED OBJECT CONTEXT ===")
    LOG.warning("Object type: 0")
    LOG.warning(f"Object encoding: {8 if len(argv[0]) <= _EMBSTR_LIMIT else 0}")
    LOG.warning("Object refcount: 1")
    _start()
    LOG.warning("=== ASSERTION FAILED ===")
    LOG.warning(f"==> {_where(frame)} '{expression}' is not true")
    if _crash_log_enabled():
        stack_trace(frame)
        print_crash_report(frame)
    _end_by_abort()


def _client_fields(c: Client) -> list[str]:
    from raxdb.server.conn.clientinfo import client_info_line

    return [f for f in client_info_line(c, c).split(" ") if "=" in f]


# CLIENT LIST flag letters -> server.h's CLIENT_* bits, for client->flags
_FLAG_BITS = {"S": 1 << 0, "M": 1 << 1, "O": 1 << 2, "x": 1 << 3, "b": 1 << 4, "d": 1 << 5, "c": 1 << 6,
              "u": 1 << 7, "A": 1 << 8, "P": 1 << 18, "r": 1 << 17, "t": 1 << 31}


def _flag_bits(letters: str) -> int:
    return sum(_FLAG_BITS.get(ch, 0) for ch in letters)


# ---- the watchdog -------------------------------------------------------------------------------
def schedule_watchdog(period_ms: int) -> None:
    """watchdogScheduleSignal: SIGALRM in `period_ms` (0: the timer stopped), one shot."""
    signal.setitimer(signal.ITIMER_REAL, period_ms / 1000)


def apply_watchdog_period(srv: Server) -> None:
    """applyWatchdogPeriod: 0 stops the timer and ignores SIGALRM; otherwise the handler, and the
    period raised to twice the cron's at least (CONFIG GET then shows the raised value)."""
    period = int(srv.config.values["watchdog-period"])
    if period == 0:
        schedule_watchdog(0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGALRM, _on_watchdog)
        period = max(period, (1000 // srv.config.hz) * 2)
        srv.config.values["watchdog-period"] = str(period)
        schedule_watchdog(period)
    srv.watchdog_period = period


def _log_from_handler(msg: str) -> None:
    """serverLogFromHandler: `<pid>:signal-handler (<unix time>) <msg>`."""
    _raw(f"{os.getpid()}:signal-handler ({int(time.time())}) {msg}\n")


def _on_watchdog(_sig: int, frame: FrameType | None) -> None:
    """watchdogSignalHandler: where the main thread is, while the event loop is held."""
    _log_from_handler("\n--- WATCHDOG TIMER EXPIRED ---")
    stack_trace(frame)
    _log_from_handler("--------\n")


# ---- restarts -----------------------------------------------------------------------------------
def restart(srv: Server, graceful: bool, delay_ms: int) -> bool:
    """restartServer: for RESTART the config file rewritten and a shutdown without waiting for
    replicas first, then after `delay_ms` the process replaced by a new run of the same command
    line.  False (the reason logged) when it could not; on success it does not return."""
    if not os.access(sys.executable, os.X_OK):
        LOG.warning(f"Can't restart: this process has no permissions to execute {sys.executable}")
        return False
    if graceful and srv.config.config_file is not None:
        try:
            srv.config.rewrite()
        except ConfigError as exc:
            LOG.warning(f"Can't restart: configuration rewrite process failed: {exc}")
            return False
    if graceful:
        shutdown.announce(srv)
        if not srv.finish_shutdown(None, False):
            LOG.warning("Can't restart: error preparing for shutdown")
            return False
        unixsocket.remove(srv)
        LOG.warning("Redis is now ready to exit, bye bye...")
    schedule_watchdog(0)  # an armed timer would outlive the exec and kill the new image
    if delay_ms:
        time.sleep(delay_ms / 1000)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.chdir(START_DIR)
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    except OSError:
        pass
    os._exit(1)  # as Redis: nothing else can be done once the shutdown ran
