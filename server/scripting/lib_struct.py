"""The `struct` library Redis bundles (Roberto Ierusalimschy's struct 0.2): pack, unpack, size.

Format: `<` `>` `=` endianness, `!n` maximum alignment (power of 2, default 1; bare `!` = 8),
`x` one pad byte, `b/B h/H l/L T i/In I/In` integers (char, short, long=8, size_t=8, int=4 or n
bytes up to 32), `f d` float and double, `s` zero-terminated string, `cn` fixed string (`c0` in unpack
takes its size from the previous number), spaces ignored.  Integers are converted through C's
(long long) / (unsigned long long) casts, as the library does.
"""

from __future__ import annotations

import struct as pystruct
from typing import Any

from raxdb.server.scripting.luanum import arg_error, check_number, check_string, raise_lua

_MAXINTSIZE = 32
_MAXALIGN = 8
_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8, "f": 4, "d": 8, "x": 1}


class _Fmt:
    __slots__ = ("fmt", "i", "little", "align")

    def __init__(self, fmt: bytes) -> None:
        self.fmt = fmt
        self.i = 0
        self.little = True
        self.align = 1


def _getnum(f: _Fmt, default: int) -> int:
    fmt, i = f.fmt, f.i
    if i >= len(fmt) or not 48 <= fmt[i] <= 57:
        return default
    n = 0
    while i < len(fmt) and 48 <= fmt[i] <= 57:
        n = n * 10 + fmt[i] - 48
        i += 1
    f.i = i
    return n


def _optsize(f: _Fmt, opt: str, where, fname: str) -> int:
    if opt in _SIZES:
        return _SIZES[opt]
    if opt == "c":
        return _getnum(f, 1)
    if opt in ("i", "I"):
        sz = _getnum(f, 4)
        if sz > _MAXINTSIZE:
            raise_lua(f"{where()}integral size {sz} is larger than limit of {_MAXINTSIZE}")
        return sz
    return 0  # 's', and the control characters


def _toalign(length: int, f: _Fmt, opt: str, size: int) -> int:
    if size == 0 or opt == "c":
        return 0
    size = min(size, f.align)
    return (size - (length & (size - 1))) & (size - 1)


def _controloptions(f: _Fmt, opt: str, where, fname: str) -> bool:
    if opt == " ":
        return True
    if opt == ">":
        f.little = False
        return True
    if opt == "<" or opt == "=":
        f.little = True
        return True
    if opt == "!":
        a = _getnum(f, _MAXALIGN)
        if a == 0 or a & (a - 1):
            raise_lua(f"{where()}alignment {a} is not a power of 2")
        f.align = a
        return True
    return False


def _options(fmt: bytes, where, fname: str):
    """Yield (option, size) for each data option, after applying control options."""
    f = _Fmt(fmt)
    while f.i < len(fmt):
        opt = chr(fmt[f.i])
        f.i += 1
        if _controloptions(f, opt, where, fname):
            continue
        if opt not in "xbBhHlLTiIfdsc":
            raise_lua(arg_error(where(), 1, fname, f"invalid format option '{opt}'"))
        size = _optsize(f, opt, where, fname)
        yield f, opt, size


def _int_bytes(n: float, size: int, little: bool) -> bytes:
    if n < 0:
        try:
            v = int(n)
        except (OverflowError, ValueError):
            v = -(1 << 63)
        if v < -(1 << 63):
            v = -(1 << 63)
        v &= 0xFFFFFFFFFFFFFFFF
    else:
        try:
            v = int(n)
        except (OverflowError, ValueError):
            v = 0
        if v >= 1 << 64:
            v = 0
    out = bytearray(size)
    for k in range(size):
        out[k] = v & 0xFF
        v >>= 8
    if not little:
        out.reverse()
    return bytes(out)


def make(where) -> dict[bytes, Any]:
    def pack(*args: Any) -> bytes:
        fmt = check_string(args, 0, "pack", where)
        out = bytearray()
        arg = 1
        for f, opt, size in _options(fmt, where, "pack"):
            out += b"\x00" * _toalign(len(out), f, opt, size)
            if opt == "x":
                out += b"\x00"
            elif opt in "bBhHlLTiI":
                n = check_number(args, arg, "pack", where)
                arg += 1
                out += _int_bytes(n, size, f.little)
            elif opt == "f":
                n = check_number(args, arg, "pack", where)
                arg += 1
                out += pystruct.pack("<f" if f.little else ">f", _to_float32(n))
            elif opt == "d":
                n = check_number(args, arg, "pack", where)
                arg += 1
                out += pystruct.pack("<d" if f.little else ">d", float(n))
            elif opt == "c":
                s = check_string(args, arg, "pack", where)
                if size == 0:
                    size = len(s)
                if len(s) < size:  # the library reports the argument after the string
                    raise_lua(arg_error(where(), arg + 2, "pack", "string too short"))
                arg += 1
                out += s[:size]
            elif opt == "s":
                s = check_string(args, arg, "pack", where)
                arg += 1
                out += s + b"\x00"
        return bytes(out)

    def unpack(*args: Any) -> tuple:
        fmt = check_string(args, 0, "unpack", where)
        data = check_string(args, 1, "unpack", where)
        pos = 0
        if len(args) > 2 and args[2] is not None:
            pos = int(check_number(args, 2, "unpack", where)) - 1
        if pos < 0 or pos > len(data):
            raise_lua(arg_error(where(), 3, "unpack", "offset must be 1 or greater"))
        results: list[Any] = []
        for f, opt, size in _options(fmt, where, "unpack"):
            pos += _toalign(pos, f, opt, size)
            if opt != "c" and pos + size > len(data) or opt == "c" and size and pos + size > len(data):
                raise_lua(arg_error(where(), 2, "unpack", "data string too short"))
            if opt == "x":
                pos += 1
            elif opt in "bBhHlLTiI":
                chunk = data[pos:pos + size]
                v = int.from_bytes(chunk, "little" if f.little else "big") & 0xFFFFFFFFFFFFFFFF
                if opt in "bhli":
                    if size < 8 and v >> (size * 8 - 1) & 1:
                        v -= 1 << (size * 8)
                    elif size >= 8 and v >> 63:
                        v -= 1 << 64
                results.append(float(v) if abs(v) >= 1 << 53 else v)
                pos += size
            elif opt == "f":
                results.append(pystruct.unpack_from("<f" if f.little else ">f", data, pos)[0])
                pos += 4
            elif opt == "d":
                results.append(pystruct.unpack_from("<d" if f.little else ">d", data, pos)[0])
                pos += 8
            elif opt == "c":
                if size == 0:
                    if not results or results[-1].__class__ not in (int, float):
                        raise_lua(f"{where()}format 'c0' needs a previous size")
                    size = int(results.pop())
                    if pos + size > len(data):
                        raise_lua(arg_error(where(), 2, "unpack", "data string too short"))
                results.append(data[pos:pos + size])
                pos += size
            elif opt == "s":
                end = data.find(b"\x00", pos)
                if end < 0:
                    raise_lua(f"{where()}unfinished string in data")
                results.append(data[pos:end])
                pos = end + 1
        results.append(pos + 1)
        return tuple(results)

    def size(*args: Any) -> int:
        fmt = check_string(args, 0, "size", where)
        pos = 0
        for f, opt, sz in _options(fmt, where, "size"):
            if opt == "s":
                raise_lua(arg_error(where(), 1, "size", "options 's' has no fixed size"))
            if opt == "c" and sz == 0:
                raise_lua(arg_error(where(), 1, "size", "option 'c0' has no fixed size"))
            pos += _toalign(pos, f, opt, sz) + sz
        return pos

    return {b"pack": pack, b"unpack": unpack, b"size": size}


def _to_float32(n: float) -> float:
    try:
        return pystruct.unpack("<f", pystruct.pack("<f", float(n)))[0]
    except OverflowError:
        return float("inf") if n > 0 else float("-inf")
