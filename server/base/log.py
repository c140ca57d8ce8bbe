"""Redis-style log lines: `pid:M 21 Nov 2026 01:18:00.123 * message`.

The level characters are Redis's (. debug, - verbose, * notice, # warning) so log scrapers and
humans used to redis-server read raxdb's logs the same way.  Output goes to stdout, or to the
`logfile` option's file, opened for each message as Redis opens it, so that a log rotated by
renaming it (Debian's logrotate rule for redis-server has no copytruncate and no signal) goes on
in a new file at the same path; with `syslog-enabled yes` every message also goes to syslog, without
the prefix (syslog adds its own), under `syslog-ident` and `syslog-facility`, at the syslog level
of its Redis level, as serverLogRaw sends it.
"""

from __future__ import annotations

import os
import sys
import syslog
import time
from collections.abc import Callable
from typing import TextIO

LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
_CHARS = ".-*#"


_SYSLOG_LEVELS = (syslog.LOG_DEBUG, syslog.LOG_INFO, syslog.LOG_NOTICE, syslog.LOG_WARNING)
_FACILITIES = {"user": syslog.LOG_USER, **{f"local{i}": getattr(syslog, f"LOG_LOCAL{i}") for i in range(8)}}


class Log:
    def __init__(self) -> None:
        self.level = LEVELS["notice"]
        self.stream: TextIO = sys.stdout
        self.syslog: Callable[[int, str], None] | None = None
        self.path: str | None = None  # the logfile, or None for stdout
        # Redis's role character: "C" until the server is initialized (its pid is not yet the
        # server's, as in a forked child), then "M" or "S"
        self.role = "C"

    def configure(self, level: str, logfile: str) -> None:
        self.level = LEVELS.get(level, 2)
        if logfile:
            self.path = logfile
            # kept open for writers that need a descriptor (faulthandler) and for isatty()
            self.stream = open(logfile, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def _write(self, text: str) -> None:
        if self.path is None:
            try:
                self.stream.write(text)
                self.stream.flush()
            except OSError:
                pass  # as Redis: a closed stdout (its reader gone: EPIPE) loses the line, not the server
            return
        try:
            with open(self.path, "a") as fh:
                fh.write(text)
        except OSError:
            pass  # as Redis: a log that cannot be opened loses the line

    def open_syslog(self, ident: str, facility: str) -> None:
        """syslog-enabled: openlog as redis-server's main() calls it."""
        syslog.openlog(ident, syslog.LOG_PID | syslog.LOG_NDELAY | syslog.LOG_NOWAIT, _FACILITIES[facility])
        self.syslog = syslog.syslog

    def log(self, level: int, msg: str) -> None:
        if level < self.level:
            return
        now = time.time()
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(now)) + ".%03d" % (int(now * 1000) % 1000)
        self._write(f"{os.getpid()}:{self.role} {stamp} {_CHARS[level]} {msg}\n")
        if self.syslog is not None:
            self.syslog(_SYSLOG_LEVELS[level], msg)

    def raw(self, level: int, text: str) -> None:
        """serverLogRaw: `text` as it is, without the pid/role/time prefix (the start-up banner)."""
        if level >= self.level:
            self._write(text)
            if self.syslog is not None:
                self.syslog(_SYSLOG_LEVELS[level], text)

    def debug(self, msg: str) -> None:
        self.log(0, msg)

    def verbose(self, msg: str) -> None:
        self.log(1, msg)

    def notice(self, msg: str) -> None:
        self.log(2, msg)

    def warning(self, msg: str) -> None:
        self.log(3, msg)


def logged_error(reply: bytes) -> str:
    """An error reply as afterErrorReply logs it: the text addReplyError got, so without "-ERR "
    for most errors (they get it when replied) and with the dash for those replied whole
    (-WRONGTYPE ...), at most 4096 bytes."""
    text = reply.rstrip(b"\r\n")
    text = text[5:] if text.startswith(b"-ERR ") else text
    return text[:4096].decode(errors="replace")


LOG = Log()
