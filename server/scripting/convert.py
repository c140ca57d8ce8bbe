"""Redis's Lua <-> RESP conversions, exactly as Redis 7.0 performs them.

Reply to Lua (what redis.call returns): integer -> number, bulk -> string, status -> {ok=...},
error -> {err=...}, array -> table (a nil element leaves a hole), RESP2 null bulk / null array ->
false; and with redis.setresp(3): null -> nil, map -> {map={...}}, set -> {set={member=true}},
double -> {double=n}, big number -> {big_number=s}, verbatim -> {verbatim_string={format=, string=}},
boolean -> boolean, attributes skipped.  Handlers already produced RESP bytes, so this is a parser
over those bytes that builds Lua values; tables with keys are built by Lua helpers that insert in
reply order, so `pairs` walks them in the order Redis's Lua would.

Lua to reply (what a script returns): number -> integer (truncated; NaN and out of range give
LLONG_MIN as C's conversion does on x86), string -> bulk, boolean -> 1 / null with RESP2 semantics
(or true / false after setresp(3)), nil -> null, table -> the first of err, ok, double, big_number,
verbatim_string, map, set it has, else an array up to the first nil.  Tables are read raw, as Redis
reads them (a metatable's __index is never asked, so `return _G` is an empty array), through one
Lua call per table (`reply_shape`) rather than a lupa lookup per field, which also halves the cost.
When cbridge is built, a script's result of the common shapes (a script at RESP2; strings, numbers,
booleans, nil, {ok=}, {err=} and arrays of them) is encoded in C by cbridge.pyx's `rx_conv`, which
follows `lua_to_resp` rule for rule: a change to these rules is made in both.
"""

from __future__ import annotations

import math
from typing import Any

import hiredis
from lupa.lua51 import lua_type

from raxdb.protocol import reply as R

LLONG_MIN = -(1 << 63)
_LLONG_LIMIT = 1 << 63


def clean(msg: bytes) -> bytes:
    if b"\r" in msg or b"\n" in msg:
        return msg.replace(b"\r", b" ").replace(b"\n", b" ")
    return msg


def lua_number_to_int(v: int | float) -> int:
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            return LLONG_MIN
        v = int(v)
    if -_LLONG_LIMIT <= v < _LLONG_LIMIT:
        return v
    return LLONG_MIN


def format_double(d: float) -> bytes:
    """%.17g as Redis prints a double reply (NaN keeps its sign like glibc's printf)."""
    if d != d:
        return b"-nan" if math.copysign(1.0, d) < 0 else b"nan"
    if d in (math.inf, -math.inf):
        return b"inf" if d > 0 else b"-inf"
    return b"%.17g" % d


_SLICE = 4000  # arguments per call into Lua, well inside its C stack (LUAI_MAXCSTACK 8000); even


def chunked(make: Any, add: Any) -> Any:
    """A Lua constructor (mkobj, mkmap, mkset) made callable with any number of arguments: past a
    slice's worth, the table is made from the first slice and `add` inserts the rest, in order, so
    the table is the one a single call would build (a 100,000-field HGETALL or cjson object)."""

    def build(*args: Any) -> Any:
        if len(args) <= _SLICE:
            return make(*args)
        t = make(*args[:_SLICE])
        for i in range(_SLICE, len(args), _SLICE):
            add(t, *args[i:i + _SLICE])
        return t

    return build


class ReplyParser:
    """RESP reply bytes -> Lua values, for one Lua state's helpers."""

    __slots__ = ("table_from", "h", "mkmap", "mkset", "reader")

    def __init__(self, lua: Any, helpers: Any) -> None:
        self.table_from = lua.table_from
        self.h = helpers
        self.mkmap = chunked(helpers.mkmap, helpers.addmap)
        self.mkset = chunked(helpers.mkset, helpers.addset)
        self.reader = hiredis.Reader()

    def array2(self, data: bytes) -> Any:
        """A RESP2 array reply (HGETALL, HMGET, ZRANGE, ...) as a Lua table: parsed by hiredis when
        it holds only integers, bulks, nulls and arrays, whose values hiredis keeps apart (a status
        or an error it would not: those replies, and any whose bulks merely look as if they held
        one, go to the general parser)."""
        if data == b"*0\r\n":  # an empty array (ZRANGEBYSCORE or LRANGE of nothing): nothing to parse
            return self.table_from()
        if b"\r\n+" in data or b"\r\n-" in data:
            return self.parse(data)[0]
        reader = self.reader
        reader.feed(data)
        items = reader.gets()
        if items is None:
            return False  # *-1, the null array
        for x in items:
            if x is None or type(x) is list:
                return self.table_from(_lua_items(items, self.table_from))
        return self.table_from(items)

    def parse(self, data: bytes) -> tuple[Any, bytes | None]:
        """(value, None) or (None, error message) when the reply is an error."""
        t = data[0]
        if t == 43:  # +
            return self.h.ok(data[1:-2]), None
        if t == 36 and data[1] != 45:  # $
            return data[data.index(b"\r\n") + 2:-2], None
        if t == 58:  # :
            return int(data[1:-2]), None
        if t == 45:  # -
            return None, data[1:-2]
        # Aggregates: a parser per reply, so building Lua values may re-enter safely.
        return _Aggregate(data, self)._value(), None


class _Aggregate:
    __slots__ = ("table_from", "h", "mkmap", "mkset", "pos", "data")

    def __init__(self, data: bytes, parser: ReplyParser) -> None:
        self.data = data
        self.pos = 0
        self.table_from = parser.table_from
        self.h = parser.h
        self.mkmap = parser.mkmap
        self.mkset = parser.mkset

    def _line(self) -> bytes:
        data, pos = self.data, self.pos
        nl = data.index(b"\r\n", pos)
        self.pos = nl + 2
        return data[pos + 1:nl]

    def _value(self) -> Any:
        data = self.data
        t = data[self.pos]
        if t == 36:  # $
            n = int(self._line())
            if n < 0:
                return False
            start = self.pos
            self.pos = start + n + 2
            return data[start:start + n]
        if t == 58:
            return int(self._line())
        if t == 43:
            return self.h.ok(self._line())
        if t == 45:
            return self.h.err(self._line())
        if t == 42 or t == 62:  # * >
            n = int(self._line())
            if n < 0:
                return False
            return self.table_from([self._value() for _ in range(n)])
        if t == 37:  # %
            n = int(self._line())
            flat = []
            for _ in range(n):
                flat.append(self._value())
                flat.append(self._value())
            return self.mkmap(*flat)
        if t == 126:  # ~
            n = int(self._line())
            return self.mkset(*[self._value() for _ in range(n)])
        if t == 95:  # _
            self._line()
            return None
        if t == 35:  # #
            return self._line() == b"t"
        if t == 44:  # ,
            text = self._line()
            return self.h.double(_parse_double(text))
        if t == 40:  # (
            return self.h.big_number(self._line())
        if t == 61:  # =
            n = int(self._line())
            start = self.pos
            self.pos = start + n + 2
            body = data[start:start + n]
            return self.h.verbatim(body[:3], body[4:])
        if t == 124:  # | attribute: skipped, the value follows
            n = int(self._line())
            for _ in range(2 * n):
                self._value()
            return self._value()
        raise ValueError(f"unexpected reply type {chr(t)!r}")


def _lua_items(items: list, table_from: Any) -> list:
    """hiredis's values as Redis's Lua sees them in RESP2: a null is false, an array a table."""
    out = []
    for x in items:
        if x is None:
            out.append(False)
        elif type(x) is list:
            out.append(table_from(_lua_items(x, table_from)))
        else:
            out.append(x)
    return out


def _parse_double(text: bytes) -> float:
    low = text.lower()
    if low in (b"inf", b"+inf"):
        return math.inf
    if low == b"-inf":
        return -math.inf
    return float(text)


# Redis converts a returned table recursively on the Lua C stack, checking for 4 free slots
# (LUAI_MAXCSTACK 8000) on every value; past that the value becomes this error, so a table that
# contains itself ends after ~8,000 levels.  The conversion below is iterative and counts the slots
# Redis would hold: 2 at the top, +1 per array element, +4 for a map key and +3 for its value, +3
# per set member.
_STACK_SLOTS = 8000 - 4
_STACK_LIMIT = b"-ERR reached lua stack limit\r\n"


def lua_to_resp(v: Any, enc: R.Encoder, script_resp: int, shape: Any, errors: list | None = None) -> bytes:
    """A script's return value as the caller's reply (enc is the caller's protocol; shape is the
    Lua helper `reply_shape`, which reads a table the raw way Redis does).  `errors`, when given,
    gets (table, text) for each {err=...} table made a reply, for errorstats (Redis counts each,
    at any depth)."""
    cls = type(v)
    if cls is bytes:
        return R.bulk(v)
    if cls is int or cls is float:
        return R.integer(lua_number_to_int(v))
    out: list[bytes] = []
    todo: list[tuple[Any, int]] = []
    if v is not None and cls is not bool and lua_type(v) == "table":
        # the tables scripts return most, a status ({ok=...}) and a flat array of strings and
        # numbers, straight from their shape; any other one's shape starts the general walk
        parts = shape(v)
        if type(parts) is tuple:
            flat = _flat_reply(parts)
            if flat is not None:
                return flat
        elif parts == 8:  # kind 8 alone: an empty array ({})
            return b"*0\r\n"
        _table_to_resp(v, enc, shape, 2, out, todo, errors, parts)
    else:
        todo.append((v, 2))
    while todo:
        v, used = todo.pop()
        cls = type(v)
        if used > _STACK_SLOTS:  # checked on entry, whatever the value's type
            out.append(_STACK_LIMIT)
        elif cls is bytes:
            out.append(R.bulk(v))
        elif cls is int or cls is float:
            out.append(R.integer(lua_number_to_int(v)))
        elif cls is bool:
            if script_resp == 2:
                out.append(R.ONE if v else enc.null)
            else:
                out.append(enc.boolean(v))
        elif v is None or lua_type(v) != "table":
            out.append(enc.null)
        else:
            _table_to_resp(v, enc, shape, used, out, todo, errors)
    return out[0] if len(out) == 1 else b"".join(out)


def _flat_reply(parts: tuple) -> bytes | None:
    """A table's reply from its shape when it is a status or an array of only strings and numbers
    (no member needs a walk of its own), else None."""
    kind = parts[0]
    if kind == 2:
        return b"+" + clean(parts[1]) + b"\r\n"
    if kind != 8:
        return None
    items = parts[1:]
    out = [b"*%d\r\n" % len(items)]
    for x in items:
        cls = type(x)
        if cls is bytes:
            out.append(R.bulk(x))
        elif cls is int or cls is float:
            out.append(R.integer(lua_number_to_int(x)))
        else:
            return None
    return b"".join(out)


def _table_to_resp(t: Any, enc: R.Encoder, shape: Any, used: int, out: list[bytes],
                   todo: list[tuple[Any, int]], errors: list | None, parts: Any = None) -> None:
    """Emit a table's reply, or its header with its members queued on `todo` (last first);
    `parts`: its shape, when the caller has read it already."""
    if parts is None:
        parts = shape(t)
    if type(parts) is not tuple:  # kind 8 alone: an empty array
        out.append(b"*0\r\n")
        return
    kind = parts[0]
    if kind == 8 or kind == 9:
        items = parts[1:] if kind == 8 else _long_array(t, parts[1], shape)
        out.append(b"*%d\r\n" % len(items))
        used += 1
        todo.extend([(x, used) for x in reversed(items)])
    elif kind == 1:
        text = clean(parts[1])
        if errors is not None:
            errors.append((t, text))
        out.append(b"-" + text + b"\r\n")
    elif kind == 2:
        out.append(b"+" + clean(parts[1]) + b"\r\n")
    elif kind == 3:
        body = format_double(float(parts[1]))
        out.append(b"," + body + b"\r\n" if enc.version == 3 else R.bulk(body))
    elif kind == 4:
        out.append(enc.big_number(clean(parts[1])))
    elif kind == 5:
        out.append(enc.verbatim(parts[2], parts[1]))
    elif kind == 6:
        pairs = list(parts[1].items())  # lua_next order, raw, as Redis walks it
        out.append(enc.map_header(len(pairs)))
        for k, val in reversed(pairs):
            todo.append((val, used + 3))
            todo.append((k, used + 4))
    else:  # 7: a set
        keys = list(parts[1].keys())
        out.append(enc.set_header(len(keys)))
        todo.extend([(k, used + 3) for k in reversed(keys)])


def _long_array(t: Any, n: int, shape: Any) -> tuple[Any, ...]:
    items: list[Any] = []
    for i in range(1, n + 1, _SLICE):
        got = shape(t, i, min(n, i + _SLICE - 1))
        if type(got) is tuple:
            items.extend(got)
        else:
            items.append(got)
    return tuple(items)

