"""The `bit` library Redis bundles (LuaBitOp 1.0): 32-bit operations on Lua numbers.

Numbers are normalised as LuaBitOp does it: add 2^52 + 2^51 in double precision (which rounds to
the nearest integer, ties to even) and keep the low 32 bits of the result, read as a signed int.
"""

from __future__ import annotations

import struct
from typing import Any

from raxdb.server.scripting.luanum import check_number

_MAGIC = 6755399441055744.0  # 2^52 + 2^51
_pack_d = struct.Struct("<d").pack
_unpack_i = struct.Struct("<i").unpack_from


def tobit_value(n: float) -> int:
    return _unpack_i(_pack_d(float(n) + _MAGIC))[0]


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def make(where) -> dict[bytes, Any]:
    def arg(args: tuple, i: int, name: str) -> int:
        return tobit_value(check_number(args, i, name, where))

    def tobit(*a: Any) -> int:
        return arg(a, 0, "tobit")

    def bnot(*a: Any) -> int:
        return _s32(~arg(a, 0, "bnot"))

    def variadic(name: str, op):
        def f(*a: Any) -> int:
            r = arg(a, 0, name)
            for i in range(1, len(a)):
                r = op(r, arg(a, i, name))
            return _s32(r)

        return f

    def shift(name: str, op):
        def f(*a: Any) -> int:
            x = arg(a, 0, name) & 0xFFFFFFFF
            n = arg(a, 1, name) & 31
            return _s32(op(x, n))

        return f

    def tohex(*a: Any) -> bytes:
        b = arg(a, 0, "tohex") & 0xFFFFFFFF
        n = arg(a, 1, "tohex") if len(a) > 1 and a[1] is not None else 8
        digits = "0123456789abcdef"
        if n < 0:
            n = -n
            digits = "0123456789ABCDEF"
        n = min(n, 8)
        out = []
        for _ in range(n):
            out.append(digits[b & 15])
            b >>= 4
        return "".join(reversed(out)).encode()

    def bswap(*a: Any) -> int:
        b = arg(a, 0, "bswap") & 0xFFFFFFFF
        return _s32(int.from_bytes(b.to_bytes(4, "little"), "big"))

    def arshift(x: int, n: int) -> int:
        return _s32(x) >> n

    return {
        b"tobit": tobit, b"bnot": bnot, b"tohex": tohex, b"bswap": bswap,
        b"band": variadic("band", lambda x, y: x & y),
        b"bor": variadic("bor", lambda x, y: x | y),
        b"bxor": variadic("bxor", lambda x, y: x ^ y),
        b"lshift": shift("lshift", lambda x, n: x << n),
        b"rshift": shift("rshift", lambda x, n: x >> n),
        b"arshift": shift("arshift", arshift),
        b"rol": shift("rol", lambda x, n: (x << n) | (x >> (32 - n))),
        b"ror": shift("ror", lambda x, n: (x >> n) | (x << (32 - n))),
    }
