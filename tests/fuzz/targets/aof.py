"""Fuzz target: AOF files (server/persistence/aofload.py's reader: an RDB preamble, then commands
read as loadSingleAppendOnlyFile reads them, hiredis for the well-formed runs).

Properties: the reader stops only with a bad format or a short read (its _BadFormat, _ShortRead)
and the preamble only with RDBError; the commands read with hiredis's help are exactly those the
exact reader alone reads, with the same offsets and the same outcome.  Commands are read, not run
(running them is the command layer's, which the differential tests cover).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

NAME = "aof"
INSTRUMENT = ("raxdb.server.persistence.aofload", "raxdb.storage.rdb", "raxdb.protocol")  # the modules whose coverage guides the fuzzer
_aofload: Any = None


def setup() -> None:
    global _aofload
    from raxdb.server.persistence import aofload

    _aofload = aofload


def _read(commands: Iterator[tuple[list[bytes] | None, int]]) -> tuple[list[Any], str]:
    out: list[Any] = []
    try:
        for item in commands:
            out.append(item)
    except _aofload._BadFormat:
        return out, "bad format"
    except _aofload._ShortRead:
        return out, "short read"
    return out, "ok"


def _exact_only(data: bytes, pos: int) -> Iterator[tuple[list[bytes] | None, int]]:
    while pos < len(data):
        argv, pos = _aofload._exact_one(data, pos)
        if argv is not None:
            yield argv, pos


def one_input(data: bytes) -> None:
    from raxdb.storage import rdb

    pos = 0
    if data[:5] == b"REDIS":
        try:
            for kind, event in rdb.read_file(data, rdb.Limits()):
                if kind == "end":
                    pos = event
        except rdb.RDBError:
            return
    fast = _read(_aofload._commands(data, pos))
    exact = _read(_exact_only(data, pos))
    assert fast == exact, (fast, exact)
