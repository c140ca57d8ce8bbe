"""`raxdb.serve()`: a real raxdb server for a `with` block, a test session or an application.

    with raxdb.serve() as srv:              # or: async with raxdb.serve() as srv
        redis.Redis.from_url(srv.url).ping()

    srv = raxdb.serve(config={"appendonly": "yes"}, dir="data").start()
    ...
    srv.stop()

Rule: this module starts, watches and stops servers; it knows the server only through its entry
point, raxdb.server.main (the arguments `raxdb-server` takes; `main` in a child process,
`run_embedded` in a thread), never through its internals (an import-linter contract).

Defaults: the loopback address, a free port, a temporary working directory removed afterwards,
persistence off (`save ""`, `appendonly no`), and a replica's first sync at once
(`repl-diskless-sync-delay 0`: Redis's default waits 5 s for more replicas to share it), and raxdb's
test controls on (`raxdb-test-controls yes`: the DEBUG subcommands that move the clock and inject
faults, server/commands/testcontrols.py).  `config` takes any redis.conf option and wins over
the defaults; `.config` is everything the server was started with.

Two modes, "process" the default:
- "process": a process of its own, running raxdb-server's own main (raxdb/embed/child.py).  It has
  its own interpreter, so its own GIL (a busy caller does not slow the server, nor the server the
  caller), its own event loop (no interference with the caller's asyncio loop or its policy), its own
  signal handlers, crash handlers, process title, working directory and log; BGSAVE forks a small
  process, not the caller; a server that crashes or calls exit (SHUTDOWN, a fatal AOF error) takes
  only itself down.  It cannot outlive the caller (PR_SET_PDEATHSIG on Linux, and a pipe that
  reaches EOF when the caller dies, even by SIGKILL).  The first process-mode start in a calling
  process starts a template (raxdb/embed/template.py: an interpreter that imports the server once)
  and every start forks a fresh server from it, so only the first pays for an interpreter and the
  imports; the server is then the template's child, not the caller's (`.pid` is its pid all the
  same).  Without fork (not POSIX), when the template fails, or with RAXDB_SERVE_TEMPLATE=0 in the
  environment, each server is spawned instead (`python -m raxdb.embed.child`).
- "thread": the server on a new event loop in a thread of the calling process.  It starts faster
  once the server's modules are imported (the first start pays for the imports), but it shares the
  caller's GIL, the process's log and command table (rename-command), its working directory (`dir`
  changes it, as redis-server's does; it is restored on stop), and a fatal server error that exits
  ends the caller.  For a quick server in a script or a notebook; a test suite wants "process".
  Measured on the development machine (2 shared cores, compiled modules), start() to the first
  PONG, `bench/startup.py --runs 15` (2026-11-25): process, the first start in a process 0.29-0.42 s
  (the template: an interpreter and the imports), later starts 30-31 ms median (a fork and the
  server's own start; redis-server's spawn: 19 ms, so 1.6x; spawned without the template, every
  start cost 0.47-0.55 s); thread 0.10-0.12 s for the first start (the imports), then 3-6 ms.
  "process" is the default because it is the one that cannot harm its caller.

Where: POSIX (Linux, macOS): the child's pipes are watched with select() and passed by number.
PR_SET_PDEATHSIG is Linux's; elsewhere the pipe alone ties the child to its parent.

Invariants:
- start() returns only once the server serves (listening, its data loaded): readiness is the server's
  own on_ready event (a line on a pipe, an Event for a thread), not a log line read or a port polled.
- The port is known before start() returns: for a port chosen here, a free one is found by binding
  port 0 and passed as `--port` (Redis's port 0 means "no TCP"); another process may take it in
  between, so a start that fails with EADDRINUSE is tried again with a new port (never for a port
  the caller chose).
- A failure to start raises ServeError carrying the server's output (its FATAL CONFIG FILE ERROR
  report, its log lines).
- stop() (or close()) may be called any number of times; the temporary directory goes after the
  server is gone.  `with` on a server that runs already enters it as it is (start() itself refuses a
  second start).
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import select
import shutil
import signal
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import IO, Literal, Self

from raxdb.embed import control, template
from raxdb.embed.faults import FaultControls

Mode = Literal["process", "thread"]
ConfigValue = str | int | float | bool | Iterable[str | int | float | bool]

START_TIMEOUT = 60.0  # seconds a server has to start (a large dataset to load may need more: `timeout`)
STOP_TIMEOUT = 30.0  # seconds it has to stop after SIGTERM before it is killed
_ATTEMPTS = 5  # starts on a port chosen here, each failing only if another process took the port


class ServeError(RuntimeError):
    """The server did not start; `log` holds what it wrote (its error report, its log)."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(f"{message}\n--- server output ---\n{log}" if log else message)
        self.log = log


def serve(config: Mapping[str, ConfigValue] | None = None, *, port: int | None = None, host: str = "127.0.0.1",
          dir: str | os.PathLike[str] | None = None, unixsocket: bool | str | os.PathLike[str] = False,
          mode: Mode = "process", timeout: float = START_TIMEOUT) -> EmbeddedServer:
    """A server, not started yet: `with` / `async with` start and stop it, or call start() and stop().

    `config`: redis.conf options by name (`{"appendonly": "yes", "maxmemory": "10mb"}`); a list
    value repeats the option (`{"rename-command": ["FLUSHALL ''", ...]}`); True / False are yes / no.
    `port`: the TCP port (default: a free one; 0: no TCP, with a unix socket).  `host`: the address
    to listen on and to connect to.  `dir`: the working directory, kept (default: a temporary one,
    removed on stop).  `unixsocket`: True for `raxdb.sock` in the working directory, or a path.
    `mode`: "process" or "thread" (the module's docstring compares them).  `timeout`: seconds
    allowed to start."""
    return EmbeddedServer(config, port=port, host=host, dir=dir, unixsocket=unixsocket, mode=mode, timeout=timeout)


class EmbeddedServer(FaultControls):
    """One server started by serve(): `.host`, `.port`, `.url`, `.unixsocket`, `.config`, `.dir`,
    `.pid` (the child's, or this process's in thread mode), `.log` (its output so far)."""

    def __init__(self, config: Mapping[str, ConfigValue] | None, *, port: int | None, host: str,
                 dir: str | os.PathLike[str] | None, unixsocket: bool | str | os.PathLike[str], mode: Mode,
                 timeout: float) -> None:
        if mode not in ("process", "thread"):
            raise ValueError(f"mode must be 'process' or 'thread', not {mode!r}")
        self.mode: Mode = mode
        self.timeout = timeout
        options = {_key(k): _values(v) for k, v in (config or {}).items()}
        if options.get("daemonize", ["no"])[-1].lower() == "yes":
            raise ValueError("daemonize yes: the server would leave the process serve() watches")
        if "port" in options and port is None:
            port = int(options.pop("port")[-1])
        if "dir" in options and dir is None:
            dir = options.pop("dir")[-1]
        self._keep_dir = dir is not None
        self._dir_arg = None if dir is None else os.path.abspath(dir)
        self._port_arg = port
        self.host = host
        if "bind" in options:  # connect to the first address it listens on ('*': any, so loopback)
            first = options["bind"][-1].split()[0].lstrip("-") if options["bind"][-1].split() else host
            self.host = {"*": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::*": "::1", "::": "::1"}.get(first, first)
        self._options = options
        self._unixsocket_arg = unixsocket
        self.dir = ""
        self.port = 0
        self.unixsocket: str | None = None
        self.config: dict[str, str | list[str]] = {}
        self.pid: int | None = None
        self._started = False
        # process mode
        self._proc: subprocess.Popen[bytes] | template.ForkedServer | None = None
        self._output: IO[bytes] | None = None  # the child's stdout and stderr, an unlinked file
        self._final_log = ""  # the output, kept once the file is closed
        self._status_fd = -1
        self._life_fd = -1
        # thread mode
        self._thread: threading.Thread | None = None
        self._thread_log: io.StringIO | None = None
        self._thread_ready = threading.Event()
        self._thread_stop: Callable[[], None] | None = None
        self._cwd_before: str | None = None

    # ---- what the caller reads ----------------------------------------------------------------
    @property
    def url(self) -> str:
        """`redis://host:port/0`, or `unix://path?db=0` for a server without TCP."""
        if not self.port and self.unixsocket:
            return f"unix://{self.unixsocket}?db=0"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"redis://{host}:{self.port}/0"

    @property
    def log(self) -> str:
        """What the server wrote to its standard output and error (its log, unless `logfile` is set)."""
        if self._thread_log is not None:
            return self._thread_log.getvalue()
        if self._output is None:
            return self._final_log
        fd = self._output.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    @property
    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._thread is not None and self._thread.is_alive()

    def control(self, *args: str | bytes | int | float) -> object:
        """Send one of raxdb's test controls, `DEBUG <args...>`, to this server and return its
        reply (the handle's clock and fault methods are built on it); ControlError when the server
        refuses it or was started with `raxdb-test-controls no`."""
        return control.call(self.host, self.port, self.unixsocket, self._password(), "DEBUG", *args)

    def _password(self) -> str | None:
        return self._options.get("requirepass", [""])[-1] or None

    # ---- the clock (DEBUG CLOCK, server/commands/t_testclock.py) -----------------------------------
    def advance_time(self, seconds: float) -> None:
        """Move this server's clock forward by `seconds`: keys past their new deadline expire,
        blocked clients time out, idle times grow, all before this returns (no waiting)."""
        self.control("CLOCK", "ADVANCE", repr(float(seconds)))

    def freeze_time(self) -> None:
        """Stop this server's clock: no key expires and no blocked client times out until
        advance_time() or unfreeze_time(); commands are served as usual."""
        self.control("CLOCK", "FREEZE")

    def unfreeze_time(self) -> None:
        """Let the clock run again from the wall clock plus what advance_time() added (the time it
        stood still is caught up at once; it never moves back)."""
        self.control("CLOCK", "UNFREEZE")

    def reset_time(self) -> None:
        """Put the clock back on the wall clock, unfrozen, nothing advanced (it may move back)."""
        self.control("CLOCK", "RESET")

    def __repr__(self) -> str:
        return f"<raxdb.EmbeddedServer {self.mode} {self.url if self._started else '(not started)'}>"

    # ---- start and stop -----------------------------------------------------------------------
    def start(self) -> Self:
        """Start it and return once it serves; ServeError if it cannot."""
        self._check_not_started()
        try:
            for attempt in range(_ATTEMPTS):
                self._launch()
                if self._wait_ready():
                    return self
                self._after_failure(attempt)
        except BaseException:  # ServeError, and a Ctrl-C during the wait: no server left behind
            self.stop()
            raise
        raise AssertionError("unreachable")  # _after_failure raises on the last attempt

    async def astart(self) -> Self:
        """start() for a coroutine: the server is forked (or spawned) on the loop's thread (a few
        milliseconds; PR_SET_PDEATHSIG follows the thread that spawns a process, and the loop's lives
        as long as the loop; the first start in a process also waits there for the template's
        imports, once), and the loop goes on while the server starts."""
        self._check_not_started()
        try:
            for attempt in range(_ATTEMPTS):
                self._launch()
                if await self._await_ready():
                    return self
                self._after_failure(attempt)
        except BaseException:  # a cancelled task included: the server it was starting is stopped
            self.stop()
            raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stop the server (as SIGTERM does: a final save when configured), wait until it is gone,
        remove the temporary directory.  Idempotent."""
        self._close_fault_link()  # the connection kept while the server refuses others (embed/faults.py)
        try:
            if self._proc is not None:
                self._stop_process()
            elif self._thread is not None:
                self._stop_thread()
        finally:
            self._release()

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    close = stop  # what Python users reach for first; as harmless twice

    def __enter__(self) -> Self:
        """Starts it; a server that runs already (raxdb_factory's, a start()ed one) is entered as
        it is.  Either way the block's end stops it, as leaving `with open(...)` closes a file."""
        return self if self._entered_running() else self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self if self._entered_running() else await self.astart()

    def _entered_running(self) -> bool:
        return self._started and self.running

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.astop()

    # ---- the steps ----------------------------------------------------------------------------
    def _check_not_started(self) -> None:
        if self._started:
            raise RuntimeError("this server was started already: call serve() again for another one")
        self._started = True

    def _launch(self) -> None:
        """Choose the directory and port, build the arguments, and spawn the server (no waiting)."""
        if not self.dir:
            self.dir = self._dir_arg or tempfile.mkdtemp(prefix="raxdb-serve-")
            os.makedirs(self.dir, exist_ok=True)
        self.port = self._port_arg if self._port_arg is not None else free_port(self.host)
        options: dict[str, list[str]] = {"bind": [self.host], "port": [str(self.port)], "save": [""],
                                         "appendonly": ["no"], "repl-diskless-sync-delay": ["0"], "dir": [self.dir],
                                         "raxdb-test-controls": ["yes"]}
        if self.mode == "thread":
            options["set-proc-title"] = ["no"]  # the caller's process title is not the server's
        if self._unixsocket_arg:
            path = (os.path.join(self.dir, "raxdb.sock") if self._unixsocket_arg is True
                    else os.path.abspath(self._unixsocket_arg))
            options["unixsocket"] = [path]
        options.update(self._options)
        self.unixsocket = options["unixsocket"][-1] if options.get("unixsocket") else None
        self.config = {k: v[0] if len(v) == 1 else list(v) for k, v in options.items()}
        argv = [part for k, vs in options.items() for v in vs for part in (f"--{k}", v)]
        if self.mode == "process":
            self._spawn(argv)
        else:
            self._spawn_thread(argv)

    def _spawn(self, argv: list[str]) -> None:
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _release
        status_r, status_w = os.pipe()
        life_r, life_w = os.pipe()
        env = _child_env()
        try:
            try:  # forked from this process's template (raxdb/embed/template.py), where there is one
                self._proc = template.fork_server(argv, self.dir, env, (status_w, life_r, self._output.fileno()))
            except ChildProcessError as exc:  # it could not fork (EAGAIN, ENOMEM): neither could we
                raise ServeError(f"raxdb did not start: {exc}", "") from None
            if self._proc is None:
                self._proc = self._popen(argv, env, status_w, life_r)
        except BaseException:
            os.close(status_r)
            os.close(life_w)
            raise
        finally:
            os.close(status_w)  # the child's ends: ours closed, so EOF means the child is gone
            os.close(life_r)
        self._status_fd, self._life_fd = status_r, life_w
        self.pid = self._proc.pid

    def _popen(self, argv: list[str], env: dict[str, str], status_w: int, life_r: int) -> subprocess.Popen[bytes]:
        """`python -m raxdb.embed.child`: the spawn without a template."""
        # PR_SET_PDEATHSIG fires when the spawning thread ends: asked for only from the main thread
        pdeathsig = "1" if threading.current_thread() is threading.main_thread() else "0"
        cmd = [sys.executable, "-m", "raxdb.embed.child", str(status_w), str(life_r), str(os.getpid()), pdeathsig,
               "--", *argv]
        # its own session: a Ctrl-C at the terminal reaches the caller, which stops the server,
        # not the server directly
        return subprocess.Popen(cmd, cwd=self.dir, env=env, stdin=subprocess.DEVNULL, stdout=self._output,
                                stderr=subprocess.STDOUT, pass_fds=(status_w, life_r), start_new_session=True)

    def _spawn_thread(self, argv: list[str]) -> None:
        from raxdb.server.main import run_embedded

        self._thread_log = io.StringIO()
        self._thread_ready.clear()
        self._thread_stop = None
        self._cwd_before = os.getcwd()
        log = self._thread_log

        def on_ready(stop: Callable[[], None]) -> None:
            self._thread_stop = stop
            self._thread_ready.set()

        def run() -> None:
            try:
                run_embedded(argv, log, on_ready)
            except SystemExit:  # a failure to start, already logged
                pass
            except BaseException:
                log.write(traceback.format_exc())
            finally:
                self._thread_ready.set()  # also when it ends without having served

        self._thread = threading.Thread(target=run, name=f"raxdb-serve-{self.port}", daemon=True)
        self._thread.start()
        self.pid = os.getpid()

    def _wait_ready(self) -> bool:
        """True once the server serves; False if it ended first; ServeError after `timeout`."""
        if self._thread is not None:
            if not self._thread_ready.wait(self.timeout):
                return self._timed_out()
            if self._thread_stop is None:
                self._thread.join()
                return False
            return True
        if not select.select([self._status_fd], [], [], self.timeout)[0]:
            return self._timed_out()
        return self._read_status()

    async def _await_ready(self) -> bool:
        """_wait_ready on the loop: the status pipe watched by the loop itself, so a cancelled
        start leaves no thread behind reading a descriptor that stop() closes."""
        if self._thread is not None:
            return await asyncio.to_thread(self._wait_ready)
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        def ready() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(self._status_fd, ready)
        try:
            await asyncio.wait_for(readable, self.timeout)
        except TimeoutError:
            return self._timed_out()
        finally:
            loop.remove_reader(self._status_fd)
        return self._read_status()

    def _read_status(self) -> bool:
        """The status pipe is readable: "ready" (written at once: one read gets it), or EOF."""
        if not os.read(self._status_fd, 64):  # the child exited before it served
            assert self._proc is not None
            self._proc.wait()
            return False
        os.close(self._status_fd)
        self._status_fd = -1
        return True

    def _timed_out(self) -> bool:
        log = self.log
        self.stop()
        raise ServeError(f"raxdb did not start within {self.timeout} s", log)

    def _after_failure(self, attempt: int) -> None:
        """After a start that failed: ready to try again on another port, or ServeError."""
        log = self.log
        code = self._proc.returncode if self._proc is not None else None
        self.stop()
        in_use = f"Failed listening on port {self.port} (TCP)" in log and os.strerror(errno.EADDRINUSE) in log
        if in_use and self._port_arg is None and attempt + 1 < _ATTEMPTS:
            self.dir = "" if not self._keep_dir else self.dir  # a new temporary directory, as a new start
            return
        status = f" (exit status {code})" if code is not None else ""
        raise ServeError(f"raxdb did not start{status}", log)

    def _stop_process(self) -> None:
        proc = self._proc
        assert proc is not None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _stop_thread(self) -> None:
        thread = self._thread
        assert thread is not None
        if self._thread_stop is None and thread.is_alive():
            self._thread_ready.wait(self.timeout)  # still starting (a cancelled start): stopped once it serves
        if self._thread_stop is not None:
            self._thread_stop()
        thread.join(STOP_TIMEOUT)
        if self._cwd_before is not None:  # `dir` moved the whole process
            os.chdir(self._cwd_before)
            self._cwd_before = None

    def _release(self) -> None:
        for fd in (self._status_fd, self._life_fd):
            if fd >= 0:
                os.close(fd)
        self._status_fd = self._life_fd = -1
        if isinstance(self._proc, template.ForkedServer):
            self._proc.close()
        if self._output is not None:
            self._final_log = self.log
            self._output.close()
            self._output = None
        if self.dir and not self._keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def _key(name: str) -> str:
    return name.lstrip("-").lower()


def _values(value: ConfigValue) -> list[str]:
    if isinstance(value, (str, int, float, bool)):
        return [_value(value)]
    return [_value(v) for v in value]


def _value(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def free_port(host: str) -> int:
    """A TCP port free on `host` now (bound to port 0, then released): another process may take it
    before it is used, which the callers allow for."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    """The child imports the same raxdb as this process: a checkout's folder goes first on
    PYTHONPATH (it is not on the child's path otherwise, as the child's working directory is the
    server's); an installed raxdb is found by the same interpreter anyway, and its site-packages
    put on PYTHONPATH would come before the standard library."""
    import raxdb

    root = os.path.dirname(os.path.dirname(os.path.abspath(raxdb.__file__)))  # links not resolved
    env = dict(os.environ)
    installed = {os.path.abspath(p) for p in (*site.getsitepackages(), site.getusersitepackages(),
                                              sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))}
    if root not in installed:
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
