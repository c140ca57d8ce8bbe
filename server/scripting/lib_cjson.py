"""The `cjson` library Redis bundles (lua-cjson 2.1.0 with Redis's defaults).

encode: strings escaped as cjson does (", \\, /, control characters, DEL; other bytes raw), numbers
with 14 significant digits, NaN/Inf refused, a table is an array when all its keys are positive
integers (holes become null; a very sparse one — max key > 10 and > twice the count — is an
error), otherwise an object walked in `next` order with number keys written as strings; nesting
is limited to 1000.  decode: JSON values to Lua (null -> cjson.null), numbers parsed like strtod
(so Inf, NaN, hex and leading zeros pass, as cjson's decode_invalid_numbers allows), nesting
limited to 1000, errors worded and positioned exactly as cjson words them.

Decoding tries Python's C json parser first for speed and falls back to the exact tokenizer below
for anything it rejects (and for inputs where the two could disagree), so the accepted language and
every error message are cjson's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lupa.lua51 import lua_type

from server.scripting.luanum import arg_error, number_text, raise_lua

MAX_DEPTH = 1000


class Null:
    """cjson.null: a userdata that prints like Redis's NULL lightuserdata."""

    __slots__ = ()

    def __str__(self) -> str:
        return "userdata: (nil)"

    __repr__ = __str__


NULL = Null()

_ESC = {i: b"\\u%04x" % i for i in range(32)}
_ESC.update({8: b"\\b", 9: b"\\t", 10: b"\\n", 12: b"\\f", 13: b"\\r", 34: b'\\"', 92: b"\\\\", 47: b"\\/",
             127: b"\\u007f"})
_NEEDS_ESC = re.compile(rb'[\x00-\x1f"\\/\x7f]')


def _escape(s: bytes) -> bytes:
    if not _NEEDS_ESC.search(s):
        return b'"' + s + b'"'
    return b'"' + _NEEDS_ESC.sub(lambda m: _ESC[m.group()[0]], s) + b'"'


class _EncodeError(Exception):
    pass


def _type_name(v: Any) -> str:
    cls = v.__class__
    if cls is bool:
        return "boolean"
    if cls is bytes:
        return "string"
    if cls is int or cls is float:
        return "number"
    if v is None:
        return "nil"
    t = lua_type(v)
    return t if t is not None else "userdata"


def _number(n: int | float) -> bytes:
    f = float(n)
    if f != f or f in (float("inf"), float("-inf")):
        raise _EncodeError("Cannot serialise number: must not be NaN or Inf")
    return number_text(f)


def _encode(v: Any, out: list[bytes], depth: int) -> None:
    cls = v.__class__
    if cls is bytes:
        out.append(_escape(v))
    elif cls is int or cls is float:
        out.append(_number(v))
    elif cls is bool:
        out.append(b"true" if v else b"false")
    elif v is None or v is NULL:
        out.append(b"null")
    elif lua_type(v) == "table":
        depth += 1
        if depth > MAX_DEPTH:
            raise _EncodeError(f"Cannot serialise, excessive nesting ({depth})")
        _encode_table(v, out, depth)
    else:
        raise _EncodeError(f"Cannot serialise {_type_name(v)}: type not supported")


def _encode_table(t: Any, out: list[bytes], depth: int) -> None:
    items = list(t.items())
    top = 0
    is_array = True
    for k, _ in items:
        if (k.__class__ is int or k.__class__ is float) and k >= 1 and k == int(k):
            if k > top:
                top = int(k)
        else:
            is_array = False
            break
    if is_array and top > len(items) * 2 and top > 10:
        raise _EncodeError("Cannot serialise table: excessively sparse array")
    if is_array and top > 0:
        out.append(b"[")
        for j in range(1, top + 1):
            if j > 1:
                out.append(b",")
            _encode(t[j], out, depth)
        out.append(b"]")
        return
    out.append(b"{")
    first = True
    for k, val in items:
        if not first:
            out.append(b",")
        first = False
        kc = k.__class__
        if kc is bytes:
            out.append(_escape(k))
        elif kc is int or kc is float:
            out.append(b'"' + _number(k) + b'"')
        else:
            raise _EncodeError(f"Cannot serialise {_type_name(k)}: table key must be a number or string")
        out.append(b":")
        _encode(val, out, depth)
    out.append(b"}")


# ---- decoding -------------------------------------------------------------------------------------

_WS = b" \t\n\r"
_NUM = re.compile(rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
                  rb"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.I)
_INVALID_NUM = re.compile(rb"-?(?:0[xX]|0\d|inf|nan)", re.I)


class _DecodeError(Exception):
    pass


class _Token:
    __slots__ = ("type", "index", "value")

    def __init__(self, type_: str, index: int, value: Any = None) -> None:
        self.type = type_
        self.index = index
        self.value = value


def _strtod(text: bytes) -> float:
    low = text.lower().lstrip(b"+")
    neg = low.startswith(b"-")
    body = low[1:] if neg else low
    if body.startswith(b"0x"):
        v = float.fromhex(body.decode())
    elif body.startswith(b"inf"):
        v = float("inf")
    elif body.startswith(b"nan"):
        v = float("nan")
    else:
        v = float(body)
    return -v if neg else v


class _Decoder:
    __slots__ = ("data", "pos", "depth", "table_from", "mkobj")

    def __init__(self, data: bytes, table_from: Any, mkobj: Any) -> None:
        self.data = data
        self.pos = 0
        self.depth = 0
        self.table_from = table_from
        self.mkobj = mkobj

    def error(self, expected: str, tok: _Token) -> None:
        found = tok.value if tok.type == "T_ERROR" else tok.type
        raise _DecodeError(f"Expected {expected} but found {found} at character {tok.index + 1}")

    def token(self) -> _Token:
        data, n = self.data, len(self.data)
        pos = self.pos
        while pos < n and data[pos] in _WS:
            pos += 1
        self.pos = pos
        if pos >= n or data[pos] == 0:
            return _Token("T_END", pos)
        ch = data[pos]
        simple = {123: "T_OBJ_BEGIN", 125: "T_OBJ_END", 91: "T_ARR_BEGIN", 93: "T_ARR_END", 44: "T_COMMA",
                  58: "T_COLON"}.get(ch)
        if simple is not None:
            self.pos = pos + 1
            return _Token(simple, pos)
        if ch == 34:
            return self.string_token(pos)
        if ch == 45 or 48 <= ch <= 57:
            return self.number_token(pos)
        for word, typ, val in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False),
                               (b"null", "T_NULL", NULL)):
            if data.startswith(word, pos):
                self.pos = pos + len(word)
                return _Token(typ, pos, val)
        if _INVALID_NUM.match(data, pos):
            return self.number_token(pos)
        return _Token("T_ERROR", pos, "invalid token")

    def number_token(self, pos: int) -> _Token:
        m = _NUM.match(self.data, pos)
        if not m:
            return _Token("T_ERROR", pos, "invalid number")
        self.pos = m.end()
        return _Token("T_NUMBER", pos, _strtod(m.group()))

    def string_token(self, start: int) -> _Token:
        data, n = self.data, len(self.data)
        pos = start + 1
        out = bytearray()
        while True:
            if pos >= n or data[pos] == 0:
                return _Token("T_ERROR", pos, "unexpected end of string")
            ch = data[pos]
            if ch == 34:
                self.pos = pos + 1
                return _Token("T_STRING", start, bytes(out))
            if ch != 92:
                out.append(ch)
                pos += 1
                continue
            if pos + 1 >= n:
                return _Token("T_ERROR", pos + 1, "unexpected end of string")
            esc = data[pos + 1]
            simple = {34: 34, 92: 92, 47: 47, 98: 8, 102: 12, 110: 10, 114: 13, 116: 9}.get(esc)
            if simple is not None:
                out.append(simple)
                pos += 2
                continue
            if esc != 117:
                return _Token("T_ERROR", pos, "invalid escape code")
            cp, pos2 = self.unicode(pos)
            if cp is None:
                return _Token("T_ERROR", pos, "invalid unicode escape code")
            out += chr(cp).encode("utf-8", "surrogatepass")
            pos = pos2

    def unicode(self, pos: int) -> tuple[int | None, int]:
        data = self.data
        hexpart = data[pos + 2:pos + 6]
        if len(hexpart) != 4 or not all(c in b"0123456789abcdefABCDEF" for c in hexpart):
            return None, pos
        cp = int(hexpart, 16)
        pos += 6
        if 0xDC00 <= cp <= 0xDFFF:
            return None, pos
        if 0xD800 <= cp <= 0xDBFF:
            if data[pos:pos + 2] != b"\\u":
                return None, pos
            low = data[pos + 2:pos + 6]
            if len(low) != 4 or not all(c in b"0123456789abcdefABCDEF" for c in low):
                return None, pos
            lo = int(low, 16)
            if not 0xDC00 <= lo <= 0xDFFF:
                return None, pos
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            pos += 6
        return cp, pos

    def descend(self, tok: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _DecodeError(f"Found too many nested data structures ({self.depth}) at character {tok.index + 1}")

    def value(self, tok: _Token) -> Any:
        t = tok.type
        if t in ("T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL"):
            return tok.value
        if t == "T_OBJ_BEGIN":
            return self.obj(tok)
        if t == "T_ARR_BEGIN":
            return self.arr(tok)
        self.error("value", tok)

    def obj(self, start: _Token) -> Any:
        self.descend(start)
        flat: list[Any] = []
        tok = self.token()
        if tok.type == "T_OBJ_END":
            self.depth -= 1
            return self.mkobj()
        while True:
            if tok.type != "T_STRING":
                self.error("object key string", tok)
            key = tok.value
            tok = self.token()
            if tok.type != "T_COLON":
                self.error("colon", tok)
            val = self.value(self.token())
            flat.append(key)
            flat.append(val)
            tok = self.token()
            if tok.type == "T_OBJ_END":
                break
            if tok.type != "T_COMMA":
                self.error("comma or object end", tok)
            tok = self.token()
        self.depth -= 1
        return self.mkobj(*flat)

    def arr(self, start: _Token) -> Any:
        self.descend(start)
        items: list[Any] = []
        tok = self.token()
        if tok.type == "T_ARR_END":
            self.depth -= 1
            return self.table_from([])
        while True:
            items.append(self.value(tok))
            tok = self.token()
            if tok.type == "T_ARR_END":
                break
            if tok.type != "T_COMMA":
                self.error("comma or array end", tok)
            tok = self.token()
        self.depth -= 1
        return self.table_from(items)

    def document(self) -> Any:
        v = self.value(self.token())
        tok = self.token()
        if tok.type != "T_END":
            self.error("the end", tok)
        return v


def _from_python(v: Any, table_from: Any, mkobj: Any) -> Any:
    cls = v.__class__
    if cls is str:
        return v.encode("utf-8", "surrogateescape")
    if cls is float or cls is bool:
        return v
    if v is None:
        return NULL
    if cls is list:
        return table_from([_from_python(x, table_from, mkobj) for x in v])
    flat = []
    for k, x in v:  # object_pairs_hook keeps every pair, in document order
        flat.append(k.encode("utf-8", "surrogateescape"))
        flat.append(_from_python(x, table_from, mkobj))
    return mkobj(*flat)


class _Pairs(list):
    """An object as its (key, value) pairs, so duplicate keys are replayed in order like cjson."""


def _reject_constant(name: str) -> float:
    raise ValueError(name)


def make(where, table_from, mkobj) -> dict[bytes, Any]:  # type: ignore[no-untyped-def]
    def encode(*args: Any) -> bytes:
        if len(args) != 1:
            raise_lua(arg_error(where(), 1, "encode", "expected 1 argument"))
        out: list[bytes] = []
        try:
            _encode(args[0], out, 0)
        except _EncodeError as e:
            raise_lua(f"{where()}{e}")
        return b"".join(out)

    def decode(*args: Any) -> Any:
        if len(args) != 1:
            raise_lua(arg_error(where(), 1, "decode", "expected 1 argument"))
        data = args[0]
        if data.__class__ is not bytes:
            if data.__class__ is int or data.__class__ is float:
                data = number_text(data)
            else:
                raise_lua(arg_error(where(), 1, "decode", f"string expected, got {_type_name(data)}"))
        if (b"\\u" not in data and b"\x00" not in data
                and data.count(b"[") + data.count(b"{") < MAX_DEPTH):
            try:
                py = json.loads(data.decode("utf-8", "surrogateescape"), strict=False, parse_int=float,
                                object_pairs_hook=_Pairs, parse_constant=_reject_constant)
                return _from_python(py, table_from, mkobj)
            except (ValueError, RecursionError):
                pass
        try:
            return _Decoder(data, table_from, mkobj).document()
        except _DecodeError as e:
            raise_lua(f"{where()}{e}")

    def unsupported(name: str):  # type: ignore[no-untyped-def]
        def setting(*args: Any) -> Any:
            return None

        return setting

    lib: dict[bytes, Any] = {
        b"encode": encode, b"decode": decode, b"null": NULL, b"_NAME": b"cjson", b"_VERSION": b"2.1.0",
    }
    for name in (b"encode_keep_buffer", b"encode_max_depth", b"decode_max_depth", b"encode_number_precision",
                 b"encode_sparse_array", b"encode_invalid_numbers", b"decode_invalid_numbers", b"new"):
        lib[name] = unsupported(name.decode())
    return lib
