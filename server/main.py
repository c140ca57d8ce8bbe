"""Entry point: `raxdb-server [/path/to/redis.conf] [--option value ...]` (also `python -m raxdb.server`).

Parses configuration exactly as redis-server does (file first, then command-line options grouped
into config lines), refuses bad options with Redis's FATAL CONFIG FILE ERROR text and exit code 1,
then runs the server on uvloop (asyncio's own loop where uvloop is not installed) until
SIGINT/SIGTERM or SHUTDOWN.  Start-up imports what it needs inside the functions below, so that
importing this module (as raxdb.embed does) costs nothing.

The embedding API (raxdb.embed) starts servers through here only: `main(argv, on_ready)` in a child
process it spawned, `run_embedded` in a thread of its caller.  Only `main` touches what belongs to
the whole process (signal handlers, the crash handlers, the collector's settings, malloc's thresholds,
daemonizing, supervision); `run_embedded` leaves them as its caller has them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from raxdb.server.base import compiled
from raxdb.server.base.log import LOG

if TYPE_CHECKING:
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server

# The collector's thresholds.  A young collection walks what survived since the last one (the
# count rises at each tracked object made and falls at each one freed, so a request's short-lived
# lists never reach it), and the request that came in at that moment waits for it: the first
# threshold bounds that walk.  A collection of generation 1 walks what survived the young ones
# since the last, ~3x the first threshold (new keys of a container type all survive), so it runs
# after 2 young collections, not Python's 10; the full collection after 2000 x 2 x 1000 = 4M
# survivors, as (10000, 2, 200) had it (docs/speed-log.md, 2026-11-29, h-tail).
GC_THRESHOLDS = (2000, 2, 1000)


def main(argv: list[str] | None = None, on_ready: Callable[[], None] | None = None) -> None:
    """`on_ready`: called on the loop once the server serves (raxdb.embed's child process)."""
    # The collector sleeps through start-up: the imports and the tables they build allocate many
    # objects that live forever and few cycles, and each collection on the way would walk them all
    # again.  They are frozen once the server is built: gc.freeze's documented pattern.
    gc.disable()
    try:
        _main(sys.argv[1:] if argv is None else argv, on_ready)
    finally:
        gc.enable()


def _main(args: list[str], on_ready: Callable[[], None] | None) -> None:
    interpreted = _check_the_build()
    from raxdb.server.admin import crashreport, supervise
    from raxdb.server.base.version import RAXDB_VERSION, VERSION
    from raxdb.server.core import Server
    if args and args[0] in ("-v", "--version"):

        print(f"raxdb v={RAXDB_VERSION} (Redis {VERSION} compatible)")
        return
    if args and args[0] in ("-h", "--help"):
        print("Usage: raxdb-server [/path/to/redis.conf] [options]\n"
              "Examples:\n  raxdb-server (run with embedded defaults)\n  raxdb-server --port 7777\n"
              "  raxdb-server /etc/redis/6379.conf --loglevel verbose")
        return
    config = load_config(args, sys.stderr)
    LOG.configure(config.values["loglevel"], config.values["logfile"])
    if config.values["syslog-enabled"] == "yes":
        LOG.open_syslog(config.values["syslog-ident"], config.values["syslog-facility"])
    # Supervision, then the fork into the background, before any thread or loop exists
    # (server/admin/supervise.py)
    supervised = supervise.detect(config)
    daemonized = config.values["daemonize"] == "yes" and supervised == "no"
    if daemonized:
        supervise.daemonize()
    LOG.notice("oO0OoO0OoO0Oo raxdb is starting oO0OoO0OoO0Oo")
    if len(interpreted) == len(compiled.HOT_MODULES) + len(compiled.C_MODULES):
        LOG.notice("No compiled modules: running interpreted (built with RAXDB_PURE=1 or without a C compiler)")
    elif interpreted:  # a mixed build: some failed to compile (setup.py's extensions are optional)
        LOG.warning(f"WARNING: these hot modules run interpreted, their compiled copy missing: {', '.join(interpreted)}; "
                    "`make build` compiles them again and shows the compiler's error")
    if not args:  # as redis-server: options alone, or a config from stdin, count as a configuration
        LOG.warning("Warning: no config file specified, using the default config. In order to specify a "
                    "config file use raxdb-server /path/to/redis.conf")
    else:
        LOG.warning("Configuration loaded")
    srv = Server(config)  # type: ignore[abstract]  # the attach functions set the rest of its protocol
    srv.supervised, srv.daemonized = supervised, daemonized
    srv.on_ready = _ready(srv, on_ready)
    crashreport.install(srv)  # crash reports on fatal signals, the software watchdog
    if os.environ.get("RAXDB_PAUSES", "") not in ("", "0"):  # the pause recorder, a bench aid (server/admin/pauses.py)
        from raxdb.server.admin import pauses
        pauses.install(srv)
    # Start-up objects (modules, the command table, config) live forever: move them out of the
    # collector's reach so generation-2 collections only walk the data; then the collector's bounds
    # (GC_THRESHOLDS).
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()
    with _runner() as runner:
        loop = runner.get_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, _on_signal, srv, sig)
        runner.run(srv.serve())


def _ready(srv: Server, on_ready: Callable[[], None] | None) -> Callable[[], None]:
    """What the server calls once it serves: `on_ready`, then the command families not imported
    yet (server/commands/__init__.py), one a turn of the loop, and their objects frozen as the
    start-up objects are (whatever clients made meanwhile with them: few objects, and only their
    cycles would be kept).  Not when the server loaded a dataset before it served: a freeze then
    would take the loaded keys too, and a frozen key's cycles (a stream's consumer groups) would
    never be collected once it is deleted; the families' objects stay with the collector.  After
    the families, the working tree's stale compiled modules are named in the log (a warning)."""
    def ready() -> None:
        from raxdb.server.commands import import_when_idle
        if on_ready is not None:
            on_ready()
        loaded = any(len(db) for db in srv.dbs)

        def settled() -> None:
            # The C heap's policy after the first PONG: it imports ctypes (~5 M instructions).  A
            # dataset loaded at start-up grew before it, under glibc's own adaptive threshold (its
            # big arrays in glibc's mappings, grown by mremap): the same resident set a key as
            # with the hook installed before the load (docs/speed-log.md, 2026-11-29, h-loadhook)
            from raxdb.server.base import heap
            heap.keep_big_blocks()  # big replies and arguments reuse freed pages (server/base/heap.py)
            from raxdb.server.memory import bigarrays
            if bigarrays.install():  # growing big arrays in mappings of their own (server/memory/bigarrays.py)
                LOG.verbose("Big growing arrays in mappings of their own.")
            # Left by start-up to first use, and imported now so that no first command waits for
            # them (~1 ms each): a script's SHA1, a password's check (table/scriptflags, security/acl)
            import hashlib  # noqa: F401
            import hmac  # noqa: F401
            # A working tree's compiled modules older than their source (server/base/compiled.py):
            # a walk of the whole tree, so once serving rather than before the first PONG
            stale = compiled.stale_modules()
            if stale:
                LOG.warning(f"WARNING: compiled modules older than their source, running the old code: "
                            f"{', '.join(stale)}; `make build` compiles them again")
            if not loaded:
                gc.freeze()
        import_when_idle(asyncio.get_running_loop(), settled)
    return ready


def preload() -> None:
    """Import what start-up imports before it reads a configuration (main's and load_config's
    imports, and the event loop's), and do nothing else: no loop, no thread, no handler, no
    configuration.  For a process that forks servers (raxdb.embed's template): each fork then
    starts at load_config with these modules imported once for all of them."""
    # Once for all forks: the codec a str host name costs getaddrinfo (a replica's master, a
    # non-ASCII `bind`), and hashlib and hmac, which a started server imports once it serves (_ready)
    import encodings.idna  # noqa: F401
    import hashlib  # noqa: F401
    import hmac  # noqa: F401

    import raxdb.server.admin.crashreport  # noqa: F401
    import raxdb.server.admin.supervise  # noqa: F401
    import raxdb.server.base.version  # noqa: F401
    import raxdb.server.core  # noqa: F401
    import raxdb.server.events.notify  # noqa: F401

    # what a shell start leaves to first use and the command families do not import: the replica
    # side (a first REPLICAOF) and the command table's trees (a first COMMAND INFO, DOCS, key spec)
    import raxdb.server.replication.replica  # noqa: F401
    from raxdb.server.commands import import_all
    from raxdb.server.config.options import Config  # noqa: F401
    from raxdb.server.table.metadata import decode_all

    try:
        import uvloop  # noqa: F401
    except ImportError:  # _runner says so when it starts the loop
        pass
    import_all()  # every command family: the forks then never import one on first use
    decode_all()


def _check_the_build() -> list[str]:
    """Import the server; a mixed build (some hot modules compiled, some not: the compiled ones
    reach into their neighbours' C declarations) that cannot load stops here with the names of the
    modules to rebuild, rather than with a traceback from deep in an import.  The hot modules that
    run interpreted (a look for ~60 files: once a start)."""
    try:
        import raxdb.server.commands  # noqa: F401 - the command table (families load on first use)
        import raxdb.server.core  # noqa: F401
        interpreted = compiled.interpreted_hot_modules()
        if 0 < len(interpreted) < len(compiled.HOT_MODULES) + len(compiled.C_MODULES):
            raxdb.server.commands.import_all()  # a mixed build: every family now, to fail here if one cannot load
        return interpreted
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        interpreted = compiled.interpreted_hot_modules()
        if not interpreted or len(interpreted) == len(compiled.HOT_MODULES) + len(compiled.C_MODULES):
            raise
        sys.stderr.write(f"FATAL: a mixed build cannot load ({type(exc).__name__}: {exc}). These hot modules have "
                         f"no compiled copy: {', '.join(interpreted)}. `make build` compiles them again and shows "
                         "the compiler's error; `make build PURE=1` runs everything interpreted.\n")
        raise SystemExit(1) from None


def load_config(args: list[str], errors: TextIO) -> Config:
    """The configuration `args` give, as redis-server reads it; a bad one writes Redis's FATAL
    CONFIG FILE ERROR report to `errors` and raises SystemExit(1)."""
    # The command table, and the modules that own option validators (notify-keyspace-events),
    # load before the configuration is read, so a bad value stops start-up like any other.
    import raxdb.server.commands  # noqa: F401 - registers every command (families load on first use)
    import raxdb.server.events.notify  # noqa: F401
    from raxdb.server.config.options import Config, FatalConfigError

    config = Config()
    try:
        config.load_argv(args)
    except FatalConfigError as exc:
        print(str(exc), file=errors, flush=True)
        raise SystemExit(1) from None
    return config


def run_embedded(args: list[str], log: TextIO, on_ready: Callable[[Callable[[], None]], None]) -> None:
    """A server on a new event loop in the calling thread (not the main thread: no signal handler
    is installed), until it is stopped or SHUTDOWN.  Its log goes to `log` unless `logfile` is set;
    a failure to start is logged there and raises SystemExit(1), as the process would exit.
    `on_ready(stop)`, called on the loop once it serves, gets a function any thread may call to
    stop it (a shutdown as SIGTERM's, without the save when that fails).  Process-wide state is left
    alone, but the log and the command table are the process's, shared by the servers it runs, and
    `dir` changes the process's working directory, as it does redis-server's."""
    from raxdb.server.core import Server

    config = load_config(args, log)
    LOG.configure(config.values["loglevel"], config.values["logfile"])
    if not config.values["logfile"]:
        LOG.stream = log
    LOG.notice("oO0OoO0OoO0Oo raxdb is starting oO0OoO0OoO0Oo (embedded, in a thread)")
    srv = Server(config)  # type: ignore[abstract]  # the attach functions set the rest of its protocol
    with _runner() as runner:
        loop = runner.get_loop()

        def stop() -> None:
            try:
                loop.call_soon_threadsafe(_stop_embedded, srv)
            except RuntimeError:  # the loop is closed: the server already stopped (SHUTDOWN)
                pass

        srv.on_ready = lambda: on_ready(stop)
        runner.run(srv.serve())


def _stop_embedded(srv: Server) -> None:
    if srv.shutting_down:
        return
    srv.shutdown.prepare(None, True, False)
    if not srv.shutting_down:  # the final save failed: stop all the same, the caller asked
        srv.request_shutdown()


def _runner() -> asyncio.Runner:
    """A runner on uvloop's event loop; without uvloop (optional: no wheel for the platform, as on
    Windows, and no C compiler), on asyncio's own, and the log says so."""
    try:
        import uvloop
    except ImportError:
        LOG.notice("uvloop is not installed: running on asyncio's own event loop (slower)")
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


def _on_signal(srv, sig: int) -> None:
    """SIGINT / SIGTERM: a shutdown the cron starts (server/admin/shutdown.py), as Redis schedules it."""
    if not srv.shutting_down:
        srv.shutdown.on_signal(sig)


if __name__ == "__main__":
    main()
