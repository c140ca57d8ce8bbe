"""Fuzz target: whole RDB files (storage/rdb.py's read_file, as a start-up, DEBUG RELOAD or a
replica's full sync reads them).

Properties: only RDBError (ChecksumError and Short are RDBErrors); every key that loads dumps to a
payload that RESTORE reads back.  The trailing CRC64 is checked after the records, so mutated
files reach every decoder first; a stored checksum of zero (rdbchecksum no) is not checked.
"""

from __future__ import annotations

NAME = "rdbfile"
INSTRUMENT = ("raxdb.storage",)  # the modules whose coverage guides the fuzzer


def setup() -> None:
    from raxdb.storage import rdb  # noqa: F401


def one_input(data: bytes) -> None:
    from raxdb.storage import rdb

    limits = rdb.Limits()
    try:
        for kind, event in rdb.read_file(data, limits):
            if kind == "key" and event.value is not rdb.EMPTY:
                assert rdb.restore(rdb.dump(event.value), limits) is not None
    except rdb.RDBError:
        return
