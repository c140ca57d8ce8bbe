"""cmsgpack.unpack against redis-server: the decoder in front (cbridge.pyx's `rx_mp_unpack`, built;
msgpack_lua.py's Lua decoder, interpreted: `make test-pure` runs these too) and the Python unpack
it hands the rest to must together answer as lua-cmsgpack does.

Each case decodes bytes written out in the script (so no packer is trusted) and returns what a
script can observe of the result: values, types, `#` of arrays with holes, the order `pairs`
walks a map in, and the wording and position of errors, direct, under pcall and on a later line.
"""

from __future__ import annotations

import struct

import pytest

pytestmark = pytest.mark.pure


def lua_bytes(data: bytes) -> str:
    """A Lua string literal of `data`."""
    return "'" + "".join(f"\\{b}" for b in data) + "'"


def ev(diff, body: str) -> bytes:
    return diff("EVAL", body, 0)


def show(expr: str) -> str:
    """A script returning a flat, comparable description of one unpacked value (typed, with map
    keys in `pairs` order and array lengths as `#` reports them)."""
    return (
        "local function d(v, depth) "
        "  local t = type(v) "
        "  if t == 'table' then "
        "    local out = {'#' .. #v} "
        "    for k, x in pairs(v) do out[#out + 1] = d(k, depth + 1) .. '=' .. d(x, depth + 1) end "
        "    return '{' .. table.concat(out, ',') .. '}' "
        "  end "
        "  if t == 'number' then return 'number:' .. string.format('%.17g', v) end "
        "  return t .. ':' .. tostring(v) "
        "end "
        f"local r = {{{expr}}} "
        "local out = {'n=' .. select('#', " + expr + ")} "
        "for i = 1, table.maxn(r) do out[#out + 1] = d(r[i], 0) end "
        "return table.concat(out, ' ')"
    )


def u(data: bytes) -> str:
    return show(f"cmsgpack.unpack({lua_bytes(data)})")


BOUNDARIES = [
    b"\x00", b"\x7f", b"\xff", b"\xe0", b"\xc0", b"\xc2", b"\xc3",
    b"\xcc\x00", b"\xcc\xff", b"\xcd\x01\x00", b"\xcd\xff\xff", b"\xce\x00\x01\x00\x00", b"\xce\xff\xff\xff\xff",
    b"\xd0\x80", b"\xd0\x7f", b"\xd0\xff", b"\xd1\x80\x00", b"\xd1\x7f\xff", b"\xd1\xff\xff",
    b"\xd2\x80\x00\x00\x00", b"\xd2\x7f\xff\xff\xff", b"\xd2\xff\xff\xff\xff",
    b"\xa0", b"\xa3abc", b"\xbf" + b"x" * 31, b"\xd9\x00", b"\xd9\x03abc", b"\xda\x00\x02hi",
    b"\xdb\x00\x00\x00\x02hi", b"\xc4\x02\x00\x01", b"\xc5\x00\x01\xff", b"\xc6\x00\x00\x00\x01z",
    b"\x90", b"\x93\x01\x02\x03", b"\x93\x01\xc0\x03", b"\x93\xc0\xc0\x03", b"\x9a\x01\xc0\x03" + b"\xc0" * 7,
    b"\x94\xc0\xc0\xc0\xc0", b"\xdc\x00\x02\x01\x02", b"\xdd\x00\x00\x00\x02\xa1a\xa1b",
    b"\x80", b"\x81\xa1a\x01", b"\x82\xa1a\xc0\xa1b\x02", b"\x83\x01\xa1x\x02\xa1y\xa1k\xc3",
    b"\xde\x00\x01\xa1k\x90", b"\xdf\x00\x00\x00\x01\xa1k\x80",
    b"\x81\xc0\x01", b"\x82\xa1a\x01\xc0\x02",  # nil keys: Python's
    b"\x81\x91\x01\xa1v",  # a table as a key
    b"\x92\x81\xa1a\x92\x01\x81\xa1b\xc2\xa0",  # nested
    b"\x91" * 70 + b"\x01",  # deeper than the Lua side goes
    b"\xca\x3f\xc0\x00\x00", b"\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00", b"\x92\x01\xca\x3f\xc0\x00\x00",
    b"\xcf\x00\x00\x00\x00\x00\x00\x00\x05", b"\xd3\xff\xff\xff\xff\xff\xff\xff\xfe", b"\xcf" + b"\xff" * 8,
    b"\xd4\x01\x02", b"\xc1", b"\x91\xc1",
    b"\x01\x02", b"\xc0\xc0", b"\x93\x01\x02\x03\xa1z",  # several values
    # BullMQ's shapes: the job's arguments array (holes) and options map
    b"\x9a\xabbull:bench:\xa0\xa3job\xcf\x00\x00\x01\x9a\xb0\x5e\x8e\x00\xc0\xc0\xc0\xc0\xc0\xc0",
    b"\x8a\xa5token\xb2abcdef-0123-4567:1\xa8keepJobs\x81\xa5count\xff\xa7limiter\xc2"
    b"\xaclockDuration\xcd\x75\x30\xa8attempts\x00\xaemaxMetricsSize\xa0\xa4fpof\xc2\xa4idof\xc2"
    b"\xa4name\xa3job\xa3age\xce\x00\x01\x51\x80",
]

FLOATS = [1.5, -1.5, 1795620383764.0, 0.1, -0.1, 1e300, -1e-300, 1.7976931348623157e308, 2.2250738585072014e-308,
          5e-324, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 2.0 ** 52 + 1, 3.0, -2.0 ** 63]
FLOATS32 = [1.5, -0.25, 3.4e38, 1.17549435e-38, 1e-40, 0.0, -0.0, float("inf"), float("nan"), 16777215.0]
BOUNDARIES += [b"\xcb" + struct.pack(">d", f) for f in FLOATS] + [b"\xca" + struct.pack(">f", f) for f in FLOATS32]
BOUNDARIES += [b"\x92\xcb" + struct.pack(">d", 1e10) + b"\xca" + struct.pack(">f", -3.5),  # floats inside tables
               b"\x81\xcb" + struct.pack(">d", 2.5) + b"\xa1v"]  # a float key

ERRORS = [
    b"", b"\x91", b"\x92\x01", b"\xa3ab", b"\xd9", b"\xd9\x05ab", b"\xda\x00", b"\xdb\x00\x00\x00\x09abc",
    b"\xcc", b"\xcd\x01", b"\xce\x01\x02\x03", b"\xd0", b"\xd1\x01", b"\xd2\x01\x02", b"\xdc\x00\x01",
    b"\xdd\x00\x00\x00\x01", b"\x81\xa1a", b"\xde\x00\x01\x01", b"\xdf\x00\x00", b"\x92\x01\xc1",
    b"\xcb\x3f\xf8\x00", b"\xca\x3f", b"\x91\xcb\x3f\xf8\x00\x00\x00\x00\x00",
    b"\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01",  # a NaN key
]


@pytest.mark.parametrize("data", BOUNDARIES, ids=lambda d: d[:12].hex())
def test_unpack_values(diff, data):
    ev(diff, u(data))


@pytest.mark.parametrize("data", ERRORS, ids=lambda d: d.hex() or "empty")
def test_unpack_errors(diff, data):
    lit = lua_bytes(data)
    ev(diff, f"return cmsgpack.unpack({lit})")
    ev(diff, f"local ok, e = pcall(cmsgpack.unpack, {lit}) return {{tostring(ok), tostring(e)}}")
    ev(diff, f"local x = 1\nlocal ok, e = pcall(function() return cmsgpack.unpack({lit}) end)\n"
             "return {tostring(ok), tostring(e)}")
    ev(diff, f"local x = 1\n\nreturn cmsgpack.unpack({lit})")


@pytest.mark.parametrize("body", [
    "return cmsgpack.unpack()", "return cmsgpack.unpack(nil)", "return cmsgpack.unpack({})",
    "return cmsgpack.unpack(5)", "return cmsgpack.unpack(12)",  # numbers are strings to luaL_checklstring
    "return {cmsgpack.unpack('\\1', 'extra')}", "return type(cmsgpack.unpack)",
    "return select('#', cmsgpack.unpack('\\192'))",
    "local t = cmsgpack.unpack('\\147\\1\\192\\3') t[2] = 2 return #t",
    "return cmsgpack.unpack(cmsgpack.pack({a = {1, 2, {b = 'c'}}})).a[3].b",
    "local s = cmsgpack.pack({1, 'two', {three = 3}, true, false}) "
    "local t = cmsgpack.unpack(s) return cmsgpack.pack(t) == s",
])
def test_unpack_calls(diff, body):
    ev(diff, body)


def _pack(v, out: bytearray) -> None:
    """A MessagePack encoder for the random cases: every width of every type the decoders take."""
    if v is None:
        out += b"\xc0"
    elif v is True or v is False:
        out += b"\xc3" if v else b"\xc2"
    elif isinstance(v, tuple):  # (type byte, payload) as written: an explicit width
        out += v[0] + v[1]
    elif isinstance(v, float):
        out += b"\xcb" + struct.pack(">d", v)
    elif isinstance(v, int):
        if 0 <= v <= 0x7F or -32 <= v < 0:
            out += struct.pack(">b" if v < 0 else ">B", v)
        elif v > 0:
            out += b"\xcc" + struct.pack(">B", v) if v <= 0xFF else (
                b"\xcd" + struct.pack(">H", v) if v <= 0xFFFF else b"\xce" + struct.pack(">I", v))
        else:
            out += b"\xd0" + struct.pack(">b", v) if v >= -128 else (
                b"\xd1" + struct.pack(">h", v) if v >= -32768 else b"\xd2" + struct.pack(">i", v))
    elif isinstance(v, bytes):
        n = len(v)
        out += (bytes([0xA0 + n]) if n < 32 else b"\xd9" + bytes([n]) if n < 256 else b"\xda" + struct.pack(">H", n)) + v
    elif isinstance(v, list):
        n = len(v)
        out += bytes([0x90 + n]) if n < 16 else b"\xdc" + struct.pack(">H", n)
        for x in v:
            _pack(x, out)
    else:  # dict as a list of pairs (keys may repeat, as a packer may write them)
        n = len(v.pairs)
        out += bytes([0x80 + n]) if n < 16 else b"\xde" + struct.pack(">H", n)
        for k, x in v.pairs:
            _pack(k, out)
            _pack(x, out)


class _Map:
    def __init__(self, pairs: list) -> None:
        self.pairs = pairs


def _random_value(rnd, depth: int):
    r = rnd.random()
    if depth < 4 and r < 0.15:
        return [_random_value(rnd, depth + 1) if rnd.random() > 0.2 else None for _ in range(rnd.choice([0, 1, 3, 15, 17]))]
    if depth < 4 and r < 0.3:
        keys = [rnd.choice([b"k%d" % rnd.randrange(6), rnd.randrange(1, 8), True, 1.5]) for _ in range(rnd.randrange(18))]
        return _Map([(k, _random_value(rnd, depth + 1)) for k in keys])
    return rnd.choice([
        None, True, False, rnd.randrange(-40, 200), rnd.randrange(-(1 << 31), 1 << 32), rnd.uniform(-1e15, 1e15),
        b"x" * rnd.choice([0, 1, 31, 32, 255, 256]), b"job:%d" % rnd.randrange(1000),
        (b"\xca", struct.pack(">f", rnd.choice([1.5, -3.25, 1e30]))), (b"\xd9", b"\x02ab"),
        (b"\xdb", b"\x00\x00\x00\x01z"), (b"\xdd", b"\x00\x00\x00\x01\x07"), (b"\xdf", b"\x00\x00\x00\x01\xa1a\xc3"),
    ])


def test_unpack_random(diff):
    """Random nested values (fixed seed) decoded by both servers: raxdb's C decoder (or the Lua
    one, interpreted) builds tables that read back as lua-cmsgpack's do."""
    import random

    rnd = random.Random(38)
    for _ in range(150):
        out = bytearray()
        _pack(_random_value(rnd, 0), out)
        ev(diff, u(bytes(out)))
    deep = b"\x91" * 63 + b"\x01"  # 64 levels: the last nesting both decoders take
    ev(diff, u(deep))
    ev(diff, u(b"\x81\xa1k" + deep))
