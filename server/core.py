"""The server object: configuration, databases, connected clients, statistics, the cron.

There is one `Server` per process, reachable from every client as `client.server`.  Everything
here runs on the event loop thread; commands execute one at a time, which is raxdb's atomicity
exactly as Redis's single thread is Redis's.

The cached clock: `now_ms` is refreshed at every read event and cron tick, and commands use it
for expiry decisions, so a key cannot expire half-way through a command or a pipeline batch
(Redis's server.mstime plays the same role).

Bookkeeping that most workloads never use (WATCH, keyspace notifications, blocked clients,
MONITOR, CLIENT PAUSE) is guarded by emptiness checks so it costs nothing until it is used.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from typing import TYPE_CHECKING, Any

from server.commands.table import TABLE
from server.config import Config
from server.log import LOG
from storage.keyspace import Database

if TYPE_CHECKING:
    from server.client import Client

VERSION = "7.0.15"  # the Redis version raxdb speaks for (INFO redis_version, HELLO)
RAXDB_VERSION = "0.1.0"


class Server:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.table = TABLE
        self.dbs = [Database(i) for i in range(config.databases)]
        for db in self.dbs:
            db.expired_hook = self._on_expired
        from server.commands.t_keys import attach as attach_keyspace

        attach_keyspace(self)  # dbs read the cached clock (access times); LFU follows the config
        self.clients: dict[int, Client] = {}
        self.next_client_id = 1
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listeners: list[asyncio.base_events.Server] = []
        self.pid = os.getpid()
        self.run_id = os.urandom(20).hex()
        self.start_time = time.time()
        self.now_ms = int(self.start_time * 1000)
        self.shutting_down = False
        self.shutdown_event: asyncio.Event | None = None
        self.cron_handle: asyncio.TimerHandle | None = None
        self.cronloops = 0
        # statistics (INFO stats)
        self.stat_numconnections = 0
        self.stat_rejected_conn = 0
        self.stat_net_input_bytes = 0
        self.stat_net_output_bytes = 0
        self.stat_keyspace_hits = 0
        self.stat_keyspace_misses = 0
        self.stat_expired_keys = 0
        self.stat_total_error_replies = 0
        self.stat_unexpected_error_replies = 0
        self.errorstats: dict[str, int] = {}
        self.ops_samples: collections.deque[tuple[int, int]] = collections.deque(maxlen=16)
        self.slowlog: collections.deque[Any] = collections.deque()
        self.slowlog_next_id = 0
        self.monitors: list[Client] = []
        self.dirty = 0  # changes since the last save (INFO rdb_changes_since_last_save)
        self.lastsave = int(self.start_time)
        self.pause_until_ms = 0
        self.pause_writes_only = False
        self.hooks_after_command: list[Any] = []
        self.watchers = 0  # clients with WATCHed keys (guards modified-key work)
        self.notify_flags = 0  # keyspace notification classes enabled (0: none)
        from server.notify import attach as attach_notify

        attach_notify(self)  # Pub/Sub registry, notify-keyspace-events, expiry events and WATCH

    # ---- clock and stats ---------------------------------------------------------------------
    def update_clock(self) -> int:
        self.now_ms = now = int(time.time() * 1000)
        return now

    def count_error(self, msg: bytes) -> None:
        """errorstats: the error code is the reply's first word."""
        sp = msg.find(b" ")
        code = (msg[:sp] if sp > 0 else msg).decode(errors="replace")
        self.errorstats[code] = self.errorstats.get(code, 0) + 1
        self.stat_total_error_replies += 1

    def total_commands(self) -> int:
        n = 0
        for cmd in self.table.commands.values():
            n += cmd.calls
            for sub in cmd.subcommands.values():
                n += sub.calls
        return n

    def _on_expired(self, db: Database, key: bytes) -> None:
        self.stat_expired_keys += 1
        self.dirty += 1

    def db(self, index: int) -> Database:
        return self.dbs[index]

    # ---- lifecycle ----------------------------------------------------------------------------
    async def serve(self) -> None:
        from server.client import Client

        self.loop = loop = asyncio.get_running_loop()
        self.shutdown_event = asyncio.Event()
        binds = [b for b in self.config.values["bind"].split() if b]
        port = self.config.port
        for addr in binds:
            optional = addr.startswith("-")
            host = addr.lstrip("-")
            if host == "*":
                host = "0.0.0.0"
            if host == "::*":
                host = "::"
            try:
                srv = await loop.create_server(lambda: Client(self), host, port, reuse_address=True,
                                               backlog=int(self.config.values["tcp-backlog"]))
            except OSError as exc:
                if optional:
                    continue
                LOG.warning(f"Warning: Could not create server TCP listening socket {host}:{port}: {exc}")
                raise SystemExit(1) from exc
            self.listeners.append(srv)
        if port == 0:
            LOG.notice("Port 0: not listening on TCP")
        self.config.on_change.setdefault("hz", []).append(lambda _v: None)
        self._schedule_cron()
        LOG.notice(f"Server initialized (raxdb {RAXDB_VERSION}, Redis {VERSION} compatible), port {port}")
        LOG.notice("Ready to accept connections tcp")
        await self.shutdown_event.wait()
        await self.close()

    def request_shutdown(self) -> None:
        if self.shutdown_event is not None and not self.shutdown_event.is_set():
            self.shutting_down = True
            self.shutdown_event.set()

    async def close(self) -> None:
        LOG.warning("User requested shutdown...")
        if self.cron_handle is not None:
            self.cron_handle.cancel()
        for srv in self.listeners:
            srv.close()
        for client in list(self.clients.values()):
            client.close()
        LOG.warning("Redis is now ready to exit, bye bye...")

    # ---- cron ---------------------------------------------------------------------------------
    def _schedule_cron(self) -> None:
        assert self.loop is not None
        self.cron_handle = self.loop.call_later(1.0 / self.config.hz, self._cron)

    def _cron(self) -> None:
        now = self.update_clock()
        self.cronloops += 1
        # Active expiry: bounded work per tick, like Redis's ACTIVE_EXPIRE_CYCLE time limit.
        budget = 2000
        for db in self.dbs:
            if db.expires:
                budget -= db.active_expire(now, budget)
                if budget <= 0:
                    break
        if self.cronloops % max(1, self.config.hz // 10) == 0:
            self.ops_samples.append((now, self.total_commands()))
        timeout = self.config.timeout
        if timeout and self.cronloops % self.config.hz == 0:
            limit = now - timeout * 1000
            for client in list(self.clients.values()):
                if client.last_interaction < limit and client.idle_timeout_applies():
                    client.close()
        self._schedule_cron()

    def instantaneous_ops(self) -> int:
        s = self.ops_samples
        if len(s) < 2:
            return 0
        (t0, n0), (t1, n1) = s[0], s[-1]
        return int((n1 - n0) * 1000 / max(1, t1 - t0))
