"""The `cmsgpack` library Redis bundles (lua-cmsgpack 0.4.0): pack, unpack, unpack_one, unpack_limit.

Packing: integral numbers that fit int64 take the smallest integer encoding, other numbers float32
when that is exact and float64 otherwise; strings are str (fixstr/str8/str16/str32); a table whose
keys are exactly 1..n is an array, any other table a map (pairs in `next` order); tables nested 16
deep, functions and userdata pack as nil.  Unpacking: every MessagePack type but ext and bin (0.4.0
predates bin: bad format), maps and arrays as Lua tables, uint64 read as int64 as 0.4.0 does.
`unpack` is reached through a Lua front that decodes the common inputs itself (msgpack_lua.py).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from lupa.lua51 import lua_type

from raxdb.server.scripting.luanum import arg_error, check_number, check_string, raise_lua

_MAX_NESTING = 16
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")


def _float32_exact(n: float) -> bool:
    try:
        return _f32.unpack(_f32.pack(n))[0] == n
    except OverflowError:
        return False


def _pack_int(n: int, out: bytearray) -> None:
    if n >= 0:
        if n <= 127:
            out.append(n)
        elif n <= 0xFF:
            out += b"\xcc" + n.to_bytes(1, "big")
        elif n <= 0xFFFF:
            out += b"\xcd" + n.to_bytes(2, "big")
        elif n <= 0xFFFFFFFF:
            out += b"\xce" + n.to_bytes(4, "big")
        else:
            out += b"\xcf" + n.to_bytes(8, "big")
    elif n >= -32:
        out.append(n & 0xFF)
    elif n >= -128:
        out += b"\xd0" + n.to_bytes(1, "big", signed=True)
    elif n >= -32768:
        out += b"\xd1" + n.to_bytes(2, "big", signed=True)
    elif n >= -(1 << 31):
        out += b"\xd2" + n.to_bytes(4, "big", signed=True)
    else:
        out += b"\xd3" + n.to_bytes(8, "big", signed=True)


def _pack_number(n: int | float, out: bytearray) -> None:
    if n.__class__ is int and -(1 << 63) <= n < (1 << 63):
        _pack_int(n, out)
        return
    f = float(n)
    if not math.isinf(f) and f == f and -(2.0 ** 63) <= f < 2.0 ** 63 and f == math.floor(f):
        _pack_int(int(f), out)
    elif f != f:
        out += b"\xcb" + _f64.pack(f)
    elif _float32_exact(f) or math.isinf(f):
        out += b"\xca" + _f32.pack(f)
    else:
        out += b"\xcb" + _f64.pack(f)


def _pack_str(s: bytes, out: bytearray) -> None:
    n = len(s)
    if n < 32:
        out.append(0xA0 | n)
    elif n <= 0xFF:
        out += b"\xd9" + n.to_bytes(1, "big")
    elif n <= 0xFFFF:
        out += b"\xda" + n.to_bytes(2, "big")
    else:
        out += b"\xdb" + n.to_bytes(4, "big")
    out += s


def _pack_value(v: Any, out: bytearray, level: int) -> None:
    cls = v.__class__
    if cls is bytes:
        _pack_str(v, out)
    elif cls is bool:
        out.append(0xC3 if v else 0xC2)
    elif cls is int or cls is float:
        _pack_number(v, out)
    elif v is None:
        out.append(0xC0)
    elif lua_type(v) == "table" and level < _MAX_NESTING:
        _pack_table(v, out, level)
    else:
        out.append(0xC0)


def _pack_table(t: Any, out: bytearray, level: int) -> None:
    items = list(t.items())
    count = len(items)
    is_array = True
    top: float = 0
    for k, _ in items:
        if (k.__class__ is int or k.__class__ is float) and k > 0 and k == math.floor(k):
            top = max(top, k)
        else:
            is_array = False
            break
    if is_array and top == count:
        if count < 16:
            out.append(0x90 | count)
        elif count <= 0xFFFF:
            out += b"\xdc" + count.to_bytes(2, "big")
        else:
            out += b"\xdd" + count.to_bytes(4, "big")
        for j in range(1, count + 1):
            _pack_value(t[j], out, level + 1)
        return
    if count < 16:
        out.append(0x80 | count)
    elif count <= 0xFFFF:
        out += b"\xde" + count.to_bytes(2, "big")
    else:
        out += b"\xdf" + count.to_bytes(4, "big")
    for k, v in items:
        _pack_value(k, out, level + 1)
        _pack_value(v, out, level + 1)


class _Eof(Exception):
    pass


class _BadFormat(Exception):
    pass


class _BadKey(Exception):
    pass


class _Reader:
    __slots__ = ("data", "pos", "table_from", "mkobj")

    def __init__(self, data: bytes, pos: int, table_from: Any, mkobj: Any) -> None:
        self.data = data
        self.pos = pos
        self.table_from = table_from
        self.mkobj = mkobj

    def take(self, n: int) -> bytes:
        p = self.pos
        if p + n > len(self.data):
            raise _Eof
        self.pos = p + n
        return self.data[p:p + n]

    def value(self) -> Any:
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self.take(b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F)
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F)
        if b == 0xC0:
            return None
        if b == 0xC2:
            return False
        if b == 0xC3:
            return True
        if b == 0xCA:
            return _f32.unpack(self.take(4))[0]
        if b == 0xCB:
            return _f64.unpack(self.take(8))[0]
        if b in (0xCC, 0xCD, 0xCE):
            return int.from_bytes(self.take(1 << (b - 0xCC)), "big")
        if b == 0xCF:
            return _num(int.from_bytes(self.take(8), "big", signed=True))
        if b in (0xD0, 0xD1, 0xD2, 0xD3):
            return _num(int.from_bytes(self.take(1 << (b - 0xD0)), "big", signed=True))
        if b == 0xD9:  # lua-cmsgpack 0.4.0 knows no bin types (0xc4-0xc6): bad format
            return self.take(self.take(1)[0])
        if b == 0xDA:
            return self.take(int.from_bytes(self.take(2), "big"))
        if b == 0xDB:
            return self.take(int.from_bytes(self.take(4), "big"))
        if b == 0xDC:
            return self.array(int.from_bytes(self.take(2), "big"))
        if b == 0xDD:
            return self.array(int.from_bytes(self.take(4), "big"))
        if b == 0xDE:
            return self.map(int.from_bytes(self.take(2), "big"))
        if b == 0xDF:
            return self.map(int.from_bytes(self.take(4), "big"))
        raise _BadFormat

    def array(self, n: int) -> Any:
        return self.table_from([self.value() for _ in range(n)])

    def map(self, n: int) -> Any:
        flat = []
        for _ in range(n):
            k = self.value()
            v = self.value()
            # lua-cmsgpack sets each pair as it reads it: lua_settable's errors, unplaced (a C frame)
            if k is None:
                raise _BadKey("table index is nil")
            if k != k:
                raise _BadKey("table index is NaN")
            flat.append(k)
            flat.append(v)
        return self.mkobj(*flat)


def _num(v: int) -> int | float:
    return float(v) if abs(v) >= 1 << 53 else v


def make(where, table_from, mkobj, unpack_where=None) -> dict[bytes, Any]:
    """The library's members.  `unpack_where`: where for `unpack`'s errors when a front
    (msgpack_lua.py) calls it, one frame further from the script than the others."""
    unpack_at = unpack_where or where

    def pack(*args: Any) -> bytes:
        if not args:
            raise_lua(arg_error(where(), 0, "pack", "MessagePack pack needs input."))
        out = bytearray()
        for v in args:
            _pack_value(v, out, 0)
        return bytes(out)

    def unpack_full(data: bytes, limit: int, offset: int, all_values: bool, at: Callable[[], str]) -> tuple:
        if offset < 0 or limit < 0:
            raise_lua(f"{at()}Invalid request to unpack with offset of {offset} and limit of {limit}.")
        if offset > len(data):
            raise_lua(f"{at()}Start offset {offset} greater than input length {len(data)}.")
        r = _Reader(data, offset, table_from, mkobj)
        out: list[Any] = []
        if all_values:
            limit = 1 << 31
        while r.pos < len(data) and len(out) < limit:
            try:
                out.append(r.value())
            except _Eof:
                raise_lua(f"{at()}Missing bytes in input.")
            except _BadFormat:
                raise_lua(f"{at()}Bad data format in input.")
            except _BadKey as e:
                raise_lua(str(e))
        if all_values:
            return tuple(out)
        return (-1 if r.pos >= len(data) else r.pos, *out)

    def unpack(*args: Any) -> tuple:
        return unpack_full(check_string(args, 0, "unpack", unpack_at), 0, 0, True, unpack_at)

    def unpack_one(*args: Any) -> tuple:
        data = check_string(args, 0, "unpack_one", where)
        offset = int(check_number(args, 1, "unpack_one", where)) if len(args) > 1 and args[1] is not None else 0
        return unpack_full(data, 1, offset, False, where)

    def unpack_limit(*args: Any) -> tuple:
        data = check_string(args, 0, "unpack_limit", where)
        limit = int(check_number(args, 1, "unpack_limit", where)) if len(args) > 1 and args[1] is not None else 0
        offset = int(check_number(args, 2, "unpack_limit", where)) if len(args) > 2 and args[2] is not None else 0
        return unpack_full(data, limit, offset, False, where)

    return {
        b"pack": pack, b"unpack": unpack, b"unpack_one": unpack_one, b"unpack_limit": unpack_limit,
        b"_NAME": b"cmsgpack", b"_VERSION": b"lua-cmsgpack 0.4.0",
        b"_COPYRIGHT": b"Copyright (C) 2012, Salvatore Sanfilippo",
        b"_DESCRIPTION": b"MessagePack C implementation for Lua",
    }
