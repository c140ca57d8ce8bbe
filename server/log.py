"""Redis-style log lines: `pid:M 21 Nov 2026 01:18:00.123 * message`.

The level characters are Redis's (. debug, - verbose, * notice, # warning) so log scrapers and
humans used to redis-server read raxdb's logs the same way.  Output goes to stdout, or to the
`logfile` option's file.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
_CHARS = ".-*#"


class Log:
    def __init__(self) -> None:
        self.level = LEVELS["notice"]
        self.stream: TextIO = sys.stdout
        # Redis's role character: "C" until the server is initialized (its pid is not yet the
        # server's, as in a forked child), then "M" or "S"
        self.role = "C"

    def configure(self, level: str, logfile: str) -> None:
        self.level = LEVELS.get(level, 2)
        if logfile:
            self.stream = open(logfile, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def log(self, level: int, msg: str) -> None:
        if level < self.level:
            return
        now = time.time()
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(now)) + ".%03d" % (int(now * 1000) % 1000)
        self.stream.write(f"{os.getpid()}:{self.role} {stamp} {_CHARS[level]} {msg}\n")
        self.stream.flush()

    def raw(self, level: int, text: str) -> None:
        """serverLogRaw: `text` as it is, without the pid/role/time prefix (the start-up banner)."""
        if level >= self.level:
            self.stream.write(text)
            self.stream.flush()

    def debug(self, msg: str) -> None:
        self.log(0, msg)

    def verbose(self, msg: str) -> None:
        self.log(1, msg)

    def notice(self, msg: str) -> None:
        self.log(2, msg)

    def warning(self, msg: str) -> None:
        self.log(3, msg)


LOG = Log()
