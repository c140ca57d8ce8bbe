"""Lua 5.1 number semantics the libraries need: converting strings to numbers (lua_tonumber) and
argument checking with the messages luaL_check* produces, and raising a Lua error from Python
(LuaRaise).  Rule: imports nothing of the server; the engine and the bundled libraries use it.

lupa hands Lua numbers to Python as int (integral values) or float, and Lua strings as bytes.
"""

from __future__ import annotations

import re
from typing import Any

_DEC = re.compile(rb"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*\Z", re.I)
_HEX = re.compile(rb"\s*(0[xX][0-9a-fA-F]+)\s*\Z")


def str_to_number(s: bytes) -> float | None:
    """luaO_str2d: strtod over the whole string (whitespace around allowed), or a hex integer."""
    if _DEC.match(s):
        try:
            return float(s.strip())
        except ValueError:
            return None
    m = _HEX.match(s)
    if m:
        return float(int(m.group(1), 16))
    return None


def type_name(v: Any, present: bool = True) -> str:
    if not present:
        return "no value"
    cls = v.__class__
    if v is None:
        return "nil"
    if cls is bytes:
        return "string"
    if cls is bool:
        return "boolean"
    if cls is int or cls is float:
        return "number"
    from lupa.lua51 import lua_type

    t = lua_type(v)
    return t if t is not None else "userdata"


def to_number(v: Any) -> float | None:
    cls = v.__class__
    if cls is int or cls is float:
        return v
    if cls is bytes:
        return str_to_number(v)
    return None


def arg_error(where: str, n: int, fname: str, msg: str) -> str:
    return f"{where}bad argument #{n} to '{fname}' ({msg})"


def check_number(args: tuple, i: int, fname: str, where) -> float:
    """luaL_checknumber for argument i (0-based); `where()` gives the error position prefix."""
    present = i < len(args)
    v = args[i] if present else None
    n = to_number(v) if present else None
    if n is None:
        raise_lua(arg_error(where(), i + 1, fname, f"number expected, got {type_name(v, present)}"))
    return n  # type: ignore[return-value]


def check_string(args: tuple, i: int, fname: str, where) -> bytes:
    """luaL_checklstring: strings, and numbers converted to their %.14g text."""
    present = i < len(args)
    v = args[i] if present else None
    cls = v.__class__
    if cls is bytes:
        return v  # type: ignore[return-value]
    if cls is int or cls is float:
        return number_text(v)  # type: ignore[arg-type]
    raise_lua(arg_error(where(), i + 1, fname, f"string expected, got {type_name(v, present)}"))
    return b""


def number_text(v: float | int) -> bytes:
    f = float(v)
    if f != f:
        return b"nan" if str(f)[0] != "-" else b"-nan"
    if f in (float("inf"), float("-inf")):
        return b"inf" if f > 0 else b"-inf"
    return b"%.14g" % f


class LuaRaise(Exception):
    """Raised by Python called from Lua; `value` is the Lua error value (string or table).  The
    engine's call wrapper turns it into a Lua error; it lives here, below the engine, because
    the bundled libraries raise it too."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def raise_lua(msg: str | bytes) -> None:
    raise LuaRaise(msg.encode() if isinstance(msg, str) else msg)
