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
every error message are cjson's.  `encode` is reached through a Lua front that encodes the common
inputs itself while the settings are the defaults (cjson_lua.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lupa.lua51 import lua_type

from raxdb.server.scripting.luanum import arg_error, check_number, check_string, number_text, raise_lua

INT_MAX = 2**31 - 1
_INF = float("inf")


class Config:
    """One cjson instance's settings (lua-cjson's json_config_t): they last as long as the Lua state,
    so a script's cjson.encode_max_depth(1) still holds for the next script, as in Redis."""

    __slots__ = ("sparse_convert", "sparse_ratio", "sparse_safe", "encode_max_depth", "decode_max_depth",
                 "precision", "keep_buffer", "encode_invalid", "decode_invalid")

    def __init__(self) -> None:
        self.sparse_convert = False
        self.sparse_ratio = 2
        self.sparse_safe = 10
        self.encode_max_depth = 1000
        self.decode_max_depth = 1000
        self.precision = 14
        self.keep_buffer = True
        self.encode_invalid = 0  # 0 off (an error), 1 on (written as inf / nan), 2 null
        self.decode_invalid = True

    def encode_default(self) -> bool:
        """Whether the settings encoding reads are lua-cjson's defaults (cjson_lua.py's `fast`)."""
        return (not self.sparse_convert and self.sparse_ratio == 2 and self.sparse_safe == 10
                and self.encode_max_depth == 1000 and self.precision == 14 and self.encode_invalid == 0)


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


def _number(n: int | float, cfg: Config) -> bytes:
    f = float(n)
    if f != f or f in (float("inf"), float("-inf")):
        if cfg.encode_invalid == 0:
            raise _EncodeError("Cannot serialise number: must not be NaN or Inf")
        if cfg.encode_invalid == 2:
            return b"null"
        if f != f:
            return b"nan"
    if cfg.precision == 14:
        return number_text(f)
    return b"%.*g" % (cfg.precision, f)


def _encode(v: Any, out: list[bytes], depth: int, cfg: Config) -> None:
    cls = v.__class__
    if cls is bytes:
        out.append(_escape(v))
    elif cls is int or cls is float:
        out.append(_number(v, cfg))
    elif cls is bool:
        out.append(b"true" if v else b"false")
    elif v is None or v is NULL:
        out.append(b"null")
    elif lua_type(v) == "table":
        depth += 1
        if depth > cfg.encode_max_depth:
            raise _EncodeError(f"Cannot serialise, excessive nesting ({depth})")
        _encode_table(v, out, depth, cfg)
    else:
        raise _EncodeError(f"Cannot serialise {_type_name(v)}: type not supported")


def _encode_table(t: Any, out: list[bytes], depth: int, cfg: Config) -> None:
    items = list(t.items())
    top = 0
    is_array = True
    for k, _ in items:
        kc = k.__class__
        if (kc is int or kc is float) and k >= 1 and (kc is int or k.is_integer() or k == _INF):  # floor(k) == k
            if k > top:  # lua_array_length's `max` is a C int: 2^31 and above set it to INT_MIN
                top = int(k) if k < 2**31 else -2**31
        else:
            is_array = False
            break
    if is_array and cfg.sparse_ratio > 0 and top > len(items) * cfg.sparse_ratio and top > cfg.sparse_safe:
        if not cfg.sparse_convert:
            raise _EncodeError("Cannot serialise table: excessively sparse array")
        is_array = False  # written as an object instead
    if is_array and top > 0:
        out.append(b"[")
        for j in range(1, top + 1):
            if j > 1:
                out.append(b",")
            _encode(t[j], out, depth, cfg)
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
            out.append(b'"' + _number(k, cfg) + b'"')
        else:
            raise _EncodeError(f"Cannot serialise {_type_name(k)}: table key must be a number or string")
        out.append(b":")
        _encode(val, out, depth, cfg)
    out.append(b"}")


# ---- decoding -------------------------------------------------------------------------------------

_WS = b" \t\n\r"
_NUM = re.compile(rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
                  rb"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.I)
_INVALID_NUM = re.compile(rb"\+|-?(?:0[xX]|0\d|inf|nan)", re.I)  # json_is_invalid_number


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
    __slots__ = ("data", "pos", "depth", "table_from", "mkobj", "cfg")

    def __init__(self, data: bytes, table_from: Any, mkobj: Any, cfg: Config) -> None:
        self.cfg = cfg
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
            if not self.cfg.decode_invalid and _INVALID_NUM.match(data, pos):
                return _Token("T_ERROR", pos, "invalid number")
            return self.number_token(pos)
        for word, typ, val in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False),
                               (b"null", "T_NULL", NULL)):
            if data.startswith(word, pos):
                self.pos = pos + len(word)
                return _Token(typ, pos, val)
        if self.cfg.decode_invalid and _INVALID_NUM.match(data, pos):
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
        if self.depth > self.cfg.decode_max_depth:
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


def make(where, table_from, mkobj, encode_where=None, set_fast=None) -> dict[bytes, Any]:
    """The library's members.  `encode_where`: where for `encode`'s errors when a front
    (cjson_lua.py) calls it, one frame further from the script than the others; `set_fast(bool)`
    tells that front whether the encode settings are the defaults, after each settings call."""
    cfg = Config()
    encode_at = encode_where or where

    def encode(*args: Any) -> bytes:
        if len(args) != 1:
            raise_lua(arg_error(encode_at(), 1, "encode", "expected 1 argument"))
        out: list[bytes] = []
        try:
            _encode(args[0], out, 0, cfg)
        except _EncodeError as e:
            raise_lua(f"{encode_at()}{e}")
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
                and data.count(b"[") + data.count(b"{") <= cfg.decode_max_depth):
            try:
                py = json.loads(data.decode("utf-8", "surrogateescape"), strict=False, parse_int=float,
                                object_pairs_hook=_Pairs, parse_constant=_reject_constant)
                return _from_python(py, table_from, mkobj)
            except (ValueError, RecursionError):
                pass
        try:
            return _Decoder(data, table_from, mkobj, cfg).document()
        except _DecodeError as e:
            raise_lua(f"{where()}{e}")

    lib: dict[bytes, Any] = {
        b"encode": encode, b"decode": decode, b"null": NULL, b"_NAME": b"cjson", b"_VERSION": b"2.1.0",
        b"new": lambda *_a: None,  # a second instance with its own settings: not provided
    }
    lib.update(_settings(cfg, where, set_fast))
    return lib


# ---- the settings functions (json_cfg_*) ---------------------------------------------------------
_ON_OFF = ("off", "on")


def _settings(cfg: Config, where, set_fast=None) -> dict[bytes, Any]:
    """cjson.encode_max_depth(...) and the rest: each sets what it is given (nil leaves a setting as
    it is) and returns the settings, with lua-cjson's checks and its error texts (which name
    argument #1 for any out-of-range integer, as lua-cjson does)."""

    def arity(name: str, args: tuple, n: int) -> None:
        if len(args) > n:
            raise_lua(arg_error(where(), n + 1, name, "found too many arguments"))

    def integer(name: str, args: tuple, i: int, current: int, low: int, high: int) -> int:
        if i >= len(args) or args[i] is None:
            return current
        v = int(check_number(args, i, name, where))
        if not low <= v <= high:
            raise_lua(arg_error(where(), 1, name, f"expected integer between {low} and {high}"))
        return v

    def option(name: str, args: tuple, i: int, current: int, options: tuple[str, ...]) -> int:
        if i >= len(args) or args[i] is None:
            return current
        v = args[i]
        if v.__class__ is bool:
            return int(v)
        text = check_string(args, i, name, where)
        try:
            return options.index(text.decode("latin-1"))
        except ValueError:
            raise_lua(arg_error(where(), i + 1, name, f"invalid option '{text.decode('latin-1')}'"))
            raise

    def shown(setting: int, options: tuple[str, ...]) -> Any:
        return bool(setting) if setting in (0, 1) else options[setting].encode()

    def encode_sparse_array(*args: Any) -> tuple:
        arity("encode_sparse_array", args, 3)
        cfg.sparse_convert = bool(option("encode_sparse_array", args, 0, int(cfg.sparse_convert), _ON_OFF))
        cfg.sparse_ratio = integer("encode_sparse_array", args, 1, cfg.sparse_ratio, 0, INT_MAX)
        cfg.sparse_safe = integer("encode_sparse_array", args, 2, cfg.sparse_safe, 0, INT_MAX)
        return cfg.sparse_convert, cfg.sparse_ratio, cfg.sparse_safe

    def encode_max_depth(*args: Any) -> int:
        arity("encode_max_depth", args, 1)
        cfg.encode_max_depth = integer("encode_max_depth", args, 0, cfg.encode_max_depth, 1, INT_MAX)
        return cfg.encode_max_depth

    def decode_max_depth(*args: Any) -> int:
        arity("decode_max_depth", args, 1)
        cfg.decode_max_depth = integer("decode_max_depth", args, 0, cfg.decode_max_depth, 1, INT_MAX)
        return cfg.decode_max_depth

    def encode_number_precision(*args: Any) -> int:
        arity("encode_number_precision", args, 1)
        cfg.precision = integer("encode_number_precision", args, 0, cfg.precision, 1, 14)
        return cfg.precision

    def encode_keep_buffer(*args: Any) -> bool:  # a buffer kept between calls: no effect here
        arity("encode_keep_buffer", args, 1)
        cfg.keep_buffer = bool(option("encode_keep_buffer", args, 0, int(cfg.keep_buffer), _ON_OFF))
        return cfg.keep_buffer

    def encode_invalid_numbers(*args: Any) -> Any:
        arity("encode_invalid_numbers", args, 1)
        options = ("off", "on", "null")
        cfg.encode_invalid = option("encode_invalid_numbers", args, 0, cfg.encode_invalid, options)
        return shown(cfg.encode_invalid, options)

    def decode_invalid_numbers(*args: Any) -> bool:
        arity("decode_invalid_numbers", args, 1)
        cfg.decode_invalid = bool(option("decode_invalid_numbers", args, 0, int(cfg.decode_invalid), _ON_OFF))
        return cfg.decode_invalid

    def telling(setting):
        """An encode setting that tells the Lua front whether the defaults still hold (also after
        an error part way: a setting may be changed before a later argument is refused)."""
        if set_fast is None:
            return setting

        def told(*args: Any) -> Any:
            try:
                return setting(*args)
            finally:
                set_fast(cfg.encode_default())
        return told

    return {
        b"encode_sparse_array": telling(encode_sparse_array), b"encode_max_depth": telling(encode_max_depth),
        b"decode_max_depth": decode_max_depth, b"encode_number_precision": telling(encode_number_precision),
        b"encode_keep_buffer": encode_keep_buffer, b"encode_invalid_numbers": telling(encode_invalid_numbers),
        b"decode_invalid_numbers": decode_invalid_numbers,
    }
