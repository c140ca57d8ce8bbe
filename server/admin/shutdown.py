"""Shutting down as Redis 7.0 does (server.c's prepareForShutdown, finishShutdown, abortShutdown,
sigShutdownHandler; db.c's shutdownCommand).

A SIGTERM or SIGINT only schedules the shutdown (`asap`); the cron acts on it, with the flags
shutdown-on-sigterm / shutdown-on-sigint give.  SHUTDOWN acts at once.  Either way, unless NOW
was given or shutdown-timeout is 0, a master whose replicas have not all acknowledged its offset
first waits for them: writes are paused (a pause of its own purpose), the replicas are asked for
an ACK, and the cron finishes the shutdown once they all caught up or shutdown-timeout passed
(`deadline_ms` is set exactly while waiting).  A SHUTDOWN that started or joined the wait gets no
reply unless the shutdown fails or SHUTDOWN ABORT cancels it: then "Errors trying to SHUTDOWN"
(the clients waiting are `waiters`; unlike Redis's BLOCKED_SHUTDOWN they are not blocked, but
writes are paused for everyone).  Finishing logs the lagging replicas, then Server.finish_shutdown
saves (or fails, and the server runs on) and the loop ends.  A second SIGINT while a shutdown is
scheduled, waiting or saving exits at once, as Redis does (during the final save, which holds the
event loop, from a handler of its own).
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.server.admin import supervise
from raxdb.server.base import clock
from raxdb.server.base.clock import PAUSE_FOREVER
from raxdb.server.base.files import remove_quietly
from raxdb.server.base.log import LOG
from raxdb.server.replication.master import ONLINE, STATE_NAMES

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

SHUTDOWN_ERROR = "ERR Errors trying to SHUTDOWN. Check logs."


def announce(srv: Server) -> None:
    """prepareForShutdown's opening, for SHUTDOWN, signals and DEBUG RESTART alike: the log
    line, and STOPPING=1 to a supervisor (systemd)."""
    LOG.warning("User requested shutdown...")
    supervise.status(srv, "STOPPING=1\n")


class Shutdown:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.asap = False  # a signal asked for a shutdown the cron has not started yet
        self.last_sig = 0
        self.deadline_ms = 0  # shutdown_mstime: non-zero while waiting for replicas
        self.save: bool | None = None
        self.force = False
        self.waiters: list[Client] = []

    # ---- signals --------------------------------------------------------------------------------
    def on_signal(self, sig: int) -> None:
        """sigShutdownHandler: schedule; a second SIGINT exits now."""
        if self.asap and sig == signal.SIGINT:
            self._insist()
        if self.srv.persistence.stats.get("loading"):  # acted on between slices (server/persistence/loading.py)
            LOG.warning("Received shutdown signal during loading, scheduling shutdown.")
        else:
            LOG.warning(f"Received {'SIGINT' if sig == signal.SIGINT else 'SIGTERM'} scheduling shutdown...")
        self.asap = True
        self.last_sig = sig

    @staticmethod
    def _insist(*_args: object) -> None:
        LOG.warning("You insist... exiting now.")
        remove_quietly(f"temp-{os.getpid()}.rdb")
        os._exit(1)  # not a clean shutdown

    def cron(self) -> None:
        """serverCron's part: start what a signal scheduled, or finish a wait that is over."""
        if self.asap and not self.deadline_ms:
            option = "shutdown-on-sigint" if self.last_sig == signal.SIGINT else "shutdown-on-sigterm"
            words = self.srv.config.values[option].split()
            save = True if "save" in words else False if "nosave" in words else None
            self.prepare(save, "now" in words, "force" in words)
        elif self.deadline_ms and (self.srv.now_ms >= self.deadline_ms or self._replicas_caught_up()):
            self.finish()

    # ---- SHUTDOWN ---------------------------------------------------------------------------------
    def command(self, c: Client, save: bool | None, now: bool, force: bool) -> None:
        """SHUTDOWN without ABORT: no reply while the server ends or waits; if it fails, the
        error comes as to every SHUTDOWN waiting (cancelShutdown)."""
        self.waiters.append(c)
        self.prepare(save, now, force)

    def prepare(self, save: bool | None, now: bool, force: bool) -> None:
        """prepareForShutdown: the server ends, or waits for its replicas, or (the failure logged,
        the waiting SHUTDOWN clients answered) runs on."""
        if self.deadline_ms:
            return
        srv = self.srv
        if srv.persistence.stats.get("loading"):
            save = False
        self.save, self.force = save, force
        announce(srv)
        if not now and int(srv.config.values["shutdown-timeout"]) and not self._replicas_caught_up():
            self.deadline_ms = srv.now_ms + int(srv.config.values["shutdown-timeout"]) * 1000
            if not srv.paused():
                srv.repl.master.request_acks()
            srv.pause(PAUSE_FOREVER, True, "shutdown")
            LOG.notice("Waiting for replicas before shutting down.")
            return
        self.finish()

    def finish(self) -> None:
        """finishShutdown: the lagging replicas logged, then the save and the end of the loop; or
        the error, the shutdown cancelled."""
        repl = self.srv.repl
        offset = repl.master_repl_offset
        lagging = 0
        for r in repl.replicas:
            if r.ack_off != offset:
                lagging += 1
                lag = int(clock.seconds(self.srv)) - r.ack_time if r.state == ONLINE else 0
                LOG.warning(f"Lagging replica {r.name()} reported offset {offset - r.ack_off} behind master, "
                            f"lag={lag}, state={STATE_NAMES.get(r.state, '')}.")
        if repl.replicas:
            LOG.notice(f"{len(repl.replicas) - lagging} of {len(repl.replicas)} replicas are in sync when "
                       "shutting down.")
        if self.asap:
            # the final save holds the event loop, so a second SIGINT must act from the signal
            # handler itself, as Redis's does: exit now, the temp file removed
            previous = signal.signal(signal.SIGINT, self._insist)
            try:
                ok = self.srv.finish_shutdown(self.save, self.force)
            finally:
                signal.signal(signal.SIGINT, previous)
        else:
            ok = self.srv.finish_shutdown(self.save, self.force)
        if not ok:
            LOG.warning("Errors trying to shut down the server. Check the logs for more information.")
            self._cancel()
            return
        self.srv.request_shutdown()

    def abort(self) -> bool:
        """abortShutdown: False if no shutdown was scheduled or waiting."""
        if self.deadline_ms:
            self._cancel()
        elif self.asap:
            self.asap = False
        else:
            return False
        LOG.notice("Shutdown manually aborted.")
        return True

    def _cancel(self) -> None:
        """cancelShutdown: the waiting SHUTDOWN clients get the error, writes resume."""
        self.asap = False
        self.deadline_ms = 0
        self.last_sig = 0
        for c in self.waiters:
            if not c.closed:
                c.write(R.error(SHUTDOWN_ERROR.encode()))
        self.waiters = []
        self.srv.unpause("shutdown")

    def waiting(self) -> int:
        """The SHUTDOWN clients waiting (INFO's blocked_clients counts them, BLOCKED_SHUTDOWN)."""
        return sum(1 for c in self.waiters if not c.closed)

    def _replicas_caught_up(self) -> bool:
        """isReadyToShutdown: every replica acknowledged the master's offset."""
        repl = self.srv.repl
        return all(r.ack_off == repl.master_repl_offset for r in repl.replicas)
