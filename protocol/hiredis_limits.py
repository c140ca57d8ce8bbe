"""Give hiredis readers Redis's defence against huge multibulk headers.

hiredis builds a Python list of the announced size as soon as it reads an array header.  The
allocation is lazy (calloc), but freeing it walks every slot: a 14-byte `*3000000000\\r\\n` costs
17 s of CPU when the connection goes away.  Redis preallocates at most 1024 arguments, so such a
header is harmless there.  The C reader has a `maxelements` limit for exactly this, which
hiredis-py does not expose; we set it in the C struct, after verifying the struct layout on a
throwaway reader (the neighbouring `maxbuf` field must read back what `setmaxbuf()` wrote and
`maxelements` must hold hiredis's default).  A header over the limit then makes hiredis raise
ProtocolError, and the server hands the connection to the exact parser, which applies Redis's
own rules (up to INT_MAX arguments, nothing allocated ahead of the data).

The same verified layout gives `unconsumed()`: how many bytes of a partial command hiredis holds
unparsed, so the server can apply Redis's 64 KiB limit on unterminated header lines.

If the layout check fails (another hiredis build), `AVAILABLE` is False and the caller must guard
some other way.

The struct's words are read and written by four accessors (`_pointer_at`, `_size_at`,
`_longlong_at`, `_set_longlong`): compiled, a C load or store at the address; interpreted, ctypes,
which only the interpreted build imports (ctypes costs every start ~5 M instructions, and the
first connection's reader is made before the first reply).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import hiredis

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:
    import ctypes

# What a hiredis Reader's gets() raises for bytes it will not parse: ProtocolError, and TypeError
# when a RESP3 map or set frame holds an aggregate as a key or member (hiredis builds a dict or a
# set of it).  A client's request stream may hold either; both mean "not a command for the fast
# path" (found by the resp fuzz target, tests/fuzz/targets/resp.py).
READER_ERRORS = (hiredis.ProtocolError, TypeError)

# Arrays longer than this are parsed by the exact parser (freeing a 1M-slot list takes ~10 ms).
MAX_ELEMENTS = 1 << 20

_PTR_OFFSET = struct.calcsize("nP")  # after PyObject_HEAD: a Py_ssize_t and a pointer
_WORD = struct.calcsize("P")  # the offsets below are a 64-bit build's: anything else is not read
_POS_OFFSET = 144  # redisReader: int err; char errstr[128]; char *buf; size_t pos, len, maxbuf
_LEN_OFFSET = 152
_MAXBUF_OFFSET = 160
_MAXELEMENTS_OFFSET = 168
_HIREDIS_DEFAULT_MAXELEMENTS = (1 << 32) - 1


def _pointer_at(address: int) -> int:
    if cython.compiled:
        return cython.cast(cython.Py_ssize_t, cython.cast(cython.pointer(cython.p_void), address)[0])
    return ctypes.c_void_p.from_address(address).value or 0


def _size_at(address: int) -> int:
    if cython.compiled:
        return cython.cast(cython.pointer(cython.size_t), address)[0]
    return ctypes.c_size_t.from_address(address).value


def _longlong_at(address: int) -> int:
    if cython.compiled:
        return cython.cast(cython.pointer(cython.longlong), address)[0]
    return ctypes.c_longlong.from_address(address).value


def _set_longlong(address: int, value: int) -> None:
    if cython.compiled:
        cython.cast(cython.pointer(cython.longlong), address)[0] = value
    else:
        ctypes.c_longlong.from_address(address).value = value


def _reader_struct(reader: hiredis.Reader) -> int:
    return _pointer_at(id(reader) + _PTR_OFFSET)


def _verify() -> bool:
    if _WORD != 8:
        return False
    try:
        probe = hiredis.Reader()
        ptr = _reader_struct(probe)
        if not ptr:
            return False
        probe.setmaxbuf(987_654_321)
        if _size_at(ptr + _MAXBUF_OFFSET) != 987_654_321:
            return False
        if _longlong_at(ptr + _MAXELEMENTS_OFFSET) != _HIREDIS_DEFAULT_MAXELEMENTS:
            return False
        probe.feed(b"*1\r\n$2\r\nab\r\n*1\r\n$5\r\nabc")
        if probe.gets() != [b"ab"] or probe.gets() is not False:
            return False
        pos = _size_at(ptr + _POS_OFFSET)
        length = _size_at(ptr + _LEN_OFFSET)
        if (pos, length) != (17, 23):  # the pending bulk's type byte is consumed
            return False
        probe = hiredis.Reader()
        ptr = _reader_struct(probe)
        _set_longlong(ptr + _MAXELEMENTS_OFFSET, 10)
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
    return _size_at(ptr + _LEN_OFFSET) - _size_at(ptr + _POS_OFFSET)


def unconsumed_probe(reader: hiredis.Reader) -> Callable[[], int] | None:
    """`unconsumed` for one reader, its struct's fields located once: a loop asking after every
    reply pays two memory reads instead of the lookups (None if this hiredis build can't)."""
    if not AVAILABLE:
        return None
    ptr = _reader_struct(reader)
    if not cython.compiled:
        return _ctypes_probe(ptr)
    return lambda: _size_at(ptr + _LEN_OFFSET) - _size_at(ptr + _POS_OFFSET)


def _ctypes_probe(ptr: int) -> Callable[[], int]:
    """Interpreted, the probe's two fields as ctypes objects made once (two attribute reads a call)."""
    import ctypes  # the module's own import, which the compiled build leaves out (and never calls this)

    length = ctypes.c_size_t.from_address(ptr + _LEN_OFFSET)
    pos = ctypes.c_size_t.from_address(ptr + _POS_OFFSET)
    return lambda: length.value - pos.value


def limit_elements(reader: hiredis.Reader, limit: int = MAX_ELEMENTS) -> bool:
    """Make `reader` refuse arrays longer than `limit`; False if this hiredis build can't."""
    if not AVAILABLE:
        return False
    _set_longlong(_reader_struct(reader) + _MAXELEMENTS_OFFSET, limit)
    return True
