"""RDB: Redis's snapshot format (version 10, as Redis 7.0 writes it; 11 and 12 for the later
generations, `format_of`), for dump files and for DUMP / RESTORE payloads.  Sans-I/O: values and datasets go to bytes and come back from bytes;
where the bytes live (a file, a child process, a command argument) is the server's concern.

The format, as far as this module writes and reads it:

- Lengths use RDB's variable encoding: 00xxxxxx (6 bits), 01xxxxxx xxxxxxxx (14 bits, big
  endian), 0x80 + 4 bytes or 0x81 + 8 bytes (big endian); 11xxxxxx announces a special string
  encoding: an integer of 1, 2 or 4 bytes (little endian) or an LZF-compressed string
  (0xC3, compressed length, original length, data).
- A string is written as Redis's rdbSaveRawString does, so the bytes are Redis's: up to 11 bytes
  that spell an int32 exactly become an integer encoding; longer than 20 bytes is LZF-compressed
  when `compress` (rdbcompression) and the result is smaller; otherwise length + bytes.
- A value is a type byte and a body.  Redis 7.0 writes: string (0), set (2, hashtable encoding),
  sorted set (5, skiplist, members from the highest score down with binary double scores), hash
  (4, hashtable), set intset (11), hash listpack (16), sorted set listpack (17), list quicklist 2
  (18: node count, then per node its container and listpack) and stream listpacks 2 (19).  The
  listpack, intset and quicklist bodies are the exact bytes the storage types already keep or
  produce, so DUMP payloads are byte-for-byte Redis's for the same value and encoding.  Redis 7.2
  adds the set listpack (20: the listpack of the members in the set's order), written and read
  only in format 11 and later (compat-version 7.2+); in 7.0 mode type 20 is unknown, as in 7.0.15.
- Reading accepts every type Redis 7.0 reads: the ones above and the older ones that earlier
  Redis versions wrote (plain list 1, sorted set with text scores 3, zipmap 9, ziplists 10, 12,
  13, quicklist of ziplists 14, stream listpacks 15), converting them as Redis 7.0's loader does.
- A file is "REDIS0010", auxiliary fields (0xFA key value), function libraries (0xF5 code), then
  per database 0xFE id and 0xFB sizes followed by its keys (optionally 0xFC expiry in ms, 0xF8
  LRU idle seconds, 0xF9 LFU counter, then type, key, value), then 0xFF and the CRC64 of all
  before it (eight zero bytes when checksums are off).  A DUMP payload is a type and body, the
  RDB version as two little-endian bytes and the CRC64.

Invariants.  Reading trusts nothing: every value is checked as deeply as Redis's
sanitize-dump-payload does (listpacks, intsets, ziplists walked entry by entry; no duplicate
members or fields; stream nodes, counters and PEL ownership consistent), because a value that
loaded wrong would fail later inside a command.  Any inconsistency raises `RDBError`; a read
past the end raises `RDBError` too (`Short`), except in a file still arriving (`Arriving`, a
replica's diskless load), where it makes read_file wait for more bytes and read the record again.  An empty collection reads as `EMPTY` (Redis skips such keys
when loading a file and rejects them in RESTORE).  New values get the encoding Redis 7.0 would
give them on load, from the encoding limits in `Limits`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal

try:  # compiled, `cython.compiled` is true at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

from raxdb.storage import intset, lpcodec
from raxdb.storage.crc64 import crc64
from raxdb.storage.hashfe import HashEx, track
from raxdb.storage.hashtype import Hash
from raxdb.storage.intset import canonical_int
from raxdb.storage.keyspace import Database, is_string
from raxdb.storage.listpack import Listpack, canonical_pairs, checked_count, checked_values
from raxdb.storage.lzf import compress as lzf_compress
from raxdb.storage.lzf import decompress_at as lzf_decompress_at
from raxdb.storage.quicklist import PackedNode, Quicklist
from raxdb.storage.rax import Rax
from raxdb.storage.set_type import Intset, RSet, table_of
from raxdb.storage.stream import NACK, U64, Consumer, ConsumerGroup, Stream
from raxdb.storage.ziplist import ziplist_entries, zipmap_pairs
from raxdb.storage.zset import ZSet

if not cython.compiled:  # compiled, rdb.pxd cimports it: an inline C function
    from raxdb.protocol.reply import decimal

RDB_VERSION = 10
# The format of the files and DUMP payloads a server writes, and the newest it reads: 10 (Redis 7.0)
# unless the server answers as Redis 7.2 (compat-version 7.2: 11) or 7.4 (12), see `format_of`.
# Each server passes its own (Limits.rdb_version when reading): servers of different generations
# may run in one process.  A hash with field deadlines is written in 7.4's types (24, 25) whatever
# the version, as only a 7.4 server makes such hashes.
RDB_VERSION_72 = 11
RDB_VERSION_74 = 12


def format_of(compat_version: tuple[int, int]) -> int:
    """The RDB format of a server answering as Redis `compat_version` (10, 11 or 12)."""
    return RDB_VERSION_74 if compat_version >= (7, 4) else RDB_VERSION_72 if compat_version >= (7, 2) else RDB_VERSION

# value types (RDB_TYPE_*)
T_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_ZSET_2 = 0, 1, 2, 3, 4, 5
T_MODULE, T_MODULE_2 = 6, 7
T_HASH_ZIPMAP, T_LIST_ZIPLIST, T_SET_INTSET, T_ZSET_ZIPLIST, T_HASH_ZIPLIST = 9, 10, 11, 12, 13
T_LIST_QUICKLIST, T_STREAM_LISTPACKS, T_HASH_LISTPACK, T_ZSET_LISTPACK = 14, 15, 16, 17
T_LIST_QUICKLIST_2, T_STREAM_LISTPACKS_2 = 18, 19
T_SET_LISTPACK = 20  # Redis 7.2
# Redis 7.4's hashes with field deadlines (the _PRE_GA ones: its release candidates')
T_HASH_METADATA_PRE_GA, T_HASH_LISTPACK_EX_PRE_GA, T_HASH_METADATA, T_HASH_LISTPACK_EX = 22, 23, 24, 25
_VALUE_TYPES = frozenset((0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25))

# opcodes (RDB_OPCODE_*)
OP_FUNCTION2, OP_FUNCTION_PRE_GA, OP_MODULE_AUX = 0xF5, 0xF6, 0xF7
OP_IDLE, OP_FREQ, OP_AUX, OP_RESIZEDB = 0xF8, 0xF9, 0xFA, 0xFB
OP_EXPIRETIME_MS, OP_EXPIRETIME, OP_SELECTDB, OP_EOF = 0xFC, 0xFD, 0xFE, 0xFF

# Each type's kind, indexed by its byte (0 for none: an unknown type): what read_value dispatches
# on, and the record loop's test of a type byte.  Compiled (rdb.pxd), the table is indexed and the
# kinds compared as C integers, where each test of a type against the names above would make and
# compare a Python int.
_K_STRING, _K_LIST, _K_SET, _K_ZSET, _K_HASH, _K_STREAM, _K_MODULE = 1, 2, 3, 4, 5, 6, 7
_KINDS = bytes([_K_STRING, _K_LIST, _K_SET, _K_ZSET, _K_HASH, _K_ZSET, _K_MODULE, _K_MODULE, 0, _K_HASH,
                _K_LIST, _K_SET, _K_ZSET, _K_HASH, _K_LIST, _K_STREAM, _K_HASH, _K_ZSET, _K_LIST, _K_STREAM,
                _K_SET, 0, _K_HASH, _K_HASH, _K_HASH, _K_HASH])
_FIRST_OPCODE = OP_FUNCTION2  # every byte from here on is an opcode

_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3
_QL_PLAIN, _QL_PACKED = 1, 2
_QL_MIN_COMPRESS_IMPROVE = 8

_HUGE = 1 << 62  # a length past any file's
_DOUBLE = struct.Struct("<d")
_I64 = struct.Struct("<q")

EMPTY: Any = object()  # what a value reads as when its collection is empty


class RDBError(ValueError):
    """The bytes are not a valid RDB file or payload; the message says what was wrong.

    `reports` are the lines Redis's loader would log for the same failure (rdbReportCorruptRDB /
    rdbReportReadError), innermost first: an error in a stream's listpack read, say, is followed by
    "Stream listpacks loading failed.".  Empty for failures Redis does not report (a plain short
    read).  `key`, `type` and `offset` say where in a file it happened (set by read_file)."""

    def __init__(self, msg: str, reported: bool = False) -> None:
        super().__init__(msg)
        self.reports: list[str] = [msg] if reported else []
        self.key: bytes | None = None
        self.type: int | None = None
        self.offset = 0


class Short(RDBError):
    """A read past the end of the bytes at hand: a truncated file, or (an `Arriving` RDB) bytes
    that have not come yet."""

    def __init__(self) -> None:
        super().__init__("unexpected end of data")


# redis-check-rdb's names for the value types (type 19, past its table, is "unknown" there too)
_CHECK_TYPE_NAMES = ["string", "list-linked", "set-hashtable", "zset-v1", "hash-hashtable", "zset-v2",
                     "module-value", "", "", "hash-zipmap", "list-ziplist", "set-intset", "zset-ziplist",
                     "hash-ziplist", "quicklist", "stream", "hash-listpack", "zset-listpack", "quicklist-v2",
                     "set-listpack"]


def report_lines(exc: RDBError) -> list[str]:
    """rdbReportError's log lines for `exc`, innermost first (its message alone if Redis would
    not report it)."""
    return [f"Internal error in RDB reading offset {exc.offset}, function at rdb.py -> {msg}"
            for msg in exc.reports or [str(exc)]]


def check_report(exc: RDBError, keys_read: int, expires: int, already_expired: int) -> str:
    """What redis-check-rdb prints about the first failure, which redis-server runs on a dump
    file it cannot load: where it happened, the key and its type, the counts so far."""
    out = ["--- RDB ERROR DETECTED ---", f"[offset {exc.offset}] {report_lines(exc)[0]}"]
    if exc.key is not None:
        t = exc.type if exc.type is not None else -1
        name = _CHECK_TYPE_NAMES[t] if 0 <= t < len(_CHECK_TYPE_NAMES) else "unknown"
        out += ["[additional info] While doing: read-object-value",
                f"[additional info] Reading key '{exc.key.decode(errors='replace')}'",
                f"[additional info] Reading type {t} ({name})"]
    out += [f"[info] {keys_read} keys read", f"[info] {expires} expires", f"[info] {already_expired} already expired"]
    return "".join(line + "\n" for line in out)


def corrupt(msg: str) -> RDBError:
    """An error Redis reports, with its wording."""
    return RDBError(msg, True)


class _Context:
    """Adds Redis's report for the part being read to an error raised inside it."""

    __slots__ = ("msg",)

    def __init__(self, msg: str) -> None:
        self.msg = msg

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> Literal[False]:
        if isinstance(exc, RDBError):
            exc.reports.append(self.msg)
        return False


class ChecksumError(RDBError):
    """The file's CRC64 is not its contents' (the loader logs both, as Redis does)."""

    def __init__(self, computed: int, stored: int) -> None:
        super().__init__("RDB CRC error")
        self.computed, self.stored = computed, stored


@dataclass
class Limits:
    """The encoding thresholds a loaded value is judged by (the server's config)."""

    hash_max_entries: int = 128
    hash_max_value: int = 64
    zset_max_entries: int = 128
    zset_max_value: int = 64
    set_max_intset: int = 512
    list_fill: int = -2
    list_depth: int = 0
    set_max_listpack_entries: int = 0  # 0: no listpack sets (7.0 mode)
    set_max_listpack_value: int = 0
    rdb_version: int = RDB_VERSION  # the newest format accepted (format_of)


# ---- writing ---------------------------------------------------------------------------------
class Writer:
    """An RDB byte stream being built.  `sink`, when given, receives the bytes in chunks of about
    `chunk` bytes (a file's write) while `crc` keeps the running checksum of everything sunk."""

    __slots__ = ("buf", "compress", "sink", "chunk", "crc")

    def __init__(self, compress: bool = True, sink: Callable[[bytes], Any] | None = None,
                 chunk: int = 1 << 16) -> None:
        self.buf = bytearray()
        self.compress = compress
        self.sink = sink
        self.chunk = chunk
        self.crc = 0

    def flush(self) -> None:
        if self.sink is not None and self.buf:
            data = bytes(self.buf)
            self.crc = crc64(data, self.crc)
            self.sink(data)
            self.buf = bytearray()

    def maybe_flush(self) -> None:
        if self.sink is not None and len(self.buf) >= self.chunk:
            self.flush()

    def length(self, n: int) -> None:
        buf = self.buf
        if n < 64:
            buf.append(n)
        elif n < 16384:
            buf.append(0x40 | n >> 8)
            buf.append(n & 0xFF)
        elif n <= 0xFFFFFFFF:
            buf.append(0x80)
            buf += n.to_bytes(4, "big")
        else:
            buf.append(0x81)
            buf += n.to_bytes(8, "big")

    def string(self, s: bytes | bytearray) -> None:
        """rdbSaveRawString: integer encoding, LZF or plain, whichever Redis would pick."""
        n = len(s)
        if n <= 11 and n:
            v = canonical_int(bytes(s))
            if v is not None and -(1 << 31) <= v < 1 << 31:
                self._int(v)
                return
        if n > 20 and self.compress:
            packed = lzf_compress(bytes(s), n - 4)
            if packed is not None:
                self.lzf_blob(packed, n)
                return
        self.length(n)
        self.buf += s

    def _int(self, v: int) -> None:
        buf = self.buf
        if -128 <= v <= 127:
            buf.append(0xC0)
            buf.append(v & 0xFF)
        elif -32768 <= v <= 32767:
            buf.append(0xC1)
            buf += v.to_bytes(2, "little", signed=True)
        else:
            buf.append(0xC2)
            buf += v.to_bytes(4, "little", signed=True)

    def lzf_blob(self, packed: bytes, original: int) -> None:
        self.buf.append(0xC0 | _ENC_LZF)
        self.length(len(packed))
        self.length(original)
        self.buf += packed

    def ms(self, t: int) -> None:
        self.buf += _I64.pack(t)

    def raw(self, b: bytes) -> None:
        self.buf += b

    def double(self, d: float) -> None:
        self.buf += _DOUBLE.pack(d)


def write_value(w: Writer, value: Any) -> int:
    """Write `value`'s body as Redis 7.0's rdbSaveObject does; returns its type byte."""
    if type(value) is Intset:  # a set's intset bytes, as held
        w.string(value)  # type: ignore[arg-type]  # Intset is a bytes subclass made at import (set_type)
        return T_SET_INTSET
    if is_string(value):
        w.string(value)
        return T_STRING
    kind = value.type_name
    if kind == "list":
        return _write_list(w, value)
    if type(value) is HashEx and (value.ttl or value.lp is not None):  # listpackex stays so
        return _write_hash_ex(w, value)
    if kind == "hash":
        lp = value.listpack()
        if lp is not None:  # the bytes held are the payload
            w.string(lp)
            return T_HASH_LISTPACK
        w.length(len(value))
        for f, v in value.items():
            w.string(f)
            w.string(v)
        return T_HASH
    if kind == "set":
        members = value.data
        if type(members) is bytes:  # the intset's own bytes
            w.string(members)
            return T_SET_INTSET
        if type(members) is list:  # a listpack (only a 7.2+ server makes one)
            w.string(value.listpack_bytes())
            return T_SET_LISTPACK
        w.length(len(members))
        for m in members:
            w.string(m)
        return T_SET
    if kind == "zset":
        if value.is_listpack():
            w.string(value.lp)  # the bytes held, as they are
            return T_ZSET_LISTPACK
        w.length(len(value))
        for s, m in value.sk.order.islice(reverse=True):  # highest first: the loader inserts at the head
            w.string(m)
            w.double(s)
        return T_ZSET_2
    if kind == "stream":
        _write_stream(w, value)
        return T_STREAM_LISTPACKS_2
    raise RDBError(f"cannot serialize a {kind}")


def _write_hash_ex(w: Writer, h: HashEx) -> int:
    """A hash with field deadlines as Redis 7.4's rdbSaveObject writes it: its earliest deadline
    (ms, 8 bytes), then a listpack of field, value, deadline (0: none) triples (listpack-encoded,
    RDB_TYPE_HASH_LISTPACK_EX), or the field count and, per field, its deadline relative to the
    earliest plus one (0: none) as a length, the field, the value (RDB_TYPE_HASH_METADATA)."""
    low = h.min_deadline() or 0  # none (a listpackex whose deadlines all went): 0
    w.ms(low)
    if h.lp is not None:
        w.string(h.listpack_ex())
        return T_HASH_LISTPACK_EX
    ttl = h.ttl
    w.length(len(h))
    for f, v in h.items():
        t = ttl.get(f)
        w.length(0 if t is None else t - low + 1)
        w.string(f)
        w.string(v)
    return T_HASH_METADATA


def _write_list(w: Writer, ql: Quicklist) -> int:
    nodes = ql.nodes
    w.length(len(nodes))
    for node in nodes:
        w.length(_QL_PACKED)
        if isinstance(node, PackedNode):
            # A compressed node is saved as the LZF blob quicklist compression keeps for it.
            lp = node.listpack()
            packed = lzf_compress(lp, len(lp))
            if packed is not None and len(packed) + _QL_MIN_COMPRESS_IMPROVE < len(lp):
                w.lzf_blob(packed, len(lp))
                continue
            w.string(lp)
        else:
            w.string(node)  # the node's listpack, the bytes the list holds
    return T_LIST_QUICKLIST_2


def _write_stream(w: Any, s: Stream) -> None:
    """A stream's body into `w`: a Writer, or storage/rdbwalk.pyx's output, which has its
    interface (length, string, ms, raw)."""
    w.length(len(s.rax))
    for key, lp in s.rax.items():
        w.string(key)
        w.string(lp)
    w.length(s.length)
    for v in (s.last_id, s.first_id, s.max_deleted_id):
        w.length(v >> 64)
        w.length(v & U64)
    w.length(s.entries_added)
    groups = s.cgroups
    w.length(len(groups) if groups is not None else 0)
    if groups is None:
        return
    for name, cg in groups.items():
        w.string(name)
        w.length(cg.last_id >> 64)
        w.length(cg.last_id & U64)
        w.length(cg.entries_read & U64)
        w.length(len(cg.pel))
        for key, nack in cg.pel.items():
            w.raw(key)
            w.ms(nack.delivery_time)
            w.length(nack.delivery_count)
        w.length(len(cg.consumers))
        for cname, cons in cg.consumers.items():
            w.string(cname)
            w.ms(cons.seen_time)
            w.length(len(cons.pel))
            for key in cons.pel.keys():
                w.raw(key)


def seal(body: bytes | bytearray, version: int = RDB_VERSION) -> bytes:
    """A DUMP-style payload: body, RDB version (2 bytes LE), CRC64 (8 bytes LE)."""
    data = bytes(body) + version.to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


def unseal(payload: bytes, check_crc: bool = True, version: int = RDB_VERSION) -> bytes | None:
    """verifyDumpPayload: the body, or None when the version is newer than `version` (the
    server's format) or the checksum is wrong."""
    if len(payload) < 10:
        return None
    if int.from_bytes(payload[-10:-8], "little") > version:
        return None
    if check_crc and crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        return None
    return payload[:-10]


def dump(value: Any, compress: bool = True, version: int = RDB_VERSION) -> bytes:
    """DUMP's payload for `value`, in RDB format `version` (format_of)."""
    w = Writer(compress)
    w.buf.append(0)
    w.buf[0] = write_value(w, value)
    return seal(w.buf, version)


def restore(payload: bytes, limits: Limits, check_crc: bool = True) -> Any:
    """RESTORE's value from a payload.  Returns None when the version or checksum is wrong; raises
    RDBError for a payload that does not decode (EMPTY for an empty collection)."""
    if unseal(payload, check_crc, limits.rdb_version) is None:
        return None
    # Redis reads the value from the whole payload, its footer included: a value that runs into
    # the footer's bytes (possible only with the checksum skipped) loads as Redis loads it.
    r = Reader(payload)
    t = r.byte()
    if (t not in _VALUE_TYPES and t not in (T_MODULE, T_MODULE_2)) or (t == T_SET_LISTPACK and limits.rdb_version < RDB_VERSION_72):
        # rdbLoadObjectType: unreported (type 20 is unknown to 7.0)
        raise RDBError("unknown value type")
    try:
        return read_value(r, t, limits)
    except RDBError as exc:
        exc.offset = r.pos
        raise


# ---- reading ---------------------------------------------------------------------------------
class Reader:
    """A position in RDB bytes; every read past the end raises RDBError."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        p = self.pos
        end = p + n
        if end > len(self.data):
            raise Short
        if n < 0:
            raise RDBError("unexpected end of data")
        self.pos = end
        return self.data[p:end]

    def byte(self) -> int:
        p = self.pos
        if p >= len(self.data):
            raise Short
        self.pos = p + 1
        return self.data[p]

    def _len(self) -> tuple[int, bool]:
        """(length, is-encoded): rdbLoadLenByRef."""
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return (b & 0x3F) << 8 | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int.from_bytes(self.take(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.take(8), "big"), False
        raise corrupt("Unknown length encoding %d in rdbLoadLen()" % (b >> 6))

    def length(self) -> int:
        p = self.pos
        data = self.data
        if p < len(data):
            b = data[p]
            if b < 0x40:  # the common 6-bit length, without _len's tuple
                self.pos = p + 1
                return b
            if b < 0x80 and p + 1 < len(data):  # 14 bits
                self.pos = p + 2
                return (b & 0x3F) << 8 | data[p + 1]
        return self._len()[0]  # rdbLoadLen(rdb, NULL): an encoding's number stands as the length

    def string(self) -> bytes:
        p = self.pos
        data = self.data
        if p < len(data):
            # the usual strings without _len's tuple: plain ones of a 6-bit length (most keys,
            # fields and small values) or a 14-bit one, integers, LZF (values over 20 bytes)
            b = data[p]
            if b < 0x80:
                if b < 0x40:
                    p += 1
                    end = p + b
                elif p + 1 < len(data):
                    end = p + 2 + ((b & 0x3F) << 8 | data[p + 1])
                    p += 2
                else:
                    raise Short
                if end > len(data):
                    raise Short
                self.pos = end
                s = data  # compiled, a pointer to its bytes, whose slice is a new bytes (no slice object)
                return s[p:end]
            if b == 0xC0 | _ENC_LZF:
                self.pos = p + 1
                return self._lzf()
            if 0xC0 <= b <= 0xC0 | _ENC_INT32:  # an integer of 1, 2 or 4 bytes, little endian
                width = 1 << (b & 3)
                end = p + 1 + width
                if end > len(data):
                    raise Short
                x = data[p + width]  # from the signed top byte down
                if x >= 128:
                    x -= 256
                while width > 1:
                    width -= 1
                    x = x * 256 + data[p + width]
                self.pos = end
                return decimal(x)
        n, encoded = self._len()
        if not encoded:
            return self.take(n)
        raise corrupt("Unknown RDB string encoding type %d" % n)

    def _lzf(self) -> bytes:
        """An LZF string after its encoding byte: compressed and original lengths, the data
        (rdbLoadLzfStringObject)."""
        clen = self.length()
        ulen = self.length()
        if ulen == 0:  # lzf_decompress's failure value is 0 too: Redis takes any data here
            self.take(clen)
            return b""
        if clen >= _HUGE:  # (compared first: no file holds it, and it may not fit a C integer)
            raise Short
        n = clen
        p = self.pos
        if n > len(self.data) - p:
            raise Short  # a short read: unreported, as rioRead's failure
        self.pos = p + n
        try:  # read in place, not sliced out first
            return lzf_decompress_at(self.data, p, n, ulen)
        except (ValueError, OverflowError) as exc:  # Overflow: compiled, a length past int64
            raise corrupt("Invalid LZF compressed string") from exc

    def ms(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def double(self) -> float:
        return _DOUBLE.unpack(self.take(8))[0]

    def text_double(self) -> float:
        """rdbLoadDoubleValue: the old text form (253 nan, 254 +inf, 255 -inf)."""
        n = self.byte()
        if n == 253:
            return float("nan")
        if n == 254:
            return float("inf")
        if n == 255:
            return float("-inf")
        text = self.take(n)  # outside the try: a short read is not a bad double
        try:
            return float(text)
        except ValueError as exc:
            raise RDBError("invalid double") from exc


def read_value(r: Reader, t: int, limits: Limits) -> Any:
    """rdbLoadObject for type `t`: the value, EMPTY for an empty collection."""
    kind = _KINDS[t] if 0 <= t < len(_KINDS) else 0
    if kind == _K_STRING:
        return r.string()
    if kind == _K_HASH:
        return _read_hash(r, t, limits)
    if kind == _K_LIST:
        return _read_list(r, t, limits)
    if kind == _K_SET:
        return _read_set(r, t, limits)
    if kind == _K_ZSET:
        return _read_zset(r, t, limits)
    if kind == _K_STREAM:
        return _read_stream(r, t)
    if kind == _K_MODULE:
        with _Context("Short read module id"):
            module_id = r.length()
        raise corrupt("The RDB file contains module data I can't load: no matching module type "
                      f"'{module_type_name(module_id)}'")
    raise corrupt("Unknown RDB encoding type %d" % t)


_MODULE_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_type_name(module_id: int) -> str:
    """moduleTypeNameByID: the 9-character type name in a module value's 64-bit id (its low 10
    bits are the encoding version)."""
    module_id >>= 10
    chars = []
    for _ in range(9):
        chars.append(_MODULE_NAME_CHARS[module_id & 63])
        module_id >>= 6
    return "".join(reversed(chars))


def _listpack_items(blob: bytes, what: str) -> list[bytes]:
    """A listpack's entries, checked; `what` names it in Redis's report ("Hash listpack")."""
    try:
        return checked_values(blob)
    except (ValueError, IndexError) as exc:
        raise corrupt(f"{what} integrity check failed.") from exc


def _ziplist_items(blob: bytes, what: str) -> list[bytes]:
    try:
        return ziplist_entries(blob)
    except ValueError as exc:
        raise corrupt(f"{what} integrity check failed.") from exc


def _pairs(items: list[bytes], what: str) -> list[tuple[bytes, bytes]]:
    """A hash's or sorted set's listpack or ziplist as pairs: an odd count, or a field twice, fails
    the integrity check as the pair validators of Redis's deep sanitization do."""
    if len(items) % 2:
        raise corrupt(f"{what} integrity check failed.")
    it = iter(items)
    pairs = list(zip(it, it, strict=True))
    if len({f for f, _ in pairs}) != len(pairs):
        raise corrupt(f"{what} integrity check failed.")
    return pairs


def _read_list(r: Reader, t: int, limits: Limits) -> Any:
    fill, depth = limits.list_fill, limits.list_depth
    if t == T_LIST:
        items = [r.string() for _ in range(r.length())]
        return Quicklist.from_items(items, fill, depth) if items else EMPTY
    if t == T_LIST_ZIPLIST:
        items = _ziplist_items(r.string(), "List ziplist")
        return Quicklist.from_items(items, fill, depth) if items else EMPTY
    blobs = []
    container = _QL_PACKED
    for _ in range(r.length()):
        if t == T_LIST_QUICKLIST_2:
            container = r.length()
            if container not in (_QL_PLAIN, _QL_PACKED):
                raise corrupt("Quicklist integrity check failed.")
        blob = r.string()
        if not blob:  # a node of no bytes, even a plain one, is refused (rdbLoadObject)
            raise RDBError("empty quicklist node")
        if t != T_LIST_QUICKLIST_2:
            blob = Listpack.from_values(_ziplist_items(blob, "Ziplist")).bytes()
        elif container == _QL_PLAIN:
            blob = Listpack.from_values([blob]).bytes()
        else:
            try:  # checked, not decoded: the node keeps these bytes
                checked_count(blob)
            except (ValueError, IndexError) as exc:
                raise corrupt("Listpack integrity check failed.") from exc
        blobs.append(blob)
    ql = Quicklist.from_listpacks(blobs, fill, depth)
    return ql if len(ql) else EMPTY


def _read_set(r: Reader, t: int, limits: Limits) -> Any:
    if t == T_SET_INTSET:
        blob = bytes(r.string())
        try:
            intset.validate(blob)
        except ValueError as exc:
            raise corrupt("Intset integrity check failed.") from exc
        n = intset.length(blob)
        if not n:
            return EMPTY
        if n > limits.set_max_intset:
            return RSet(table_of(intset.members(blob)))
        return Intset(blob)  # the bytes as loaded
    if t == T_SET_LISTPACK:
        return _read_set_listpack(r.string(), limits)
    n = r.length()
    if n == 0:
        return EMPTY
    members: list[bytes] = []
    try:
        for _ in range(n):
            members.append(r.string())
    except RDBError:
        # Redis adds each member as it reads it: a repeat before the bad bytes is what it reports
        if _first_repeat(members) is not None:
            raise corrupt("Duplicate set members detected") from None
        raise
    if n > limits.set_max_intset:  # Redis makes a hashtable at once
        s = RSet(table_of(members))
    else:
        s = RSet.of(members, _set_limits(limits))
    if len(s) != n:
        raise corrupt("Duplicate set members detected")
    return s.stored()


def _set_limits(limits: Limits) -> tuple[int, int, int, bool]:
    """storage/set_type.py's limits tuple from the loader's."""
    lp_entries = limits.set_max_listpack_entries
    return (limits.set_max_intset, lp_entries, limits.set_max_listpack_value, lp_entries > 0)


def _read_set_listpack(blob: bytes, limits: Limits) -> Any:
    """RDB_TYPE_SET_LISTPACK (Redis 7.2): the listpack checked deeply, no member twice (else
    "Set listpack integrity check failed."), a hashtable past set-max-listpack-entries."""
    if limits.rdb_version < RDB_VERSION_72:  # 7.0.15 does not know the type
        raise corrupt("Unknown RDB encoding type %d" % T_SET_LISTPACK)
    items = _listpack_items(blob, "Set listpack")
    if len(set(items)) != len(items):
        raise corrupt("Set listpack integrity check failed.")
    if not items:
        return EMPTY
    if len(items) > limits.set_max_listpack_entries:
        return RSet(table_of(items))
    return RSet(items)


def _first_repeat(items: list[bytes]) -> int | None:
    """The index of the first item equal to an earlier one, or None.  The loaders read a whole
    collection and let its container find repeats (no set beside it on the way); Redis checks each
    element as it adds it, so this finds which repeat it would have met first, only once something
    failed."""
    seen: set[bytes] = set()
    for i, item in enumerate(items):
        if item in seen:
            return i
        seen.add(item)
    return None


def _score(text: bytes) -> float:
    try:
        v = float(text)
    except ValueError as exc:
        raise RDBError("invalid sorted set score") from exc
    if v != v:
        raise RDBError("Zset with NAN score detected")
    return v


def _read_zset(r: Reader, t: int, limits: Limits) -> Any:
    if t in (T_ZSET, T_ZSET_2):
        n = r.length()
        pairs = []
        seen = set()
        for _ in range(n):
            m = r.string()
            s = r.double() if t == T_ZSET_2 else r.text_double()
            if s != s:
                raise corrupt("Zset with NAN score detected")
            if m in seen:
                raise corrupt("Duplicate zset fields detected")
            seen.add(m)
            pairs.append((s, m))
        if not pairs:
            return EMPTY
        pairs.sort()
        return ZSet.from_pairs(pairs, limits.zset_max_entries, limits.zset_max_value)
    blob = r.string()
    if t == T_ZSET_LISTPACK:
        items = _listpack_items(blob, "Zset listpack")
        members = items[0::2]
        if len(items) % 2 or len(set(members)) != len(members):  # _pairs' checks, without its pairs
            raise corrupt("Zset listpack integrity check failed.")
        pairs = [(_score(s), m) for s, m in zip(items[1::2], members, strict=True)]
    else:  # a ziplist becomes the listpack of the same entries, as Redis converts it on load
        items = _ziplist_items(blob, "Zset ziplist")
        pairs = [(_score(s), m) for m, s in _pairs(items, "Zset ziplist")]
        blob = lpcodec.pack(items)
    if not pairs:
        return EMPTY
    z = ZSet.from_listpack(blob, pairs)  # the bytes are kept: the listpack stays one, whatever its sizes
    if len(pairs) > limits.zset_max_entries:
        z.to_skiplist()
    return z


def _read_hash_ex(r: Reader, t: int, limits: Limits) -> Any:
    """Redis 7.4's hashes with field deadlines (rdbLoadObject's RDB_TYPE_HASH_METADATA and
    RDB_TYPE_HASH_LISTPACK_EX, and their release candidates' forms without the earliest deadline
    and, for the metadata one, with absolute deadlines).  Fields past their deadline are kept, as
    Redis keeps them: expiry reclaims them once the server runs."""
    triples: list[tuple[bytes, bytes, int]] = []
    if t in (T_HASH_LISTPACK_EX, T_HASH_LISTPACK_EX_PRE_GA):
        if t == T_HASH_LISTPACK_EX:
            with _Context("Hash listpackex integrity check failed."):
                r.ms()
        blob = r.string()
        items = _listpack_items(blob, "Hash listpack")
        if len(items) % 3:
            raise corrupt("Hash listpack integrity check failed.")
        last = 0  # the fields with a deadline come first, soonest first (lpValidateIntegrityAndDups)
        for i in range(0, len(items), 3):
            w = canonical_int(items[i + 2])
            if w is None or w < 0 or w > _HFE_MAX or (w and (w < last or last < 0)):
                raise corrupt("Hash listpack integrity check failed.")
            last = w if w else -1
            triples.append((items[i], items[i + 1], w))
        as_lp = len(triples) <= limits.hash_max_entries
    else:
        low = 0
        if t == T_HASH_METADATA:
            with _Context("Hash failed loading minExpire"):
                low = r.ms()
        n = r.length()
        for _ in range(n):
            ttl = r.length()
            # uint64 arithmetic, as Redis's: a minExpire read as negative wraps (past the maximum)
            w = ((ttl + low - 1) & _U64 if ttl else 0) if t == T_HASH_METADATA else ttl
            if w > _HFE_MAX:
                raise corrupt(f"invalid expireAt time: {w}")
            triples.append((r.string(), r.string(), w))
        as_lp = n <= limits.hash_max_entries and all(
            len(f) <= limits.hash_max_value and len(v) <= limits.hash_max_value for f, v, _ in triples)
        if as_lp:  # a dict's fields in any order, into a listpackex as Redis adds each one: the
            # fields with a deadline first, by deadline (one goes before the first as late or
            # later), then the others as they came (else its DUMP is refused: found by the fuzzer)
            dated = [x for x in triples if x[2]]
            dated.reverse()  # so that of two with the same deadline the later is first
            dated.sort(key=_deadline)  # (stable)
            triples = dated + [x for x in triples if not x[2]]
    if not triples:
        return EMPTY
    h = HashEx.from_triples(triples, as_lp)
    if len(h) != len(triples):
        raise corrupt("Hash with dup elements" if as_lp else "Duplicate hash fields detected")
    return h


_HFE_MAX = 0xFFFFFFFFFFFF  # EB_EXPIRE_TIME_MAX
_U64 = (1 << 64) - 1
_deadline = itemgetter(2)  # a (field, value, deadline) triple's


def _read_hash(r: Reader, t: int, limits: Limits) -> Any:
    if t >= T_HASH_METADATA_PRE_GA:
        return _read_hash_ex(r, t, limits)
    if t == T_HASH:
        n = r.length()
        pairs: list[tuple[bytes, bytes]] = []
        try:
            for _ in range(n):
                pairs.append((r.string(), r.string()))
        except RDBError:
            _check_hash_repeats(pairs, n, limits)
            raise
        if not pairs:
            return EMPTY
        as_lp = n <= limits.hash_max_entries and all(
            len(f) <= limits.hash_max_value and len(v) <= limits.hash_max_value for f, v in pairs)
        h = Hash.from_pairs(pairs, as_lp)
        if len(h) != len(pairs):  # a field repeated
            _check_hash_repeats(pairs, n, limits)
        return h
    else:
        if t == T_HASH_ZIPMAP:
            try:
                pairs = zipmap_pairs(r.string())
            except ValueError as exc:
                raise corrupt("Zipmap integrity check failed.") from exc
            if not pairs:  # zipmapValidateIntegrity refuses a zipmap of no pairs
                raise corrupt("Zipmap integrity check failed.")
            j = _first_repeat([f for f, _ in pairs])
            if j is not None:
                raise corrupt(f"Hash zipmap with dup elements, or big length ({len(pairs[j][0])})")
            as_lp = len(pairs) <= limits.hash_max_entries and all(
                len(f) <= limits.hash_max_value and len(v) <= limits.hash_max_value for f, v in pairs)
        else:
            blob = r.string()
            if t == T_HASH_LISTPACK:
                # the usual small hash: well formed, canonical, no field twice, checked in one walk
                # that decodes nothing, and kept as it is (what the long way below ends in too)
                count = canonical_pairs(blob)
                if 0 < count and count >> 1 <= limits.hash_max_entries:
                    h = Hash()
                    h.lp = blob
                    return h
            what = "Hash listpack" if t == T_HASH_LISTPACK else "Hash ziplist"
            items = _listpack_items(blob, what) if t == T_HASH_LISTPACK else _ziplist_items(blob, what)
            pairs = _pairs(items, what)
            as_lp = len(pairs) <= limits.hash_max_entries
            if as_lp and pairs and t == T_HASH_LISTPACK:  # checked: the hash keeps these bytes
                return Hash.from_listpack(blob, items)
    if not pairs:
        return EMPTY
    h = Hash.from_pairs(pairs, as_lp)
    if len(h) != len(pairs):
        raise corrupt("Duplicate hash fields detected")
    return h


def _check_hash_repeats(pairs: list[tuple[bytes, bytes]], n: int, limits: Limits) -> None:
    """Report a repeated field of a plain-encoded hash as Redis meets it: while the hash is still a
    listpack (no more than hash-max-listpack-entries fields, none of the pairs before it too long),
    its duplicate search says "Hash with dup elements"; once a hash table, adding the field fails."""
    j = _first_repeat([f for f, _ in pairs])
    if j is None:
        return
    lp = n <= limits.hash_max_entries and all(
        len(f) <= limits.hash_max_value and len(v) <= limits.hash_max_value for f, v in pairs[:j])
    raise corrupt("Hash with dup elements" if lp else "Duplicate hash fields detected")


def _read_id(r: Reader) -> int:
    return r.length() << 64 | r.length()


def _read_stream(r: Reader, t: int) -> Stream:
    # Read in Redis's order, each part under the report Redis adds when it fails (_Context).
    s = Stream()
    with _Context("Stream listpacks len loading failed."):
        nodes = r.length()
    for _ in range(nodes):
        with _Context("Stream master ID loading failed: invalid encoding or I/O error."):
            key = r.string()
        if len(key) != 16:
            raise corrupt("Stream node key entry is not the size of a stream ID")
        with _Context("Stream listpacks loading failed."):
            lp = r.string()
        _listpack_items(lp, "Stream listpack")
        if len(lp) <= 7:
            raise corrupt("Empty listpack inside stream")
        if not s.rax.try_insert(key, bytearray(lp)):
            raise corrupt("Listpack re-added with existing key")
    with _Context("Stream object metadata loading failed."):
        s.length = r.length()
        s.last_id = _read_id(r)
        if t == T_STREAM_LISTPACKS_2:
            s.first_id = _read_id(r)
            s.max_deleted_id = _read_id(r)
            s.entries_added = r.length()
    if t != T_STREAM_LISTPACKS_2:
        first = s.first_entry_id()
        s.first_id = first or 0
        s.entries_added = s.length
    s._last_valid = None
    if s.length and not len(s.rax):
        raise corrupt("Stream length inconsistent with rax entries")
    _check_stream_nodes(s)
    with _Context("Stream cgroup count loading failed."):
        ngroups = r.length()
    if ngroups:
        s.cgroups = Rax()
    for _ in range(ngroups):
        with _Context("Error reading the consumer group name from Stream"):
            name = r.string()
        with _Context("Stream cgroup ID loading failed."):
            last_id = _read_id(r)
        if t == T_STREAM_LISTPACKS_2:
            with _Context("Stream cgroup offset loading failed."):
                entries_read = r.length()
            if entries_read > 1 << 63:
                entries_read -= 1 << 64
        else:
            entries_read = s.estimate_entries_read(last_id)
        cg = ConsumerGroup(last_id, entries_read)
        if not s.cgroups.try_insert(name, cg):  # type: ignore[union-attr]
            raise corrupt(f"Duplicated consumer group name {name.decode(errors='replace')}")
        with _Context("Stream PEL size loading failed."):
            pel_size = r.length()
        for _ in range(pel_size):
            with _Context("Stream PEL ID loading failed."):
                key = r.take(16)
            with _Context("Stream PEL NACK loading failed."):
                nack = NACK(None, r.ms())
                nack.delivery_count = r.length()
            if not cg.pel.try_insert(key, nack):
                raise corrupt("Duplicated global PEL entry loading stream consumer group")
        with _Context("Stream consumers num loading failed."):
            nconsumers = r.length()
        for _ in range(nconsumers):
            with _Context("Error reading the consumer name from Stream group."):
                cons = Consumer(r.string(), 0)
            if not cg.consumers.try_insert(cons.name, cons):
                raise corrupt("Duplicate stream consumer detected.")
            with _Context("Stream short read reading seen time."):
                cons.seen_time = r.ms()
            with _Context("Stream consumer PEL num loading failed."):
                pel_size = r.length()
            for _ in range(pel_size):
                with _Context("Stream short read reading PEL streamID."):
                    key = r.take(16)
                found = cg.pel.find(key, None)
                if found is None:
                    raise corrupt("Consumer entry not found in group global PEL")
                # Redis re-points a NACK another consumer already owns (and would crash on it
                # later); it is refused here, as the same duplicate
                if found.consumer is not None or not cons.pel.try_insert(key, found):
                    raise corrupt("Duplicated consumer PEL entry  loading a stream consumer group")
                found.consumer = cons
        for _, nack in cg.pel.items():
            if nack.consumer is None:
                raise corrupt("Stream CG PEL entry without consumer")
    return s


def _check_stream_nodes(s: Stream) -> None:
    """Deep integrity of the nodes and the metadata that describes them (Redis checks each node
    as it reads it, streamValidateListpackIntegrity, and reports any failure as the node's).
    The usual stream passes Stream.checked_as_loaded's one walk; any other meets validate."""
    if s.checked_as_loaded():
        return
    try:
        s.validate()
    except (AssertionError, ValueError, IndexError, TypeError, KeyError) as exc:
        raise corrupt("Stream listpack integrity check failed.") from exc


# ---- files -------------------------------------------------------------------------------------
class KeyRecord:
    """One key of a file being read: its database, name, value, and what came with it (a loaded
    file makes one per key, so it is a slotted record, an extension type compiled)."""

    __slots__ = ("db", "key", "value", "expire_ms", "idle_s", "freq")

    def __init__(self, db: int, key: bytes, value: Any, expire_ms: int | None, idle_s: int | None,
                 freq: int | None) -> None:
        self.db = db
        self.key = key
        self.value = value
        self.expire_ms = expire_ms
        self.idle_s = idle_s
        self.freq = freq


def write_prologue(w: Writer, aux: Iterable[tuple[bytes, bytes]], functions: Iterable[bytes],
                   version: int = RDB_VERSION) -> None:
    """What a file of RDB format `version` holds before its databases: the header, the aux
    fields, the function libraries (storage/rdbwalk.pyx's writer continues from here)."""
    w.buf += b"REDIS%04d" % version
    for k, v in aux:
        w.buf.append(OP_AUX)
        w.string(k)
        w.string(v)
    for code in functions:
        w.buf.append(OP_FUNCTION2)
        w.string(code)


def write_file(w: Writer, aux: Iterable[tuple[bytes, bytes]], functions: Iterable[bytes],
               dbs: Iterable[tuple[int, int, int, Iterable[tuple[bytes, Any, int | None]]]],
               idle: Callable[[int, bytes], int | None] | None = None,
               freq: Callable[[int, bytes], int | None] | None = None, checksum: bool = True,
               version: int = RDB_VERSION) -> None:
    """rdbSaveRio: a whole file of RDB format `version` into `w`.  `dbs` gives (id, size, expires size, keys) for each
    non-empty database, keys as (key, value, expiry ms or None); `idle` / `freq` give a key's
    LRU idle seconds / LFU counter when the eviction policy keeps them (else None)."""
    write_prologue(w, aux, functions, version)
    for dbid, size, nexpires, keys in dbs:
        w.buf.append(OP_SELECTDB)
        w.length(dbid)
        w.buf.append(OP_RESIZEDB)
        w.length(size)
        w.length(nexpires)
        for key, value, expire in keys:
            if expire is not None:
                w.buf.append(OP_EXPIRETIME_MS)
                w.ms(expire)
            if idle is not None:
                i = idle(dbid, key)
                if i is not None:
                    w.buf.append(OP_IDLE)
                    w.length(i)
            if freq is not None:
                f = freq(dbid, key)
                if f is not None:
                    w.buf.append(OP_FREQ)
                    w.buf.append(f)
            at = len(w.buf)
            w.buf.append(0)
            w.string(key)
            w.buf[at] = write_value(w, value)
            w.maybe_flush()
    w.buf.append(OP_EOF)
    w.flush()
    crc = w.crc if w.sink is not None else crc64(w.buf)
    w.buf += (crc if checksum else 0).to_bytes(8, "little")
    w.flush()


class Arriving:
    """An RDB read while it arrives (a replica's diskless load: Redis's loader reads its
    master's socket as it parses, so a slow loader slows the transfer, and the payload is never
    held whole).  The loader `add`s what comes; read_file, when a record runs past the bytes it
    has, yields ("need", n): the loader adds at least n more bytes (or, at the transfer's end,
    sets `ended`) and read_file reads that record again from its start.  Reading a record has
    no effect until it is whole, so a second attempt has nothing to undo; asking for as many
    bytes again as the record has so far bounds a huge record's attempts to twice its parse.
    The bytes read are let go as the read moves on (their checksum kept); `rest` is what came
    after the RDB (an EOF mark)."""

    __slots__ = ("chunks", "ended", "rest")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.ended = False
        self.rest = b""

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)


_LET_GO = 1 << 16


class KeySink:
    """Where read_file adds keys itself, without an event for each: a load's common key, whose
    database is one of `dbs` (keyspace Databases, by number) and which has no LRU idle time, no
    LFU counter and no deadline before `now_ms`, goes into its database here (Database.add_new,
    then its deadline), unless the database has it already.  Every other key (a duplicate, a
    database out of range, a deadline past, LRU/LFU data) is still a ("key", KeyRecord) event,
    for the loader's own rules.  `added` counts the keys added here and `expiring` those of
    them with a deadline.  A loaded file's per-key cost is then its parse and its insertion."""

    __slots__ = ("dbs", "now_ms", "added", "expiring")

    def __init__(self, dbs: list[Database], now_ms: int) -> None:
        self.dbs = dbs
        self.now_ms = now_ms
        self.added = 0
        self.expiring = 0


_AT_EOF = ("eof", None)  # what _Records.next returns at the EOF opcode (read_file's own event)


class _Records:
    """read_file's reading: the bytes at hand (`r` reads them; `base` is the file offset of
    r.data[0] and `crc` the checksum of the bytes before it, let go: only an Arriving file lets
    any go), the state between records (the database, a key's expiry, idle time and LFU
    counter read before it), and `next`, which reads records up to the next event.  Compiled
    (rdb.pxd), an extension type whose reads are C calls: a key the sink takes costs no event,
    no record object and no exception frame of its own."""

    __slots__ = ("r", "base", "crc", "arriving", "limits", "sink", "target", "db", "expire", "idle", "freq",
                 "key", "t", "version", "stored", "tick", "next_tick", "tick_at", "start", "refill_at")

    def __init__(self, data: bytes, limits: Limits, tick: int, arriving: Arriving | None,
                 sink: KeySink | None) -> None:
        self.r = Reader(data, 0)
        self.base = 0
        self.crc = 0
        self.arriving = arriving
        self.limits = limits
        self.sink = sink
        self.target: Database | None = None
        self.db = 0
        self._select(0)
        self.expire: int | None = None
        self.idle: int | None = None
        self.freq: int | None = None
        self.key: bytes | None = None  # while its value is read: the key an error names
        self.t = 0
        self.version = RDB_VERSION
        self.stored = b""  # the checksum after the EOF opcode
        self.tick = tick
        self.next_tick = tick or 1 << 62
        self.tick_at = -1  # a tick due after the key event just returned
        self.start = 0  # the offset (in r.data) of the record being read
        self.refill_at = -1  # after a ("need", n): the record to read again once bytes came

    def can_wait(self) -> bool:
        """After a short read: may more bytes come?"""
        a = self.arriving
        return a is not None and (bool(a.chunks) or not a.ended)

    def want(self, start: int) -> int:
        """How many more bytes to wait for before the record at `start` is read again."""
        return max(len(self.r.data) - start, 1)

    def refill(self, start: int) -> None:
        """Take what arrived; the read restarts at `start`.  The bytes before it are let go
        once there are 64 kB of them (checksummed in bulk: crc64 is slow on small pieces)."""
        r = self.r
        a = self.arriving
        assert a is not None
        if start >= _LET_GO:
            self.crc = crc64(r.data[:start], self.crc)
            self.base += start
            r.data = r.data[start:] + b"".join(a.chunks)
            r.pos = 0
        else:
            r.data += b"".join(a.chunks)
            r.pos = start
        a.chunks.clear()

    def _select(self, db: int) -> None:
        self.db = db
        sink = self.sink
        self.target = sink.dbs[db] if sink is not None and db < len(sink.dbs) else None

    def next(self) -> tuple[str, Any]:
        """The next event (read_file's, or _AT_EOF), reading records up to it.  A short read
        waits for an arriving file's bytes (a ("need", n) event, then the record again)."""
        while True:
            if self.tick_at >= 0:
                at = self.tick_at
                self.tick_at = -1
                return "tick", at
            if self.refill_at >= 0:
                self.refill(self.refill_at)
                self.refill_at = -1
            try:
                return self._run()
            except RDBError as exc:
                if self.key is not None:  # in a value: where, for the loader's report (redis-check-rdb's)
                    exc.key, exc.type, exc.offset = self.key, self.t, self.base + self.r.pos
                    self.key = None
                if not isinstance(exc, Short) or not self.can_wait():
                    raise
            a = self.arriving
            assert a is not None
            if not a.chunks:
                self.refill_at = self.start
                return "need", self.want(self.start)
            self.refill(self.start)

    def _run(self) -> tuple[str, Any]:
        """Records from r.pos up to the next event; Short if the bytes end inside one (`start`
        is where it began)."""
        r = self.r
        limits = self.limits
        while True:
            self.start = r.pos
            t = r.byte()
            if t < _FIRST_OPCODE:  # a key
                if t >= len(_KINDS) or not _KINDS[t]:
                    raise corrupt("Unknown RDB encoding type %d" % t)
                key = r.string()
                self.key = key
                self.t = t
                value = read_value(r, t, limits)
                self.key = None
                expire = self.expire
                target = self.target
                sink = self.sink  # set whenever target is
                if value is EMPTY:
                    event: tuple[str, Any] | None = ("empty", (self.db, key))
                elif (target is not None and sink is not None and self.idle is None and self.freq is None
                      and (expire is None or expire >= sink.now_ms) and target.add_new(key, value)):
                    if expire is not None:
                        target.set_expire(key, expire)
                        sink.expiring += 1
                    if type(value) is HashEx:
                        track(target, key, value)
                    sink.added += 1
                    event = None
                else:
                    event = ("key", KeyRecord(self.db, key, value, expire, self.idle, self.freq))
                self.expire = self.idle = self.freq = None
                at = self.base + r.pos
                if at >= self.next_tick:
                    self.next_tick = (at // self.tick + 1) * self.tick
                    if event is None:
                        return "tick", at
                    self.tick_at = at
                if event is not None:
                    return event
                continue
            if t == OP_EXPIRETIME_MS:
                self.expire = r.ms()
                continue
            if t == OP_EXPIRETIME:
                self.expire = int.from_bytes(r.take(4), "little", signed=True) * 1000
                continue
            if t == OP_FREQ:
                self.freq = r.byte()
                continue
            if t == OP_IDLE:
                self.idle = r.length()
                continue
            if t == OP_EOF:
                if self.version >= 5:
                    self.stored = r.take(8)
                return _AT_EOF
            if t == OP_SELECTDB:
                self._select(r.length())
                continue
            if t == OP_RESIZEDB:
                return "resize", (self.db, r.length(), r.length())
            if t == OP_AUX:
                return "aux", (r.string(), r.string())
            if t == OP_MODULE_AUX:
                raise RDBError("The RDB file contains AUX module data I can't load: no matching module")
            if t == OP_FUNCTION_PRE_GA:
                raise RDBError("Pre-release function format not supported.")
            if t == OP_FUNCTION2:
                return "function", r.string()
            raise corrupt("Unknown RDB encoding type %d" % t)  # (every byte from 0xF5 is an opcode)


def read_file(data: bytes, limits: Limits, tick: int = 0, arriving: Arriving | None = None,
              sink: KeySink | None = None) -> Iterator[tuple[str, Any]]:
    """rdbLoadRio over a whole file's bytes, as events: ("aux", (key, value)), ("function", code),
    ("resize", (db, size, expires)), ("key", KeyRecord), ("empty", (db, key)) for a key whose
    collection was empty (Redis skips those), then ("end", offset) once the checksum checked out:
    the offset of the first byte after the RDB (an old AOF's commands follow its RDB preamble).
    With `tick`, also ("tick", offset) after the key that crosses each multiple of `tick` bytes
    (rdbLoadProgressCallback's loading-process-events-interval-bytes: where a loader may serve
    clients).  With `arriving`, `data` is what has come so far, and ("need", n) asks for more
    (see Arriving).  With `sink`, the keys it takes go into their databases with no event (see
    KeySink).  Raises RDBError with Redis's wording where it has one."""
    rec = _Records(data, limits, tick, arriving, sink)
    r = rec.r
    while len(r.data) < 9 and rec.can_wait():
        if not arriving.chunks:  # type: ignore[union-attr]
            yield "need", 9 - len(r.data)
        rec.refill(0)
    head = r.data[:9]
    if len(head) < 9 or head[:5] != b"REDIS":
        raise RDBError("Wrong signature trying to load DB from file")
    try:
        version = int(head[5:9])
    except ValueError:
        raise RDBError("Wrong signature trying to load DB from file") from None
    if version < 1 or version > limits.rdb_version:
        raise RDBError("Can't handle RDB format version %d" % version)
    rec.version = version
    r.pos = 9
    while True:
        event = rec.next()
        if event is _AT_EOF:
            break
        yield event
    stored = rec.stored
    if stored:
        expected = int.from_bytes(stored, "little")
        if expected and (computed := crc64(r.data, rec.crc, r.pos - 8)) != expected:
            raise ChecksumError(computed, expected)
    if arriving is not None:
        arriving.rest = r.data[r.pos:] + b"".join(arriving.chunks)
        arriving.chunks.clear()
    yield "end", rec.base + r.pos
