"""Fuzz target: whole RDB files (storage/rdb.py's read_file, as a start-up, DEBUG RELOAD or a
replica's full sync reads them).

Properties: only RDBError (ChecksumError and Short are RDBErrors); every key that loads dumps to a
payload that RESTORE reads back.  The trailing CRC64 is checked after the records, so mutated
files reach every decoder first; a stored checksum of zero (rdbchecksum no) is not checked.
"""

from __future__ import annotations

NAME = "rdbfile"
INSTRUMENT = ("raxdb.storage",)  # the modules whose coverage guides the fuzzer
# not instrumented: byte loops no input steers, ~15% of the time instrumented: the CRC64, and the
# compressor and writer, which only make the payload the property check reads back
UNINSTRUMENTED = ("raxdb.storage.crc64", "raxdb.storage.lzf.compress", "raxdb.storage.rdb.Writer")
_limits = None  # the default Limits, built once (the decoders only read them)


def setup() -> None:
    global _limits
    from raxdb.storage import rdb

    _limits = rdb.Limits()


def one_input(data: bytes) -> None:
    from raxdb.storage import rdb

    limits = _limits
    try:
        for kind, event in rdb.read_file(data, limits):
            if kind == "key" and event.value is not rdb.EMPTY:
                assert rdb.restore(rdb.dump(event.value), limits) is not None
    except rdb.RDBError:
        return
