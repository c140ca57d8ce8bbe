"""Stream commands (Redis 7.0's t_stream.c): XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD XREADGROUP
XGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO XSETID, on `storage.stream.Stream`.

Replies, errors and the order in which arguments are checked follow Redis 7.0, so the same bad
command fails with the same error.  IDs are 128-bit ints (ms << 64 | seq) throughout.

The read path of XREAD/XREADGROUP is split in two so that blocked readers can be served later by the
same code: `parse_xread(c, argv, group_cmd)` validates the command and resolves each key's position
(`$` becomes the stream's last ID at parse time, as Redis rewrites it before blocking; `>` stays the
GROUP_NEW sentinel, resolved against the group when serving), and `serve_xread(c, req)` returns the
complete reply, or None when no key has anything to deliver yet ("block, or reply null").  A blocking
implementation keeps the XReadRequest of a blocked client and calls serve_xread again when
one of `req.keys` is signalled (the Database signals a stream it creates, deletes or overwrites;
XADD signals; XGROUP DESTROY signals so that readers waiting on a destroyed group get their
NOGROUP error).  The blocking itself is `_blocked_read`, through server/net/blocking.py.

Propagation (server/events/propagate.py) is t_stream.c's, built only while something consumes it: XADD
travels with its generated ID and its approximate trim made exact (`_propagate_xadd`; XTRIM's trim
too), so that a replay keeps the same entries; XREADGROUP, XCLAIM and XAUTOCLAIM never travel
themselves but as what they did to the group: an XCLAIM ... FORCE JUSTID LASTID per NACK they
created, moved or dropped (`propagate_xclaim`), XGROUP SETID for a last ID no XCLAIM carries
(`propagate_group_id`), XGROUP CREATECONSUMER for a NOACK reader's new consumer.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.protocol.request import string2ll
from raxdb.server.base.errors import (
    NO_SUCH_KEY,
    NOT_INTEGER,
    SYNTAX,
    WRONGTYPE,
    CommandError,
    c_str,
    subcommand_syntax,
    wrong_arity,
)
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_STREAM,
    lookup_read,
    lookup_typed,
    modified,
    notify,
    signal_ready,
)
from raxdb.server.net import blocking
from raxdb.server.table.args import known_words, option_word
from raxdb.server.table.registry import command
from raxdb.storage.listpack import string_to_int
from raxdb.storage.stream import (
    INVALID_ENTRIES_READ,
    MAX_ID,
    NACK,
    U64,
    Consumer,
    ConsumerGroup,
    Stream,
    entry_resp,
    format_id,
    id_key,
    key_id,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
GROUP_NEW = MAX_ID  # the `>` of XREADGROUP (Redis uses the maximal ID for it too)
_SPACES = b" \t\n\v\f\r"
_EMPTY = R.EMPTY_ARRAY


# ---- IDs ----------------------------------------------------------------------------------------
def _string2ull(s: bytes) -> int | None:
    """Redis's string2ull: string2ll when it applies, else C strtoull over the whole string."""
    v = string2ll(s)
    if v is not None:
        return v if v >= 0 else None
    t = s.lstrip(_SPACES)
    neg = False
    if t[:1] in (b"+", b"-"):
        neg = t[:1] == b"-"
        t = t[1:]
    if not t or not t.isdigit():
        return None
    v = int(t)
    if v > U64:
        return None
    return (-v) & U64 if neg else v


def parse_id(arg: bytes, missing_seq: int = 0, strict: bool = False) -> int:
    """streamParseIDOrReply: `ms-seq`, `ms` (seq = missing_seq), and unless strict `-` / `+`."""
    v = _parse_id(arg, missing_seq, strict, False)
    return v[0]


def _parse_id(arg: bytes, missing_seq: int, strict: bool, seq_star: bool) -> tuple[int, bool, bool]:
    """(id, seq_given, canonical); seq_star accepts XADD's `ms-*` (seq_given False).  `canonical`:
    the argument is `ms-seq` written as Redis writes IDs (each part an int64's canonical decimal, as
    a Spark sink's id column has them), so XADD may reply with the argument itself."""
    # The common spellings first, read by listpack's C-loop string_to_int (int() of a bytes part
    # costs ~850 instructions for 13 digits): `ms-seq` and `ms`, canonical.  Anything else (leading
    # zeros, signs, spaces, a NUL, u64 parts past int64, `-`, `+`, `ms-*`) takes Redis's rules below.
    if arg[:1].isdigit():
        ms_part, dash, seq_part = arg.partition(b"-")
        ms = string_to_int(ms_part)
        if ms is not None:
            if not dash:
                return (ms << 64) | missing_seq, True, False
            if seq_part[:1].isdigit():
                seq = string_to_int(seq_part)
                if seq is not None:
                    return (ms << 64) | seq, True, True
    if len(arg) > 127:
        raise CommandError(INVALID_ID)
    arg = c_str(arg)  # the C parser stops at a NUL
    if arg == b"-" or arg == b"+":
        if strict:
            raise CommandError(INVALID_ID)
        return (0 if arg == b"-" else MAX_ID), True, False
    ms_part, dash, seq_part = arg.partition(b"-")
    ms = _string2ull(ms_part)
    if ms is None:
        raise CommandError(INVALID_ID)
    if not dash:
        return (ms << 64) | missing_seq, True, False
    if seq_star and seq_part == b"*":
        return ms << 64, False, False
    seq = _string2ull(seq_part)
    if seq is None:
        raise CommandError(INVALID_ID)
    return (ms << 64) | seq, True, False


def parse_interval(arg: bytes, missing_seq: int, start: bool) -> int:
    """An XRANGE/XPENDING/XAUTOCLAIM bound: `(` makes it exclusive."""
    if arg == b"-":
        return 0
    if arg == b"+":
        return MAX_ID
    if len(arg) > 1 and arg[0] == 40:  # '('
        v = _parse_id(arg[1:], missing_seq, True, False)[0]
        if start:
            if v == MAX_ID:
                raise CommandError("ERR invalid start ID for the interval")
            return v + 1
        if v == 0:
            raise CommandError("ERR invalid end ID for the interval")
        return v - 1
    return _parse_id(arg, missing_seq, False, False)[0]


def _int_arg(arg: bytes, err: str = NOT_INTEGER) -> int:
    if arg.isdigit() and len(arg) < 19 and (arg[0] != 48 or len(arg) == 1):
        return int(arg)  # the common small non-negative number
    v = string2ll(arg)
    if v is None:
        raise CommandError(err)
    return v


def _bulk_id(i: int) -> bytes:
    s = b"%d-%d" % (i >> 64, i & U64)
    return b"$%d\r\n%s\r\n" % (len(s), s)


# ---- replies ------------------------------------------------------------------------------------
# One entry as every stream reply shows it: [id, [field, value, ...]].  The storage's encoder, so
# that node views built with it are encoded straight from the listpack (storage/stream.py).
entry_reply = entry_resp


def range_reply(s: Stream, start: int, end: int, count: int, reverse: bool) -> tuple[int, list[bytes]]:
    """(number of entries, encoded entries) in [start, end], at most count (0: all)."""
    out = s.encoded_range(start, end, count, reverse, entry_reply)
    return len(out), out


def _array(items: list[bytes]) -> bytes:
    return b"*%d\r\n%s" % (len(items), b"".join(items))


# ---- lookups ------------------------------------------------------------------------------------
def _stream_read(c, key: bytes) -> Stream | None:
    return lookup_typed(c, key, Stream)


def _stream_write(c, key: bytes) -> Stream | None:
    return lookup_typed(c, key, Stream, write=True)


def _create_stream(c, key: bytes) -> Stream:
    s = Stream()
    c.db.add(key, s)
    return s


# ---- XADD / XTRIM -------------------------------------------------------------------------------
class TrimArgs:
    __slots__ = ("maxlen", "minid", "approx", "limit", "nomkstream", "id", "seq_given", "id_given", "idpos",
                 "trim_idx")

    def __init__(self) -> None:
        self.maxlen: int | None = None
        self.minid: int | None = None
        self.approx = False
        self.limit = 0
        self.nomkstream = False
        self.id = 0
        self.seq_given = True
        self.id_given = False
        self.idpos = 0
        self.trim_idx = 0  # argv index of MAXLEN's count or MINID's ID (trim_strategy_arg_idx)

    @property
    def trims(self) -> bool:
        return self.maxlen is not None or self.minid is not None


# XADD's and XTRIM's option words, and XRANGE's and XREAD's (option_word returns them without a copy)
known_words(b"maxlen", b"minid", b"limit", b"nomkstream", b"count", b"streams", b"block", b"group", b"noack")


def parse_add_trim(c, argv: list[bytes], xadd: bool) -> TrimArgs:
    """streamParseAddOrTrimArgsOrReply: XADD's and XTRIM's options (and XADD's ID position)."""
    a = TrimArgs()
    argc = len(argv)
    limit_given = False
    i = 2
    while i < argc:
        more = argc - 1 - i
        opt = argv[i]
        if xadd and c_str(opt) == b"*":  # "*", "$", ">" are tested as C strings: a NUL may follow
            break
        low = option_word(opt)
        if (low == b"maxlen" or low == b"minid") and more:
            if a.trims:
                raise CommandError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
            a.approx = False
            nxt = argv[i + 1]
            if more >= 2 and c_str(nxt) == b"~":  # tested as C strings: "~\0x" is "~"
                a.approx = True
                i += 1
            elif more >= 2 and c_str(nxt) == b"=":
                i += 1
            if low == b"maxlen":
                a.maxlen = _int_arg(argv[i + 1])
                if a.maxlen < 0:
                    raise CommandError("ERR The MAXLEN argument must be >= 0.")
            else:
                a.minid = _parse_id(argv[i + 1], 0, True, False)[0]
            i += 1
            a.trim_idx = i
        elif low == b"limit" and more:
            a.limit = _int_arg(argv[i + 1])
            if a.limit < 0:
                raise CommandError("ERR The LIMIT argument must be >= 0.")
            limit_given = True
            i += 1
        elif xadd and low == b"nomkstream":
            a.nomkstream = True
        elif xadd:
            a.id, a.seq_given, _ = _parse_id(opt, 0, True, True)
            a.id_given = True
            break
        else:
            raise CommandError(SYNTAX)
        i += 1
    a.idpos = i
    if a.limit and not a.trims:
        raise CommandError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    if not xadd and not a.trims:
        raise CommandError("ERR syntax error, XTRIM must be called with a trimming strategy")
    # From the master or the AOF (must_obey) the trim was made exact where it first ran, and no
    # LIMIT applies; asked only where a trim is approximate or limited, off XADD's plain path.
    if limit_given:
        if c.must_obey:
            a.limit = 0
        elif not a.approx:
            raise CommandError("ERR syntax error, LIMIT cannot be used without the special ~ option")
    elif a.approx:
        a.limit = 0 if c.must_obey else c.server.config.stream_node_limits[2]
    else:
        a.limit = 0
    return a


def _trim(s: Stream, a: TrimArgs) -> int:
    return s.trim(a.maxlen, a.minid, a.approx, a.limit)


_EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
# The options of the last `XADD <key> MAXLEN ~ <n> <ID> ...` parsed (argv[2:5]) and its <n>.  A
# capped stream's producers send the same options with every entry; comparing them as one list
# costs a fraction of parsing them again (~40 bytecodes and an int()).
_capped: list = [None, 0]


def _same_options(argv: list[bytes], opts: list[bytes] | None) -> bool:
    """argv[2:5] == opts, the three options last parsed (_capped's, _trim_capped's), compared
    item by item: no slice of argv built and freed for every entry (compiled, a C call)."""
    return (opts is not None and len(argv) >= 5 and argv[2] == opts[0] and argv[3] == opts[1]
            and argv[4] == opts[2])
_SEQ_MAX = U64  # compiled, a C integer (t_stream.pxd)


def xadd(c, argv):
    head = argv[2]
    a = None
    maxlen = -1  # no trimming
    given = 0  # the ID given, when not `*`
    seq_given = True
    text = None  # the given ID when written as Redis writes IDs: the reply is that argument
    if head == b"*":
        pos = 3
        auto = True
    elif head[:1].isdigit():  # an ID straight after the key (no option starts with a digit)
        pos = 3
        auto = False
        given, seq_given, canonical = _parse_id(head, 0, True, True)
        if canonical:
            text = head
    elif _same_options(argv, _capped[0]) and len(argv) > 5 and (argv[5] == b"*" or argv[5][:1].isdigit()):
        pos = 6
        maxlen = _capped[1]
        auto = argv[5] == b"*"
        if not auto:
            given, seq_given, canonical = _parse_id(argv[5], 0, True, True)
            if canonical:
                text = argv[5]
    else:
        a = parse_add_trim(c, argv, True)
        pos = a.idpos + 1
        auto = not a.id_given
        given = a.id
        seq_given = a.seq_given
        if a.idpos == 5 and a.approx and a.maxlen is not None:  # exactly `MAXLEN ~ <n>` before the ID
            _capped[:] = argv[2:5], a.maxlen
    nargs = len(argv) - pos
    if nargs & 1 or nargs <= 0:
        raise wrong_arity("xadd")
    if not auto and seq_given and given == 0:
        raise CommandError("ERR The ID specified in XADD must be greater than 0-0")
    srv = c.server
    db = c.db
    key = argv[1]
    v = db.get(key, srv.now_ms)
    if type(v) is Stream:
        s = v  # compiled, `s` holds only a Stream (t_stream.pxd): the other values are tested in `v`
    else:
        if v is not None:
            raise CommandError(WRONGTYPE)
        if a is not None and a.nomkstream:
            return c.enc.null
        s = _create_stream(c, key)
    last = s.last_id
    if auto:
        ms = srv.now_ms
        # compiled, `now` is a C unsigned integer (t_stream.pxd), as are the stream's last_ms and last_seq
        now = ms if ms > 0 else 0
        if last is s.split_id and now > s.last_ms:  # the parts of last_id are at hand
            seq = 0
            new_id = ms << 64
        elif last is s.split_id and s.last_seq < _SEQ_MAX:  # (now <= last_ms)
            ms = s.last_ms
            seq = s.last_seq + 1
            new_id = last + 1
        elif ms > last >> 64:
            seq = 0
            new_id = ms << 64
        elif last != MAX_ID:
            new_id = last + 1
            ms = new_id >> 64
            seq = new_id & U64
        else:
            raise CommandError(_EXHAUSTED)
    else:
        if last == MAX_ID:
            raise CommandError(_EXHAUSTED)
        new_id = _explicit_id(last, given, seq_given)
        ms = new_id >> 64
        seq = new_id & U64
    max_bytes, max_entries, approx_limit = srv.config.stream_node_limits
    if not s.add(argv, pos, ms, seq, new_id, max_bytes, max_entries):
        raise CommandError("ERR Elements are too large to be stored")
    if srv.notify_flags:
        notify(c, NOTIFY_STREAM, "xadd", key)
    if maxlen >= 0:
        if s.length > maxlen and s.trim(maxlen, None, True, approx_limit):
            notify(c, NOTIFY_STREAM, "xtrim", key)
    elif a is not None and a.trims and _trim(s, a):
        notify(c, NOTIFY_STREAM, "xtrim", key)
    if db.signals:
        modified(c, key)
    else:
        srv.dirty += 1
    if db.blocking:
        signal_ready(db, key, s)
    if srv.also_propagate is not None:
        _propagate_xadd(c, argv, a, pos - 1, s, ms, seq, auto or not seq_given)
    if text is not None:
        return R.bulk(text)
    return _id_reply(ms, seq)


command("xadd")(xadd)  # not a decorator: compiled, xadd is a cpdef function (t_stream.pxd)


def _propagate_xadd(c, argv: list[bytes], a: TrimArgs | None, idpos: int, s: Stream, ms: int, seq: int,
                    generated: bool) -> None:
    """xaddCommand's rewrites: an approximate trim as the exact one it amounted to, and a generated
    ID (`*`, `ms-*`: `generated`) as the ID it became, so that a replay appends the same entry and
    trims alike.  `a` is None on the fast paths: the ID right after the key (no trim), or
    `MAXLEN ~ <n> <ID>` (trim count at 4)."""
    out = list(argv)
    if a is None:
        if idpos == 5:
            _rewrite_trim(out, s, 4, True)
    elif a.approx:
        _rewrite_trim(out, s, a.trim_idx, a.maxlen is not None)
    if generated:
        out[idpos] = b"%d-%d" % (ms, seq)
    propagate.rewrite(c, out)


def _rewrite_trim(out: list[bytes], s: Stream, idx: int, by_maxlen: bool) -> None:
    """streamRewriteApproxSpecifier + streamRewriteTrimArgument: `~ <n>` becomes `= <length>` for
    MAXLEN, `= <first ID>` for MINID (counting deleted entries still in the first node; the maximal
    ID when the stream is empty)."""
    out[idx - 1] = b"="
    if by_maxlen:
        out[idx] = b"%d" % s.length
    else:
        first = s.first_entry_id(tombstones=True)
        out[idx] = format_id(MAX_ID if first is None else first)


def _explicit_id(last: int, given: int, seq_given: bool) -> int:
    """The ID of an XADD given `ms-seq` (seq_given) or `ms-*`, checked against the stream's last ID."""
    if seq_given:
        new_id = given
    elif last >> 64 == given >> 64:
        if last & U64 == U64:
            # Redis 7.0 fails this case without setting errno, so it reports the other error.
            raise CommandError("ERR Elements are too large to be stored")
        new_id = last + 1
    else:
        new_id = given
    if new_id <= last:
        raise CommandError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    return new_id


_SEQ_TAILS = [b"%d\r\n" % i for i in range(1000)]
# ms, its "<ms>-" and the bulk headers "$<len>\r\n<ms>-" by sequence digit count, each made
# when first needed for that ms (XADDs a millisecond apart, a job queue's, need one of the three)
_reply_heads: list = [-1, b"", [None, None, None, None]]


def _id_reply(ms: int, seq: int) -> bytes:
    """The bulk string reply of the ID ms-seq; consecutive IDs share their millisecond part, whose
    formatted prefix is kept (formatting a 13-digit int is most of the cost).  Compiled, seq and
    the digit count are C integers and the lists typed, so the lookups are C indexing."""
    if seq >= 1000:
        sid = b"%d-%d" % (ms, seq)
        return b"$%d\r\n%s\r\n" % (len(sid), sid)
    heads = _reply_heads
    if heads[0] != ms:
        heads[0] = ms
        heads[1] = b"%d-" % ms
        heads[2] = [None, None, None, None]
    d = 1 if seq < 10 else 2 if seq < 100 else 3
    by_digits = heads[2]
    head = by_digits[d]
    if head is None:
        prefix = heads[1]
        head = by_digits[d] = R.bulk_headers()[len(prefix) + d] + prefix
    return head + _SEQ_TAILS[seq]


# The options of the last `XTRIM <key> MAXLEN ~ <n>` parsed (argv[2:5]) and their TrimArgs: as
# with XADD's _capped, a capped stream's trimmer sends the same options every time (BullMQ, from
# its scripts).  Only the LIMIT depends on the caller, so it is taken per call.
_trim_capped: list = [None, None]


def xtrim(c, argv):
    if len(argv) == 5 and _same_options(argv, _trim_capped[0]):
        a = _trim_capped[1]
        limit = 0 if c.must_obey else c.server.config.stream_node_limits[2]
    else:
        a = parse_add_trim(c, argv, False)
        limit = a.limit
        if len(argv) == 5 and a.approx and a.maxlen is not None:  # exactly `MAXLEN ~ <n>`
            _trim_capped[:] = argv[2:5], a
    key = argv[1]
    s = _stream_write(c, key)
    if s is None:
        return R.ZERO
    deleted = s.trim(a.maxlen, a.minid, a.approx, limit)
    if deleted:
        notify(c, NOTIFY_STREAM, "xtrim", key)
        if a.approx and c.server.also_propagate is not None:
            out = list(argv)
            _rewrite_trim(out, s, a.trim_idx, a.maxlen is not None)
            propagate.rewrite(c, out)
        modified(c, key)
        c.server.dirty += deleted - 1
    return R.integer(deleted)


command("xtrim")(xtrim)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XLEN / XRANGE / XREVRANGE / XDEL -----------------------------------------------------------
def xlen(c, argv):
    s = _stream_read(c, argv[1])
    return R.ZERO if s is None else R.integer(s.length)


command("xlen")(xlen)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def _xrange(c, argv, reverse: bool) -> bytes:
    start_arg, end_arg = (argv[3], argv[2]) if reverse else (argv[2], argv[3])
    # The usual bounds (`-`, `+`, a plain ms) are decoded inline; parse_interval does the rest.
    if start_arg == b"-":
        start = 0
    elif start_arg.isdigit() and len(start_arg) < 20 and start_arg[0] != 48:
        start = int(start_arg) << 64
    else:
        start = parse_interval(start_arg, 0, True)
    if end_arg == b"+":
        end = MAX_ID
    elif end_arg.isdigit() and len(end_arg) < 20 and end_arg[0] != 48:
        end = (int(end_arg) << 64) | U64
    else:
        end = parse_interval(end_arg, U64, False)
    count = -1
    j = 4
    argc = len(argv)
    while j < argc:
        if j + 1 < argc and option_word(argv[j]) == b"count":
            count = _int_arg(argv[j + 1])
            if count < 0:
                count = 0
            j += 2
        else:
            raise CommandError(SYNTAX)
    srv = c.server
    s = c.db.get(argv[1], srv.now_ms)
    if s is None:
        lookup_read(c, argv[1])  # counts the miss (and notifies it)
        return _EMPTY
    srv.stat_keyspace_hits += 1
    if type(s) is not Stream:
        raise CommandError(WRONGTYPE)
    if count == 0:
        return c.enc.null_array
    n, replies = s.resp_range(start, end, count if count > 0 else 0, reverse)
    return b"*%d\r\n%s" % (n, replies)


def xrange_(c, argv):
    return _xrange(c, argv, False)


command("xrange")(xrange_)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xrevrange(c, argv):
    return _xrange(c, argv, True)


command("xrevrange")(xrevrange)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xdel(c, argv):
    key = argv[1]
    s = _stream_write(c, key)
    if s is None:
        return R.ZERO
    ids = [_parse_id(a, 0, True, False)[0] for a in argv[2:]]
    deleted = s.delete_ids(ids)
    if deleted:
        modified(c, key)
        notify(c, NOTIFY_STREAM, "xdel", key)
        c.server.dirty += deleted - 1
    return R.integer(deleted)


command("xdel")(xdel)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XREAD / XREADGROUP -------------------------------------------------------------------------
class XReadRequest:
    """A validated XREAD/XREADGROUP: what serve_xread needs, again and again while blocked."""

    __slots__ = ("keys", "ids", "count", "timeout_ms", "group", "consumer", "noack", "streams")

    def __init__(self, keys: list[bytes], ids: list[int], count: int, timeout_ms: int | None,
                 group: bytes | None, consumer: bytes | None, noack: bool, streams: list | None) -> None:
        self.keys = keys
        self.ids = ids  # per key: deliver IDs > this (GROUP_NEW: the group's next entries)
        self.count = count
        self.timeout_ms = timeout_ms  # absolute deadline in ms, 0 = forever, None = no BLOCK
        self.group = group
        self.consumer = consumer
        self.noack = noack
        self.streams = streams  # the values parse_xread looked up, for the first serve only


def parse_xread(c, argv: list[bytes], group_cmd: bool) -> XReadRequest:
    argc = len(argv)
    streams_arg = 0
    count = 0
    timeout = None
    group = consumer = None
    noack = False
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = option_word(argv[i])
        if opt == b"streams" and more:
            streams_arg = i + 1
            if (argc - streams_arg) % 2:
                raise CommandError("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' "
                                   "must be specified.")
            break
        if opt == b"count" and more:
            i += 1
            count = max(_int_arg(argv[i]), 0)
        elif opt == b"block" and more:
            if c.is_script:  # refused before the timeout is parsed, naming the command as the script spelled it
                raise CommandError(b"ERR " + argv[0] + b" command is not allowed with BLOCK option from scripts")
            i += 1
            t = string2ll(argv[i])
            if t is None:
                raise CommandError("ERR timeout is not an integer or out of range")
            if t < 0:
                raise CommandError("ERR timeout is negative")
            if t > 0:
                t += c.server.now_ms
            timeout = t
        elif opt == b"group" and more >= 2:
            if not group_cmd:
                raise CommandError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD "
                                   "instead.")
            group = argv[i + 1]
            consumer = argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not group_cmd:
                raise CommandError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD "
                                   "instead.")
            noack = True
        else:
            raise CommandError(SYNTAX)
        i += 1
    if streams_arg == 0:
        raise CommandError(SYNTAX)
    if group_cmd and group is None:
        raise CommandError("ERR Missing GROUP option for XREADGROUP")
    nkeys = (argc - streams_arg) // 2
    keys = argv[streams_arg : streams_arg + nkeys]
    ids = []
    streams = []
    for key, arg in zip(keys, argv[streams_arg + nkeys :], strict=True):
        s = lookup_typed(c, key, Stream)
        streams.append(s)
        if group is not None and (s is None or s.group(group) is None):
            raise CommandError(b"NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP "
                               b"option" % (c_str(key), c_str(group)))
        arg = c_str(arg) if 0 in arg else arg
        if arg == b"$":
            if group_cmd:
                raise CommandError("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read "
                                   "the history of this consumer by specifying a proper ID, or use the > ID "
                                   "to get new messages. The $ ID would just return an empty result set.")
            ids.append(s.last_id if s is not None else 0)
        elif arg == b">":
            if not group_cmd:
                raise CommandError("ERR The > ID can be specified only when calling XREADGROUP using the "
                                   "GROUP <group> <consumer> option.")
            ids.append(GROUP_NEW)
        elif arg == b"+" and not group_cmd:
            # Redis 7.4's "the last entry": everything after the one before it.
            last = s.last_valid_id() if s is not None and s.length else 0
            ids.append(last - 1 if last else 0)
        else:
            ids.append(_parse_id(arg, 0, True, False)[0])
    return XReadRequest(keys, ids, count, timeout, group, consumer, noack, streams)


def _consumer_for(c, s: Stream, cg: ConsumerGroup, name: bytes, key: bytes, announce: bytes | None = None
                  ) -> Consumer:
    """Look up or create (with its notification) the consumer, marking it seen now.  `announce`:
    the group's name, when a creation travels on its own as XGROUP CREATECONSUMER (a NOACK
    XREADGROUP, whose reads leave no XCLAIM to recreate it: streamPropagateConsumerCreation)."""
    srv = c.server
    now = srv.now_ms
    cons = cg.consumer(name)
    if cons is None:
        cons = cg.create_consumer(name, now)
        assert cons is not None  # there was none by that name
        srv.dirty += 1
        notify(c, NOTIFY_STREAM, "xgroup-createconsumer", key)
        if announce is not None and srv.also_propagate is not None:
            propagate.also(srv, c.dbid, [b"XGROUP", b"CREATECONSUMER", key, announce, name])
    cons.seen_time = now
    return cons


def _serve_group(c, s: Stream, cg: ConsumerGroup, cons: Consumer, after: int, count: int, noack: bool,
                 key: bytes, group: bytes) -> list[bytes]:
    """Deliver new entries to a consumer: advance the group, create NACKs (unless NOACK).  While
    propagating, each NACK travels as an XCLAIM, and a NOACK read's new last ID as XGROUP SETID."""
    now = c.server.now_ms
    out = []
    start = after + 1
    prop = c.server.also_propagate is not None
    for eid, item in s.encoded(start, MAX_ID, False, entry_reply):
        s.group_delivered(cg, eid)
        out.append(item)
        if not noack:
            nack = cg.add_pending(id_key(eid), cons, now)
            cons.active_time = now
            if prop:
                propagate_xclaim(c, key, cg, group, format_id(eid), nack)
        if len(out) == count:
            break
    if out:
        c.server.dirty += 1
        if prop and noack:
            propagate_group_id(c, key, cg, group)
    return out


def propagate_xclaim(c, key: bytes, cg: ConsumerGroup, group: bytes, eid: bytes, nack: NACK) -> None:
    """streamPropagateXCLAIM: a NACK as the idempotent XCLAIM that recreates it (or, for an entry
    gone from the stream, drops it), carrying the group's last ID."""
    assert nack.consumer is not None
    propagate.also(c.server, c.dbid, [
        b"XCLAIM", key, group, nack.consumer.name, b"0", eid, b"TIME", b"%d" % nack.delivery_time,
        b"RETRYCOUNT", b"%d" % nack.delivery_count, b"FORCE", b"JUSTID", b"LASTID", format_id(cg.last_id)])


def propagate_group_id(c, key: bytes, cg: ConsumerGroup, group: bytes) -> None:
    """streamPropagateGroupID: the group's last ID and read counter as XGROUP SETID."""
    propagate.also(c.server, c.dbid, [b"XGROUP", b"SETID", key, group, format_id(cg.last_id), b"ENTRIESREAD",
                                      b"%d" % cg.entries_read])


def _serve_history(c, s: Stream, cons: Consumer, after: int, count: int) -> list[bytes]:
    """A consumer re-reading its own pending entries with IDs > after (a deleted entry shows as
    [id, null])."""
    now = c.server.now_ms
    out: list[bytes] = []
    null = c.enc.null_array
    it = cons.pel.iterator()
    it.seek(">=", id_key(after + 1 if after < MAX_ID else after))
    while (not count or len(out) < count) and it.next():
        eid = key_id(it.key)
        item = s.encoded_entry(eid, entry_reply)
        if item is None:
            out.append(b"*2\r\n" + _bulk_id(eid) + null)
        else:
            out.append(item)
            nack = it.value
            nack.delivery_time = now
            nack.delivery_count += 1
    return out


def serve_xread(c, req: XReadRequest, blocked: bool = False) -> bytes | None:
    """The reply to `req` with what can be delivered now, or None if nothing can (block/null).

    A command serves a key that has an entry past its ID (the group's last ID for `>`); a blocked
    reader (`blocked`) is served as soon as the stream's last ID has moved past it, even if
    trimming already removed the entries behind it (XADD with MAXLEN 0): it then gets the key
    with no entries, as Redis's serveClientsBlockedOnStreamKey replies."""
    parts: list[bytes | bytearray] = []
    served = 0
    resp3 = c.resp == 3
    streams = req.streams
    req.streams = None  # only valid within the command that parsed them
    srv = c.server
    for k, (key, gt) in enumerate(zip(req.keys, req.ids, strict=True)):
        if streams is not None and streams[k] is not None:
            s = streams[k]
            srv.stat_keyspace_hits += 1  # Redis looks each key up again here
        else:
            s = lookup_read(c, key)
        if s is None or type(s) is not Stream:
            continue
        if req.group is not None:
            cg = s.group(req.group)
            if cg is None:
                continue
            history = gt != GROUP_NEW
            serve = history
            if not history and (s.last_id if blocked else s.length and s.last_valid_id()) > cg.last_id:
                serve = True
                gt = cg.last_id
            if not serve:
                continue
            cons = _consumer_for(c, s, cg, req.consumer, key,  # type: ignore[arg-type]  # given with group
                                 req.group if req.noack else None)
            items: Sequence[bytes | bytearray]
            if history:
                items = _serve_history(c, s, cons, gt, req.count)
            else:
                items = _serve_group(c, s, cg, cons, gt, req.count, req.noack, key, req.group)
            n = len(items)
        else:
            if (s.last_id if blocked else s.length and s.last_valid_id()) <= gt:
                continue
            n, body = s.resp_range(gt + 1, MAX_ID, req.count, False)
            items = [body]
        served += 1
        if not resp3:
            parts.append(b"*2\r\n")
        parts.append(b"$%d\r\n%s\r\n" % (len(key), key))
        parts.append(b"*%d\r\n" % n)
        parts += items
    if not served:
        return None
    head = b"%%%d\r\n" % served if resp3 else b"*%d\r\n" % served
    return head + b"".join(parts)


def xread(c, argv):
    req = parse_xread(c, argv, False)
    reply = serve_xread(c, req)
    return _blocked_read(c, req) if reply is None else reply


command("xread")(xread)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xreadgroup(c, argv):
    req = parse_xread(c, argv, True)
    if c.server.also_propagate is not None:
        propagate.prevent(c)  # what it changed travels as XCLAIMs and XGROUPs (serve_xread)
    reply = serve_xread(c, req)
    return _blocked_read(c, req) if reply is None else reply


command("xreadgroup")(xreadgroup)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def _blocked_read(c, req: XReadRequest):
    """XREAD / XREADGROUP with nothing to deliver now: reply null, or with BLOCK wait for one of
    the keys.  Served later with only the key that became ready, as Redis replies; a blocked
    XREADGROUP fails when its key is deleted or replaced (UNBLOCKED) or its group destroyed
    (NOGROUP).  A served XREADGROUP propagates its XCLAIMs from serve_xread; XREAD nothing."""
    if req.timeout_ms is None or blocking.must_not_block(c):
        return c.enc.null_array

    def serve(cl, key: bytes) -> bytes | None:
        if req.group is not None:
            s = cl.db.get(key, cl.server.now_ms)
            if s is None or type(s) is not Stream:
                raise CommandError("UNBLOCKED the stream key no longer exists")
            if s.group(req.group) is None:
                raise CommandError("NOGROUP the consumer group this client was blocked on no longer exists")
        one = copy.copy(req)
        idx = req.keys.index(key)
        one.keys, one.ids = [key], [req.ids[idx]]
        return serve_xread(cl, one, blocked=True)

    return blocking.block(c, list(req.keys), req.timeout_ms, serve, btype="stream")


# ---- XGROUP -------------------------------------------------------------------------------------

def _xgroup_prelude(c, argv: list[bytes], sub: bytes) -> tuple[Stream | None, ConsumerGroup | None, bool, int]:
    """The checks every XGROUP subcommand makes first: options, key, group."""
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    argc = len(argv)
    i = 5
    while i < argc:
        opt = option_word(argv[i])
        if sub == b"create" and opt == b"mkstream":
            mkstream = True
            i += 1
        elif sub in (b"create", b"setid") and opt == b"entriesread" and i + 1 < argc:
            entries_read = _int_arg(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise CommandError("ERR value for ENTRIESREAD must be positive or -1")
            i += 2
        else:
            raise subcommand_syntax(argv)
    s = _stream_write(c, argv[2])
    cg = None
    if not mkstream:
        if s is None:
            raise CommandError("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you "
                               "may want to use the MKSTREAM option to create an empty stream automatically.")
        cg = s.group(argv[3])
        if cg is None and sub in (b"setid", b"createconsumer", b"delconsumer"):
            raise _no_such_group(argv[2], argv[3])
    return s, cg, mkstream, entries_read


def xgroup_create(c, argv):
    s, _, mkstream, entries_read = _xgroup_prelude(c, argv, b"create")
    if len(argv) > 8:
        raise subcommand_syntax(argv)
    key = argv[2]
    if c_str(argv[4]) == b"$":
        gid = s.last_id if s is not None else 0
    else:
        gid = _parse_id(argv[4], 0, True, False)[0]
    if s is None:
        s = _create_stream(c, key)
        modified(c, key)
    if s.create_group(argv[3], gid, entries_read) is None:
        raise CommandError("BUSYGROUP Consumer Group name already exists")
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xgroup-create", key)
    return R.OK


command("xgroup|create")(xgroup_create)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xgroup_setid(c, argv):
    s, cg, _, entries_read = _xgroup_prelude(c, argv, b"setid")
    if len(argv) not in (5, 7):
        raise subcommand_syntax(argv)
    gid = s.last_id if c_str(argv[4]) == b"$" else _parse_id(argv[4], 0, False, False)[0]
    cg.last_id = gid
    cg.entries_read = entries_read
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xgroup-setid", argv[2])
    return R.OK


command("xgroup|setid")(xgroup_setid)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xgroup_destroy(c, argv):
    s, cg, _, _ = _xgroup_prelude(c, argv, b"destroy")
    if cg is None:
        return R.ZERO
    s.destroy_group(argv[3])
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xgroup-destroy", argv[2])
    signal_ready(c.db, argv[2], s)  # readers blocked on this group must now fail with NOGROUP
    return R.ONE


command("xgroup|destroy")(xgroup_destroy)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xgroup_createconsumer(c, argv):
    _, cg, _, _ = _xgroup_prelude(c, argv, b"createconsumer")
    if cg.create_consumer(argv[4], c.server.now_ms) is None:
        return R.ZERO
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xgroup-createconsumer", argv[2])
    return R.ONE


command("xgroup|createconsumer")(xgroup_createconsumer)  # not a decorator: a cpdef function (t_stream.pxd)


def xgroup_delconsumer(c, argv):
    _, cg, _, _ = _xgroup_prelude(c, argv, b"delconsumer")
    cons = cg.consumer(argv[4])
    if cons is None:
        return R.ZERO
    pending = cg.delete_consumer(cons)
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xgroup-delconsumer", argv[2])
    return R.integer(pending)


command("xgroup|delconsumer")(xgroup_delconsumer)  # not a decorator: a cpdef function (t_stream.pxd)


def _help(lines: list[str]) -> bytes:
    return R.array([R.status(line) for line in lines])


def xgroup_help(c, argv):
    return _help([
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ])


command("xgroup|help")(xgroup_help)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XSETID -------------------------------------------------------------------------------------
def xsetid(c, argv):
    new_id = _parse_id(argv[2], 0, True, False)[0]
    entries_added = -1
    max_xdel = 0
    argc = len(argv)
    i = 3
    while i < argc:
        more = argc - 1 - i
        opt = option_word(argv[i])
        if opt == b"entriesadded" and more:
            entries_added = _int_arg(argv[i + 1])
            if entries_added < 0:
                raise CommandError("ERR entries_added must be positive")
            i += 2
        elif opt == b"maxdeletedid" and more:
            max_xdel = _parse_id(argv[i + 1], 0, True, False)[0]
            if new_id < max_xdel:
                raise CommandError("ERR The ID specified in XSETID is smaller than the provided "
                                   "max_deleted_entry_id")
            i += 2
        else:
            raise CommandError(SYNTAX)
    key = argv[1]
    s = _stream_write(c, key)
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    if s.length:
        if new_id < s.last_valid_id():
            raise CommandError("ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added != -1 and s.length > entries_added:
            raise CommandError("ERR The entries_added specified in XSETID is smaller than the target stream "
                               "length")
    s.last_id = new_id
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel:
        s.max_deleted_id = max_xdel
    c.server.dirty += 1
    notify(c, NOTIFY_STREAM, "xsetid", key)
    return R.OK


command("xsetid")(xsetid)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XACK / XPENDING ----------------------------------------------------------------------------
def _nogroup(key: bytes, group: bytes) -> CommandError:
    return CommandError(b"NOGROUP No such key '%s' or consumer group '%s'" % (c_str(key), c_str(group)))


def _no_such_group(key: bytes, group: bytes) -> CommandError:
    return CommandError(b"NOGROUP No such consumer group '%s' for key name '%s'" % (c_str(group), c_str(key)))


def xack(c, argv):
    s = _stream_read(c, argv[1])
    cg = s.group(argv[2]) if s is not None else None
    if cg is None:
        return R.ZERO
    keys = [id_key(_parse_id(a, 0, True, False)[0]) for a in argv[3:]]
    acked = 0
    for k in keys:
        if cg.ack(k):
            acked += 1
    c.server.dirty += acked
    return R.integer(acked)


command("xack")(xack)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xpending(c, argv):
    argc = len(argv)
    if argc != 3 and (argc < 6 or argc > 9):
        raise CommandError(SYNTAX)
    minidle = 0
    count = 0
    consumer_name = None
    start = end = 0
    if argc >= 6:
        idx = 3
        if option_word(argv[3]) == b"idle":
            minidle = _int_arg(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            idx += 2
        count = max(_int_arg(argv[idx + 2]), 0)
        start = parse_interval(argv[idx], 0, True)
        end = parse_interval(argv[idx + 1], U64, False)
        if idx + 3 < argc:
            consumer_name = argv[idx + 3]
    s = _stream_read(c, argv[1])
    cg = s.group(argv[2]) if s is not None else None
    if cg is None:
        raise _nogroup(argv[1], argv[2])
    if argc == 3:
        n = len(cg.pel)
        if n == 0:
            return b"*4\r\n:0\r\n" + c.enc.null + c.enc.null + c.enc.null_array
        first = cg.pel.first()
        last = cg.pel.last()
        owners = []
        for name, cons in cg.consumers.items():
            k = len(cons.pel)
            if k:
                owners.append(b"*2\r\n%s%s" % (R.bulk(name), R.bulk(b"%d" % k)))
        return b"*4\r\n%s%s%s%s" % (R.integer(n), _bulk_id(key_id(first[0])), _bulk_id(key_id(last[0])),
                                    _array(owners))
    pel = cg.pel
    if consumer_name is not None:
        cons = cg.consumer(consumer_name)
        if cons is None:
            return _EMPTY
        pel = cons.pel
    now = c.server.now_ms
    out = []
    end_key = id_key(end)
    it = pel.iterator()
    it.seek(">=", id_key(start))
    while count and it.next():
        k = it.key
        if k > end_key:
            break
        nack = it.value
        if minidle and now - nack.delivery_time < minidle:
            continue
        count -= 1
        elapsed = max(now - nack.delivery_time, 0)
        out.append(b"*4\r\n%s%s%s%s" % (_bulk_id(key_id(k)), R.bulk(nack.consumer.name), R.integer(elapsed),
                                        R.integer(nack.delivery_count)))
    return _array(out)


command("xpending")(xpending)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XCLAIM / XAUTOCLAIM ------------------------------------------------------------------------
def _claim(cg: ConsumerGroup, k: bytes, nack, cons: Consumer) -> None:
    """Move the pending entry k to cons."""
    if nack.consumer is not cons:
        if nack.consumer is not None:
            nack.consumer.pel.remove(k)
        cons.pel.insert(k, nack)
        nack.consumer = cons


def _drop_pending(cg: ConsumerGroup, k: bytes, nack) -> None:
    cg.pel.remove(k)
    if nack.consumer is not None:
        nack.consumer.pel.remove(k)


def xclaim(c, argv):
    key = argv[1]
    s = _stream_read(c, key)
    cg = s.group(argv[2]) if s is not None else None
    if cg is None:
        raise _nogroup(key, argv[2])
    minidle = max(_int_arg(argv[4], "ERR Invalid min-idle-time argument for XCLAIM"), 0)
    ids = []
    argc = len(argv)
    j = 5
    while j < argc:
        try:
            ids.append(_parse_id(argv[j], 0, True, False)[0])
        except CommandError:
            break
        j += 1
    now = c.server.now_ms
    force = justid = False
    retrycount = -1
    deliverytime = -1
    last_id = 0
    while j < argc:
        more = argc - 1 - j
        opt = option_word(argv[j])
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            deliverytime = now - _int_arg(argv[j], "ERR Invalid IDLE option argument for XCLAIM")
        elif opt == b"time" and more:
            j += 1
            deliverytime = _int_arg(argv[j], "ERR Invalid TIME option argument for XCLAIM")
        elif opt == b"retrycount" and more:
            j += 1
            retrycount = _int_arg(argv[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")
        elif opt == b"lastid" and more:
            j += 1
            last_id = _parse_id(argv[j], 0, True, False)[0]
        else:
            raise CommandError(b"ERR Unrecognized XCLAIM option '%s'" % c_str(argv[j]))
        j += 1
    prop = c.server.also_propagate is not None
    propagate_last_id = False
    if last_id > cg.last_id:
        cg.last_id = last_id
        c.server.dirty += 1
        propagate_last_id = prop
    if deliverytime == -1 or deliverytime < 0 or deliverytime > now:
        deliverytime = now
    # looked up (or created) at the first claim, as Redis 7.0 does; from 7.2 on, claim or not
    cons = _consumer_for(c, s, cg, argv[3], key) if c.server.config.compat_version >= (7, 2) else None
    out = []
    for j, eid in enumerate(ids, 5):
        k = id_key(eid)
        nack = cg.pel.find(k, None)
        item = s.encoded_entry(eid, entry_reply)
        if item is None:
            if nack is not None:
                if prop:  # the ID as the client spelled it, as Redis propagates c->argv[j]
                    propagate_xclaim(c, key, cg, argv[2], argv[j], nack)
                    propagate_last_id = False
                _drop_pending(cg, k, nack)
                c.server.dirty += 1
            continue
        if force and nack is None:
            nack = NACK(None, now)
            cg.pel.insert(k, nack)
        if nack is None:
            continue
        if nack.consumer is not None and minidle and now - nack.delivery_time < minidle:
            continue
        if cons is None:
            cons = _consumer_for(c, s, cg, argv[3], key)
        _claim(cg, k, nack, cons)
        nack.delivery_time = deliverytime
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        out.append(_bulk_id(eid) if justid else item)
        cons.active_time = now
        c.server.dirty += 1
        if prop:
            propagate_xclaim(c, key, cg, argv[2], argv[j], nack)
            propagate_last_id = False
    if prop:
        if propagate_last_id:
            propagate_group_id(c, key, cg, argv[2])
        propagate.prevent(c)
    return _array(out)


command("xclaim")(xclaim)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


_AUTOCLAIM_MAX_COUNT = ((1 << 63) - 1) // 16


def xautoclaim(c, argv):
    key = argv[1]
    minidle = max(_int_arg(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start = parse_interval(argv[5], 0, True)
    count = 100
    justid = False
    argc = len(argv)
    j = 6
    while j < argc:
        more = argc - 1 - j
        opt = option_word(argv[j])
        if opt == b"count" and more:
            v = string2ll(argv[j + 1])
            if v is None or v < 1 or v > _AUTOCLAIM_MAX_COUNT:
                raise CommandError("ERR COUNT must be > 0")
            count = v
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(SYNTAX)
        j += 1
    s = _stream_read(c, key)
    cg = s.group(argv[2]) if s is not None else None
    if cg is None:
        raise _nogroup(key, argv[2])
    if count * 16 > 1 << 40:
        raise CommandError("ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
    # looked up (or created) at the first claim, as Redis 7.0 does; from 7.2 on, claim or not
    cons = _consumer_for(c, s, cg, argv[3], key) if c.server.config.compat_version >= (7, 2) else None
    now = c.server.now_ms
    attempts = count * 10
    prop = c.server.also_propagate is not None
    out = []
    deleted = []
    it = cg.pel.iterator()
    it.seek(">=", id_key(start))
    while attempts and count:
        attempts -= 1
        if not it.next():
            break
        k = it.key
        nack = it.value
        eid = key_id(k)
        item = s.encoded_entry(eid, entry_reply)
        if item is None:
            if prop:
                propagate_xclaim(c, key, cg, argv[2], format_id(eid), nack)
            _drop_pending(cg, k, nack)
            deleted.append(_bulk_id(eid))
            c.server.dirty += 1
            it.seek(">=", k)
            count -= 1
            continue
        if minidle and now - nack.delivery_time < minidle:
            continue
        if cons is None:
            cons = _consumer_for(c, s, cg, argv[3], key)
        _claim(cg, k, nack, cons)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        out.append(_bulk_id(eid) if justid else item)
        count -= 1
        cons.active_time = now
        c.server.dirty += 1
        if prop:
            propagate_xclaim(c, key, cg, argv[2], format_id(eid), nack)
    if prop:
        propagate.prevent(c)
    cursor = key_id(it.key) if it.next() else 0
    return b"*3\r\n%s%s%s" % (_bulk_id(cursor), _array(out), _array(deleted))


command("xautoclaim")(xautoclaim)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


# ---- XINFO --------------------------------------------------------------------------------------
def _xinfo_lookup(c, argv) -> Stream:
    s = _stream_read(c, argv[2])
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    return s


def _group_lag(c, s: Stream, cg: ConsumerGroup) -> bytes:
    lag = s.group_lag(cg)
    return c.enc.null if lag is None else R.integer(lag)


def _entries_read(c, cg: ConsumerGroup) -> bytes:
    return c.enc.null if cg.entries_read == INVALID_ENTRIES_READ else R.integer(cg.entries_read)


def xinfo_stream(c, argv):
    s = _xinfo_lookup(c, argv)
    opts = argv[3:]
    full = bool(opts)
    count = 10
    if opts:
        if len(opts) not in (1, 3) or option_word(opts[0]) != b"full":
            raise subcommand_syntax(argv)
        if len(opts) == 3:
            if option_word(opts[1]) != b"count":
                raise subcommand_syntax(argv)
            count = _int_arg(opts[2])
            if count < 0:
                count = 10
    b = R.bulk
    enc = c.enc
    head = [b(b"length"), R.integer(s.length), b(b"radix-tree-keys"), R.integer(s.rax.numele),
            b(b"radix-tree-nodes"), R.integer(s.rax.numnodes), b(b"last-generated-id"), _bulk_id(s.last_id),
            b(b"max-deleted-entry-id"), _bulk_id(s.max_deleted_id), b(b"entries-added"),
            R.integer(s.entries_added), b(b"recorded-first-entry-id"), _bulk_id(s.first_id)]
    if not full:
        ngroups = len(s.cgroups) if s.cgroups is not None else 0
        first = range_reply(s, 0, MAX_ID, 1, False)[1]
        last = range_reply(s, 0, MAX_ID, 1, True)[1]
        head += [b(b"groups"), R.integer(ngroups), b(b"first-entry"), first[0] if first else enc.null,
                 b(b"last-entry"), last[0] if last else enc.null]
        return enc.map(head)
    n, items = range_reply(s, 0, MAX_ID, count, False)
    newer = c.server.config.compat_version >= (7, 2)
    head += [b(b"entries"), b"*%d\r\n%s" % (n, b"".join(items)), b(b"groups")]
    groups = []
    if s.cgroups is not None:
        for name, cg in s.cgroups.items():
            pending = []
            for k, nack in cg.pel.items():
                if count and len(pending) >= count:
                    break
                pending.append(b"*4\r\n%s%s%s%s" % (_bulk_id(key_id(k)), b(nack.consumer.name),
                                                    R.integer(nack.delivery_time), R.integer(nack.delivery_count)))
            consumers = []
            for cname, cons in cg.consumers.items():
                cpending = []
                for k, nack in cons.pel.items():
                    if count and len(cpending) >= count:
                        break
                    cpending.append(b"*3\r\n%s%s%s" % (_bulk_id(key_id(k)), R.integer(nack.delivery_time),
                                                       R.integer(nack.delivery_count)))
                fields = [b(b"name"), b(cname), b(b"seen-time"), R.integer(cons.seen_time)]
                if newer:  # 7.2: the last successful interaction beside the last attempt
                    fields += [b(b"active-time"), R.integer(cons.active_time)]
                consumers.append(enc.map([*fields, b(b"pel-count"), R.integer(len(cons.pel)), b(b"pending"),
                                          _array(cpending)]))
            groups.append(enc.map([b(b"name"), b(name), b(b"last-delivered-id"), _bulk_id(cg.last_id),
                                   b(b"entries-read"), _entries_read(c, cg), b(b"lag"), _group_lag(c, s, cg),
                                   b(b"pel-count"), R.integer(len(cg.pel)), b(b"pending"), _array(pending),
                                   b(b"consumers"), _array(consumers)]))
    head.append(_array(groups))
    return enc.map(head)


command("xinfo|stream")(xinfo_stream)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xinfo_groups(c, argv):
    s = _xinfo_lookup(c, argv)
    if s.cgroups is None:
        return _EMPTY
    b = R.bulk
    out = []
    for name, cg in s.cgroups.items():
        out.append(c.enc.map([b(b"name"), b(name), b(b"consumers"), R.integer(len(cg.consumers)),
                              b(b"pending"), R.integer(len(cg.pel)), b(b"last-delivered-id"),
                              _bulk_id(cg.last_id), b(b"entries-read"), _entries_read(c, cg), b(b"lag"),
                              _group_lag(c, s, cg)]))
    return _array(out)


command("xinfo|groups")(xinfo_groups)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xinfo_consumers(c, argv):
    s = _xinfo_lookup(c, argv)
    cg = s.group(argv[3])
    if cg is None:
        raise _no_such_group(argv[2], argv[3])
    now = c.server.now_ms
    b = R.bulk
    out = []
    newer = c.server.config.compat_version >= (7, 2)
    for name, cons in cg.consumers.items():
        fields = [b(b"name"), b(name), b(b"pending"), R.integer(len(cons.pel)), b(b"idle"),
                  R.integer(max(now - cons.seen_time, 0))]
        if newer:  # 7.2: since the last successful interaction (-1: none yet)
            fields += [b(b"inactive"), R.integer(now - cons.active_time if cons.active_time != -1 else -1)]
        out.append(c.enc.map(fields))
    return _array(out)


command("xinfo|consumers")(xinfo_consumers)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


def xinfo_help(c, argv):
    return _help([
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ])


command("xinfo|help")(xinfo_help)  # not a decorator: compiled, a cpdef function (t_stream.pxd)


__all__ = ["GROUP_NEW", "XReadRequest", "entry_reply", "format_id", "parse_id", "parse_xread", "serve_xread"]
