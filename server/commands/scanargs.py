"""SCAN-family argument parsing (SCAN, HSCAN, SSCAN, ZSCAN), shared by every family.

Cursor: C strtoul semantics as Redis's parseScanCursorOrReply uses them ("ERR invalid cursor").
Options: MATCH pattern, COUNT n (n < 1 is a syntax error), and TYPE t for SCAN only.
"""

from __future__ import annotations

import re

from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.table.args import known_words, option_word, to_int

_CURSOR_RX = re.compile(rb"[+-]?\d+\Z")
ULONG_MAX = 2**64 - 1
known_words(b"match", b"count", b"type")


def parse_cursor(arg: bytes) -> int:
    if not arg:
        return 0  # strtoul converts nothing, stops at the terminator: Redis accepts it as 0
    if not _CURSOR_RX.match(arg):
        raise CommandError("ERR invalid cursor")
    v = int(arg)
    if v > ULONG_MAX or v < -ULONG_MAX:
        raise CommandError("ERR invalid cursor")
    return v % (ULONG_MAX + 1)


class ScanOptions:
    __slots__ = ("match", "count", "type")

    def __init__(self) -> None:
        self.match: bytes | None = None
        self.count = 10
        self.type: bytes | None = None


def parse_scan_options(argv: list[bytes], start: int, allow_type: bool = False) -> ScanOptions:
    opts = ScanOptions()
    i = start
    n = len(argv)
    while i < n:
        opt = option_word(argv[i])
        left = n - i - 1
        if opt == b"count" and left >= 1:
            count = to_int(argv[i + 1])
            if count < 1:
                raise CommandError(SYNTAX)
            opts.count = count
            i += 2
        elif opt == b"match" and left >= 1:
            pat = argv[i + 1]
            opts.match = None if pat == b"*" else pat
            i += 2
        elif opt == b"type" and left >= 1 and allow_type:
            opts.type = argv[i + 1]
            i += 2
        else:
            raise CommandError(SYNTAX)
    return opts
