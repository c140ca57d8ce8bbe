"""Entry point: `raxdb-server [/path/to/redis.conf] [--option value ...]` (also `python -m raxdb.server`).

Parses configuration exactly as redis-server does (file first, then command-line options grouped
into config lines), refuses bad options with Redis's FATAL CONFIG FILE ERROR text and exit code 1,
then runs the server on uvloop (asyncio's own loop where uvloop is not installed) until
SIGINT/SIGTERM or SHUTDOWN.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from collections.abc import Callable

from raxdb.server.base import compiled
from raxdb.server.base.log import LOG


def main(argv: list[str] | None = None) -> None:
    # The collector sleeps through start-up: the imports and the tables they build allocate many
    # objects that live forever and few cycles, and each collection on the way would walk them all
    # again.  They are frozen once the server is built (`_serve`): gc.freeze's documented pattern.
    gc.disable()
    try:
        _main(sys.argv[1:] if argv is None else argv)
    finally:
        gc.enable()


def _main(args: list[str]) -> None:
    # Every command module, and the modules that own option validators (notify-keyspace-events),
    # load before the configuration is read, so a bad value stops start-up like any other.
    import raxdb.server.commands  # noqa: F401 - registers every command handler
    import raxdb.server.events.notify  # noqa: F401
    from raxdb.server.admin import crashreport, supervise
    from raxdb.server.base.version import RAXDB_VERSION, VERSION
    from raxdb.server.config.options import Config, FatalConfigError
    from raxdb.server.core import Server
    if args and args[0] in ("-v", "--version"):

        print(f"raxdb v={RAXDB_VERSION} (Redis {VERSION} compatible)")
        return
    if args and args[0] in ("-h", "--help"):
        print("Usage: raxdb-server [/path/to/redis.conf] [options]\n"
              "Examples:\n  raxdb-server (run with embedded defaults)\n  raxdb-server --port 7777\n"
              "  raxdb-server /etc/redis/6379.conf --loglevel verbose")
        return
    config = Config()
    try:
        config.load_argv(args)
    except FatalConfigError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(1) from None
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
    if not compiled.compiled_modules():
        LOG.notice("No compiled modules: running interpreted (built with RAXDB_PURE=1 or without a C compiler)")
    stale = compiled.stale_modules()
    if stale:
        LOG.warning(f"WARNING: compiled modules older than their source, running the old code: {', '.join(stale)}; "
                    "`make build` compiles them again")
    if not args:  # as redis-server: options alone, or a config from stdin, count as a configuration
        LOG.warning("Warning: no config file specified, using the default config. In order to specify a "
                    "config file use raxdb-server /path/to/redis.conf")
    else:
        LOG.warning("Configuration loaded")
    srv = Server(config)
    srv.supervised, srv.daemonized = supervised, daemonized
    crashreport.install(srv)  # crash reports on fatal signals, the software watchdog
    # Start-up objects (modules, the command table, config) live forever: move them out of the
    # collector's reach so generation-2 collections only walk the data, and collect young objects
    # less often (request handling allocates short-lived lists at a high rate).
    gc.freeze()
    gc.set_threshold(10000, 20, 20)
    gc.enable()
    runner = asyncio.Runner(loop_factory=_loop_factory())
    with runner:
        loop = runner.get_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, _on_signal, srv, sig)
        runner.run(srv.serve())


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop; without uvloop (optional: no wheel for the platform, as on Windows, and
    no C compiler), asyncio's own, and the log says so."""
    try:
        import uvloop
    except ImportError:
        LOG.notice("uvloop is not installed: running on asyncio's own event loop (slower)")
        return None
    return uvloop.new_event_loop


def _on_signal(srv, sig: int) -> None:  # type: ignore[no-untyped-def]
    """SIGINT / SIGTERM: a shutdown the cron starts (server/admin/shutdown.py), as Redis schedules it."""
    if not srv.shutting_down:
        srv.shutdown.on_signal(sig)


if __name__ == "__main__":
    main()
