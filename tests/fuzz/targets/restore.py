"""Fuzz target: RESTORE / DUMP payloads of every type and encoding (storage/rdb.py's restore).

The input is a payload's body, its type byte and value; the target appends the footer, RDB
version 10 and a zero CRC64, and calls `restore(check_crc=False)`: below the checksum check, so
every mutation reaches the decoders (the version and checksum check itself is a few lines,
`unseal`, tested in tests/storage).  The corpus holds bodies too: DUMP payloads from a real
redis-server 7.0.15 with their 10-byte footer cut (tests/fuzz/targets/seeds.py).

Properties: only RDBError (or None / EMPTY); a value that loads dumps to a payload that loads
back to a value of the same type and size (a restored key must survive DUMP, RESTORE, a save).
"""

from __future__ import annotations

NAME = "restore"
INSTRUMENT = ("raxdb.storage",)  # the modules whose coverage guides the fuzzer
# not instrumented: byte loops no input steers, ~15% of the time instrumented: the CRC64, and the
# compressor and writer, which only make the payload the property check reads back
UNINSTRUMENTED = ("raxdb.storage.crc64", "raxdb.storage.lzf.compress", "raxdb.storage.rdb.Writer")
FOOTER = (10).to_bytes(2, "little") + bytes(8)
_limits = None  # the default Limits, built once (the decoders only read them)


def setup() -> None:
    global _limits
    from raxdb.storage import rdb

    _limits = rdb.Limits()


def one_input(data: bytes) -> None:
    from raxdb.storage import rdb

    limits = _limits
    try:
        value = rdb.restore(data + FOOTER, limits, check_crc=False)
    except rdb.RDBError:
        return
    if value is None or value is rdb.EMPTY:
        return
    payload = rdb.dump(value)
    again = rdb.restore(payload, limits)
    assert again is not None and again is not rdb.EMPTY
    again_payload = rdb.dump(again)
    # the same value: the same type and size (a hashtable's members may come in another order)
    assert (again_payload[0], len(again_payload)) == (payload[0], len(payload))
