"""Bitmap commands (Redis's bitops.c): SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
BITFIELD_RO.

Bitmaps are ordinary string values; a command that writes bits turns the value into a `bytearray`
(Redis's raw encoding) and edits it in place, growing it with zero bytes as needed.  The bit-level
work lives in storage/bits.py; this module is argument parsing and Redis's exact rules:

- Bit offsets are int64 text, >= 0, and below proto-max-bulk-len * 8; BITFIELD's "#n" offsets are
  multiplied by the field width with C's 64-bit wrap-around, as Redis does.
- Writes signal the key (WATCH, `setbit` event, dirty) only when they changed something: a new or
  grown string, or a bit / field whose value differs.  A BITFIELD write whose every operation fails
  under OVERFLOW FAIL still creates (or grows) the string, silently, as Redis does.
- BITFIELD's overflow detection reproduces Redis's int64 arithmetic, including its results for SET
  values far outside the field's range under OVERFLOW SAT.
- BITCOUNT looks the key up before parsing its range (a missing key answers 0 whatever the
  arguments); BITPOS parses the bit first, then looks up, then parses the range.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NOT_INTEGER, SYNTAX, WRONGTYPE, CommandError, c_str
from raxdb.server.base.numparse import canonical_digits_value
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_STRING,
    is_string,
    lookup_read,
    lookup_write,
    modified,
    notify,
    set_key,
    writable_string,
    written,
)
from raxdb.server.table.args import maybe_int, option_word, to_int
from raxdb.server.table.registry import command
from raxdb.storage.bits import (
    GET,
    WRAP,
    apply_fields,
    bitwise,
    count_bits,
    field_ops,
    field_reply,
    first_bit,
    put_field,
    zeroed,
)
from raxdb.storage.keyspace import RawStr

BIT_OFFSET_ERR = "ERR bit offset is not an integer or out of range"
BIT_VALUE_ERR = "ERR bit is not an integer or out of range"
FIELD_TYPE_ERR = ("ERR Invalid bitfield type. Use something like i16 u8. "
                  "Note that u64 is not supported but i64 is.")

_U64 = (1 << 64) - 1


def _s64(x: int) -> int:
    """x wrapped to a signed 64-bit integer, as C arithmetic on int64_t / uint64_t does."""
    x &= _U64
    return x - (1 << 64) if x >> 63 else x


def bit_offset(c, arg: bytes, field_bits: int = 0) -> int:
    """getBitOffsetFromArgument: a bit offset, or "#n" (n fields of `field_bits`) for BITFIELD."""
    return _offset(arg, field_bits, c.server.config.proto_max_bulk_len)


def _offset(arg: bytes, field_bits: int, limit: int) -> int:
    """bit_offset below the bytes' `limit` (proto-max-bulk-len)."""
    # The common offset, plain digits as string2ll reads them, compiled a C read; any other
    # spelling (a sign, "#n", more digits) -1 here, for the general parse below.
    n = canonical_digits_value(arg) if type(arg) is bytes else -1  # (compiled, n is a C integer)
    if n < 0:
        if field_bits and arg[:1] == b"#":
            v = maybe_int(arg[1:])
            if v is None:
                raise CommandError(BIT_OFFSET_ERR)
            n = _s64(v * field_bits)
        else:
            v = maybe_int(arg)
            if v is None:
                raise CommandError(BIT_OFFSET_ERR)
            n = v
    if n < 0 or (n >> 3) >= limit:
        raise CommandError(BIT_OFFSET_ERR)
    return n


def _grows(v, need: int) -> bool:
    """Does a bit write needing `need` bytes create or lengthen the string `v` (lookup_write's
    value, None for a missing key)?  Redis's `dirty` of lookupStringForBitCommand, taken before
    string_for_bits (a value of another type: False, string_for_bits refuses it)."""
    if v is None:
        return True
    cls = type(v)
    if cls is RawStr or cls is bytearray or is_string(v):
        return len(v) < need
    return False


def string_for_bits(c, key: bytes, v, need: int) -> bytearray:
    """lookupStringForBitCommand after its lookup: `v`, the key's value (lookup_write's, None if
    missing), as a bytearray at least `need` bytes long, created or grown with zeros; WRONGTYPE for
    a value of another type.  Whether it was created or grown is `_grows`, which the caller asks
    first: one object returned, not a tuple to build and unpack."""
    if v is None:
        buf = zeroed(need)
        srv = c.server  # (compiled, the server's field base and the Database extension type: C calls)
        db = c.db
        db.add(key, buf, srv.now_ms)  # the lookup's time
        return buf
    cls = type(v)
    if (cls is RawStr or cls is bytearray) and len(v) >= need:
        # Raw already (a bytearray is an sds of its own length, as RawStr.of would make it):
        # edited in place.  Only growth needs a RawStr's allocation and capacity.
        return v
    if not is_string(v):
        raise CommandError(WRONGTYPE)
    buf = writable_string(c, key, v)
    if len(buf) < need:
        buf.make_room(need - len(buf))
        buf.extend(bytes(need - len(buf)))
    return buf


def _bit_range(argv: list[bytes], length: int, start: int, end: int, unit_arg: int) -> tuple[int, int] | None:
    """Normalise a BITCOUNT / BITPOS start..end (negative = from the end, BYTE or BIT units) to an
    inclusive bit range, or None if empty."""
    is_bit = False
    if len(argv) > unit_arg:
        unit = option_word(argv[unit_arg])
        if unit == b"bit":
            is_bit = True
        elif unit != b"byte":
            raise CommandError(SYNTAX)
    total = length << 3 if is_bit else length
    if start < 0:
        start = max(start + total, 0)
    if end < 0:
        end = max(end + total, 0)
    if end >= total:
        end = total - 1
    if start > end:
        return None
    return (start, end) if is_bit else (start << 3, (end << 3) | 7)


# ---- SETBIT / GETBIT ----------------------------------------------------------------------------
def setbit(c, argv):
    key = argv[1]
    offset = bit_offset(c, argv[2])
    on = maybe_int(argv[3])
    if on is None or on & ~1:
        raise CommandError(BIT_VALUE_ERR)
    v = lookup_write(c, key)
    need = (offset >> 3) + 1
    grown = _grows(v, need)
    buf = string_for_bits(c, key, v, need)
    byte = offset >> 3
    mask = 0x80 >> (offset & 7)
    old = buf[byte] & mask
    if grown or bool(old) != on:
        if on:
            buf[byte] |= mask
        else:
            buf[byte] &= ~mask & 0xFF
        written(c, key, NOTIFY_STRING, "setbit")
    return R.ONE if old else R.ZERO


command("setbit")(setbit)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


def getbit(c, argv):
    offset = bit_offset(c, argv[2])
    v = lookup_read(c, argv[1])
    if v is None:
        return R.ZERO
    if not is_string(v):
        raise CommandError(WRONGTYPE)
    byte = offset >> 3
    if byte < len(v) and v[byte] & (0x80 >> (offset & 7)):
        return R.ONE
    return R.ZERO


command("getbit")(getbit)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


# ---- BITCOUNT / BITPOS --------------------------------------------------------------------------
def bitcount(c, argv):
    v = lookup_read(c, argv[1])
    if v is None:
        return R.ZERO
    if not is_string(v):
        raise CommandError(WRONGTYPE)
    argc = len(argv)
    if argc == 2:
        return R.integer(count_bits(v, 0, (len(v) << 3) - 1) if v else 0)
    if argc not in (4, 5):
        raise CommandError(SYNTAX)
    start = to_int(argv[2])
    end = to_int(argv[3])
    if start < 0 and end < 0 and start > end:
        return R.ZERO
    rng = _bit_range(argv, len(v), start, end, 4)
    return R.ZERO if rng is None else R.integer(count_bits(v, *rng))


command("bitcount")(bitcount)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


def bitpos(c, argv):
    bit = to_int(argv[2])
    if bit != 0 and bit != 1:
        raise CommandError("ERR The bit argument must be 1 or 0.")
    v = lookup_read(c, argv[1])
    if v is None:
        return R.integer(-1 if bit else 0)  # a missing key is an endless run of zeros
    if not is_string(v):
        raise CommandError(WRONGTYPE)
    argc = len(argv)
    end_given = argc >= 5
    if argc == 3:
        rng = (0, (len(v) << 3) - 1) if v else None
    elif argc <= 6:
        start = to_int(argv[3])
        if argc == 6:
            _bit_range(argv, 0, 0, 0, 5)  # the unit word is checked before the end argument
        end = to_int(argv[4]) if end_given else len(v) - 1
        rng = _bit_range(argv, len(v), start, end, 5)
    else:
        raise CommandError(SYNTAX)
    if rng is None:
        return R.integer(-1)
    pos = first_bit(v, bit, *rng)
    if pos < 0 and not bit and not end_given:
        # Looking for a clear bit with no explicit end: the string is zero-padded on the right.
        pos = rng[1] + 1
    return R.integer(pos)


command("bitpos")(bitpos)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


# ---- BITOP --------------------------------------------------------------------------------------
def bitop(c, argv):
    op = option_word(argv[1])
    if op not in (b"and", b"or", b"xor", b"not"):
        raise CommandError(SYNTAX)
    if op == b"not" and len(argv) != 4:
        raise CommandError("ERR BITOP NOT must be called with a single source key.")
    sources = []
    length = 0
    for key in argv[3:]:
        v = lookup_read(c, key)
        if v is None:
            sources.append(b"")
            continue
        if not is_string(v):
            raise CommandError(WRONGTYPE)
        sources.append(v)
        if len(v) > length:
            length = len(v)
    dest = argv[2]
    if length:
        result = bitwise(op, sources, length)
        set_key(c, dest, result)
        modified(c, dest)
        notify(c, NOTIFY_STRING, "set", dest)
    elif c.db.delete(dest):  # like Redis's dbDelete: even a key past its TTL counts as deleted
        modified(c, dest)
        notify(c, NOTIFY_GENERIC, "del", dest)
    return R.integer(length)


command("bitop")(bitop)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


# ---- BITFIELD -----------------------------------------------------------------------------------
_OVERFLOW = 3  # the OVERFLOW subcommand's code beside bits.GET, SET, INCRBY
_GET = GET  # (under a private name t_bitops.pxd declares a C int)
# Subcommand and OVERFLOW words, each at the index of its code: GET, SET, INCRBY, _OVERFLOW are 0 to
# 3, WRAP, SAT, FAIL 0 to 2 (bits.py).
_SUBCOMMANDS = (b"get", b"set", b"incrby", b"overflow")
_OVERFLOWS = (b"wrap", b"sat", b"fail")


def _keyword(words: tuple[bytes, ...], arg: bytes) -> int:
    """The code (index) of a keyword among `words` (lower-case letters), -1 if none, as Redis's
    strcasecmp of the argument as a C string matches it.  An argument of a word's length whose
    bytes are its letters in either case is compared in place (compiled, C chars: no hash, no
    lower-cased copy); any other goes through option_word (its NUL-ended, lower-cased form)."""
    if type(arg) is bytes:
        b = arg
        n = len(b)
        s = b  # (compiled, a pointer to the bytes)
        for code in range(len(words)):
            w = words[code]
            if len(w) == n:
                p = w
                k = 0
                while k < n and (s[k] | 32) == p[k]:  # | 32: a capital letter's small one
                    k += 1
                if k == n:
                    return code
    word = option_word(arg)
    return words.index(word) if word in words else -1


def _field_width(arg: bytes) -> int:
    """getBitfieldTypeFromArgument: "i1".."i64" or "u1".."u63" (the digits end at a NUL, as in C),
    as bits.apply_fields's width (negative for a signed field)."""
    n = len(arg)
    if type(arg) is bytes and (n == 2 or n == 3):  # the plain spellings, read as C chars compiled
        b = arg
        w = b[1] - 48
        if not 0 <= w <= 9:
            w = 0
        elif n == 3:
            d = b[2] - 48
            w = w * 10 + d if w and 0 <= d <= 9 else 0  # (a leading zero: the error below)
        if b[0] == 105 and 1 <= w <= 64:  # i
            return -w
        if b[0] == 117 and 1 <= w <= 63:  # u
            return w
    signed = arg[:1] == b"i"
    if not signed and arg[:1] != b"u":
        raise CommandError(FIELD_TYPE_ERR)
    bits = maybe_int(c_str(arg[1:]))
    if bits is None or bits < 1 or bits > (64 if signed else 63):
        raise CommandError(FIELD_TYPE_ERR)
    return -bits if signed else bits


def _bitfield(c, argv: list[bytes], readonly_cmd: bool) -> bytes:
    """bitfieldGeneric: one pass over the arguments into BITFIELD's operations (every error before
    the key is looked up), one pass running them (bits.apply_fields), the reply."""
    args = argv if type(argv) is list else list(argv)  # (compiled, a typed list: C indexing)
    ops = field_ops((len(args) - 2) // 3)  # an operation takes three arguments or four
    count = 0
    mode = WRAP
    writes = False
    highest = 0
    srv = c.server  # (compiled, the server's field base: its config a C field)
    limit = srv.config.proto_max_bulk_len
    j, n = 2, len(args)
    while j < n:
        op = _keyword(_SUBCOMMANDS, args[j])
        if op < 0 or op == _OVERFLOW or j + (2 if op == _GET else 3) >= n:
            if op == _OVERFLOW and j + 1 < n:
                mode = _keyword(_OVERFLOWS, args[j + 1])
                if mode < 0:
                    raise CommandError("ERR Invalid OVERFLOW type specified")
                j += 2
                continue
            raise CommandError(SYNTAX)
        width = _field_width(args[j + 1])
        bits = -width if width < 0 else width
        offset = _offset(args[j + 2], bits, limit)
        value = 0
        if op != _GET:
            writes = True
            if offset + bits - 1 > highest:
                highest = offset + bits - 1
            v = maybe_int(args[j + 3])  # getLongLongFromObjectOrReply: string2ll
            if v is None:
                raise CommandError(NOT_INTEGER)
            value = v
            j += 4
        else:
            j += 3
        put_field(ops, count, op, mode, width, offset, value)
        count += 1
    key = args[1]
    grown = False
    if writes:
        if readonly_cmd:
            raise CommandError("ERR BITFIELD_RO only supports the GET subcommand")
        v = lookup_write(c, key)
        need = (highest >> 3) + 1
        grown = _grows(v, need)
        buf = string_for_bits(c, key, v, need)
    else:
        buf = lookup_read(c, key)
        if buf is not None and not is_string(buf):
            raise CommandError(WRONGTYPE)
    changes = apply_fields(buf, ops, count, grown)
    if changes:
        written(c, key, NOTIFY_STRING, "setbit")
        if changes > 1:
            srv.dirty += changes - 1  # Redis counts one dirty change per changing operation
    return field_reply(ops, count, c.enc.null)


def bitfield(c, argv):
    return _bitfield(c, argv, False)


command("bitfield")(bitfield)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)


def bitfield_ro(c, argv):
    return _bitfield(c, argv, True)


command("bitfield_ro")(bitfield_ro)  # not a decorator: compiled, a cpdef function (t_bitops.pxd)
