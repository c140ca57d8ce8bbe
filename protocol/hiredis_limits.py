"""Give hiredis readers Redis's defence against huge multibulk headers.

hiredis builds a Python list of the announced size as soon as it reads an array header.  The
allocation is lazy (calloc), but freeing it walks every slot: a 14-byte `*3000000000\\r\\n` costs
17 s of CPU when the connection goes away.  Redis preallocates at most 1024 arguments, so such a
header is harmless there.  The C reader has a `maxelements` limit for exactly this, which
hiredis-py does not expose; we set it through ctypes, after verifying the struct layout on a
throwaway reader (the neighbouring `maxbuf` field must read back what `setmaxbuf()` wrote and
`maxelements` must hold hiredis's default).  A header over the limit then makes hiredis raise
ProtocolError, and the server hands the connection to the exact parser, which applies Redis's
own rules (up to INT_MAX arguments, nothing allocated ahead of the data).

The same verified layout gives `unconsumed()`: how many bytes of a partial command hiredis holds
unparsed, so the server can apply Redis's 64 KiB limit on unterminated header lines.

If the layout check fails (another hiredis build), `AVAILABLE` is False and the caller must guard
some other way.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import hiredis

# What a hiredis Reader's gets() raises for bytes it will not parse: ProtocolError, and TypeError
# when a RESP3 map or set frame holds an aggregate as a key or member (hiredis builds a dict or a
# set of it).  A client's request stream may hold either; both mean "not a command for the fast
# path" (found by the resp fuzz target, tests/fuzz/targets/resp.py).
READER_ERRORS = (hiredis.ProtocolError, TypeError)

# Arrays longer than this are parsed by the exact parser (freeing a 1M-slot list takes ~10 ms).
MAX_ELEMENTS = 1 << 20

_PTR_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)  # after PyObject_HEAD
_POS_OFFSET = 144  # redisReader: int err; char errstr[128]; char *buf; size_t pos, len, maxbuf
_LEN_OFFSET = 152
_MAXBUF_OFFSET = 160
_MAXELEMENTS_OFFSET = 168
_HIREDIS_DEFAULT_MAXELEMENTS = (1 << 32) - 1


def _reader_struct(reader: hiredis.Reader) -> int:
    return ctypes.c_void_p.from_address(id(reader) + _PTR_OFFSET).value or 0


def _verify() -> bool:
    try:
        probe = hiredis.Reader()
        ptr = _reader_struct(probe)
        if not ptr:
            return False
        probe.setmaxbuf(987_654_321)
        if ctypes.c_size_t.from_address(ptr + _MAXBUF_OFFSET).value != 987_654_321:
            return False
        if ctypes.c_longlong.from_address(ptr + _MAXELEMENTS_OFFSET).value != _HIREDIS_DEFAULT_MAXELEMENTS:
            return False
        probe.feed(b"*1\r\n$2\r\nab\r\n*1\r\n$5\r\nabc")
        if probe.gets() != [b"ab"] or probe.gets() is not False:
            return False
        pos = ctypes.c_size_t.from_address(ptr + _POS_OFFSET).value
        length = ctypes.c_size_t.from_address(ptr + _LEN_OFFSET).value
        if (pos, length) != (17, 23):  # the pending bulk's type byte is consumed
            return False
        probe = hiredis.Reader()
        ptr = _reader_struct(probe)
        ctypes.c_longlong.from_address(ptr + _MAXELEMENTS_OFFSET).value = 10
        probe.feed(b"*11\r\n")
        try:
            probe.gets()
        except hiredis.ProtocolError:
            return True
        return False
    except Exception:
        return False


AVAILABLE = _verify()


def unconsumed(reader: hiredis.Reader) -> int:
    """Bytes the reader holds but has not parsed yet (the unfinished part of a partial reply)."""
    if not AVAILABLE:
        return 0
    ptr = _reader_struct(reader)
    return (ctypes.c_size_t.from_address(ptr + _LEN_OFFSET).value
            - ctypes.c_size_t.from_address(ptr + _POS_OFFSET).value)


def unconsumed_probe(reader: hiredis.Reader) -> Callable[[], int] | None:
    """`unconsumed` for one reader, its struct's fields located once: a loop asking after every
    reply pays two memory reads instead of the lookups (None if this hiredis build can't)."""
    if not AVAILABLE:
        return None
    ptr = _reader_struct(reader)
    length = ctypes.c_size_t.from_address(ptr + _LEN_OFFSET)
    pos = ctypes.c_size_t.from_address(ptr + _POS_OFFSET)
    return lambda: length.value - pos.value


def limit_elements(reader: hiredis.Reader, limit: int = MAX_ELEMENTS) -> bool:
    """Make `reader` refuse arrays longer than `limit`; False if this hiredis build can't."""
    if not AVAILABLE:
        return False
    ctypes.c_longlong.from_address(_reader_struct(reader) + _MAXELEMENTS_OFFSET).value = limit
    return True
