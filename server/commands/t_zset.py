"""Sorted-set commands (Redis's t_zset.c) over `storage.zset.ZSet`.

Parsing follows Redis 7.0 step by step because the order of checks decides which error a client
sees: options first, then scores / ranges, then the key's type.  Score arguments use string2d
(ZADD, ZINCRBY, WEIGHTS: no spaces, no overflow, no NaN); range bounds use plain strtod as
zslParseRange does (leading spaces and "" accepted, "(" for exclusive).  Scores print as %.17g,
RESP2 bulk / RESP3 double; WITHSCORES replies are flat in RESP2 and [member, score] pairs in RESP3.

The blocking family (BZPOPMIN, BZPOPMAX, BZMPOP) is here too, beside the pops whose parts it
shares: `zpop_pairs` pops and does the keyspace bookkeeping, `parse_mpop` parses `numkeys key...
MIN|MAX [COUNT n]`, and `zmpop_reply` / `bzpop_reply` build the replies.  Blocked clients are
woken by the Database when a zset is created (Redis's dbAdd); adding to an existing zset, or a
STORE over an existing key, wakes no one.
"""

from __future__ import annotations

import math
from typing import Any

from raxdb.protocol import reply as R
from raxdb.server.base.errors import SYNTAX, WRONGTYPE, CommandError, c_str, wrong_arity
from raxdb.server.base.numparse import digits_value, plain_decimal, string2d, strtod_blanks
from raxdb.server.commands.scanargs import parse_cursor, parse_scan_options
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_ZSET,
    lookup_or_create,
    lookup_read,
    lookup_write,
    modified,
    notify,
    set_key,
    written,
)
from raxdb.server.net import blocking
from raxdb.server.table.args import INT64_MIN, known_words, option_word, random_picks_reply, to_int
from raxdb.server.table.registry import command
from raxdb.storage.glob import compile_glob
from raxdb.storage.set_type import Intset, RSet, as_set
from raxdb.storage.zset import (
    IN_GT,
    IN_INCR,
    IN_LT,
    IN_NX,
    IN_XX,
    OUT_ADDED,
    OUT_NAN,
    OUT_NOP,
    OUT_UPDATED,
    LexRange,
    ScoreRange,
    ZSet,
    zset_add,
)

NOT_FLOAT = "ERR value is not a valid float"
MINMAX_NOT_FLOAT = "ERR min or max is not a float"
MINMAX_NOT_LEX = "ERR min or max not valid string range item"
NAN_RESULT = "ERR resulting score is not a number (NaN)"
POSITIVE = "ERR value is out of range, must be positive"
LONG_RANGE = ("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807")
_INF = math.inf


# ---- argument parsing ----------------------------------------------------------------------------
def parse_score(arg: bytes, err: str = NOT_FLOAT) -> float:
    v = string2d(arg)
    if v is None:
        raise CommandError(err)
    return v


def _range_bound(arg: bytes) -> tuple[float, bool]:
    """A score bound as zslParseRange reads it: strtod over the C string, so the argument ends at
    its first NUL ("1\\0x" is 1)."""
    whole = digits_value(arg)
    if whole >= 0:  # plain digits, the common bound
        return float(whole), False
    arg = c_str(arg)
    ex = arg[:1] == b"("
    s = arg[1:] if ex else arg
    if plain_decimal(s):
        return float(s), ex
    v = strtod_blanks(s)
    if v is None or v != v:
        raise CommandError(MINMAX_NOT_FLOAT)
    return v, ex


def parse_score_range(lo: bytes, hi: bytes) -> ScoreRange:
    a, aex = _range_bound(lo)
    b, bex = _range_bound(hi)
    return ScoreRange(a, aex, b, bex)


def _lex_bound(arg: bytes) -> tuple[int, bytes, bool]:
    """zslParseLexRangeItem: "+" and "-" are tested as C strings (a NUL may follow them), the
    member after "(" or "[" is taken whole."""
    if arg == b"+" or arg[:2] == b"+\0":
        return 1, b"", True
    if arg == b"-" or arg[:2] == b"-\0":
        return -1, b"", True
    c = arg[:1]
    if c == b"(":
        return 0, arg[1:], True
    if c == b"[":
        return 0, arg[1:], False
    raise CommandError(MINMAX_NOT_LEX)


def parse_lex_range(lo: bytes, hi: bytes) -> LexRange:
    a = _lex_bound(lo)
    b = _lex_bound(hi)
    return LexRange(a[0], a[1], a[2], b[0], b[1], b[2])


def listpack_limits(c) -> tuple[int, int]:
    return c.server.config.zset_max_listpack


def get_zset(c, key: bytes, write: bool = False) -> ZSet | None:
    v = lookup_write(c, key) if write else lookup_read(c, key)
    if v is not None and type(v) is not ZSet:
        raise CommandError(WRONGTYPE)
    return v


# ---- replies -------------------------------------------------------------------------------------
def pairs_reply(c, pairs: list[tuple[Any, bytes]], withscores: bool) -> bytes | tuple[bytes, ...]:
    """Members (and scores) as a command's whole reply: flat in RESP2, [member, score] pairs in
    RESP3; without scores, big members by reference (R.values)."""
    if not withscores:
        return R.values([m for _, m in pairs])
    return R.scored_members(c.enc, pairs)


def _flat_pairs_reply(c, pairs: list[tuple[Any, bytes]]) -> bytes:
    """member, score, member, score... with scores as doubles (bulk in RESP2)."""
    d = c.enc.score
    return b"*%d\r\n" % (2 * len(pairs)) + b"".join(
        [b"$%d\r\n%s\r\n%s" % (len(m), m, d(s)) for s, m in pairs])


def zmpop_reply(c, key: bytes, pairs: list[tuple[Any, bytes]]) -> bytes:
    """ZMPOP / BZMPOP: [key, [[member, score], ...]] in both protocols."""
    d = c.enc.score
    body = b"".join([b"*2\r\n$%d\r\n%s\r\n%s" % (len(m), m, d(s)) for s, m in pairs])
    return b"*2\r\n$%d\r\n%s\r\n*%d\r\n%s" % (len(key), key, len(pairs), body)


def bzpop_reply(c, key: bytes, pair: tuple[Any, bytes]) -> bytes:
    """BZPOPMIN / BZPOPMAX: [key, member, score]."""
    s, m = pair
    return b"*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s" % (len(key), key, len(m), m, c.enc.score(s))


# ---- keyspace bookkeeping ------------------------------------------------------------------------
def _after_removal(c, key: bytes, zs: ZSet, event: str, n: int) -> None:
    notify(c, NOTIFY_ZSET, event, key)
    if not len(zs):
        c.db.delete(key)
        notify(c, NOTIFY_GENERIC, "del", key)
    modified(c, key)
    c.server.dirty += n - 1


def store_result(c, dst: bytes, zs: ZSet, event: str) -> bytes:
    """Write a STORE command's result to `dst`, or delete `dst` when the result is empty."""
    n = len(zs)
    if n:
        set_key(c, dst, zs)
        notify(c, NOTIFY_ZSET, event, dst)
        modified(c, dst)
        return R.integer(n)
    if c.db.delete(dst):
        notify(c, NOTIFY_GENERIC, "del", dst)
        modified(c, dst)
    return R.ZERO


# ---- ZADD / ZINCRBY ------------------------------------------------------------------------------
_ZADD_FLAGS = {b"nx": IN_NX, b"xx": IN_XX, b"gt": IN_GT, b"lt": IN_LT, b"incr": IN_INCR}
known_words(*_ZADD_FLAGS, b"ch", b"withscores", b"limit", b"rev", b"bylex", b"byscore", b"count", b"weights",
            b"aggregate", b"sum", b"min", b"max")


def _zadd(c, argv: list[bytes], flags: int) -> bytes:
    key = argv[1]
    n = len(argv)
    i = 2
    ch = False
    while i < n:
        a = argv[i]
        if len(a) > 4 and 0 not in a:  # no flag is longer: a score (unless a NUL ends the word early)
            break
        opt = option_word(a)
        f = _ZADD_FLAGS.get(opt)
        if f is not None:
            flags |= f
        elif opt == b"ch":
            ch = True
        else:
            break
        i += 1
    elements = n - i
    if elements % 2 or not elements:
        raise CommandError(SYNTAX)
    incr = flags & IN_INCR
    if flags & IN_NX and flags & IN_XX:
        raise CommandError("ERR XX and NX options at the same time are not compatible")
    if (flags & IN_NX and flags & (IN_GT | IN_LT)) or (flags & IN_GT and flags & IN_LT):
        raise CommandError("ERR GT, LT, and/or NX options at the same time are not compatible")
    if incr and elements > 2:
        raise CommandError("ERR INCR option supports a single increment-element pair")
    scores = [parse_score(argv[j]) for j in range(i, n, 2)]
    return zadd_scored(c, key, scores, argv[i + 1::2], flags, ch)


def zadd_scored(c, key: bytes, scores: list[float], members: list[bytes], flags: int, ch: bool) -> bytes:
    """The add core of ZADD, ZINCRBY and GEOADD (zaddGenericCommand past its argument parsing):
    adds members[k] with scores[k] under the IN_* `flags` (already checked for conflicts; at least
    one pair, one only with IN_INCR), signals the key and notifies "zadd" / "zincr" when something
    changed, and returns the reply: the number added (or added and changed with `ch`), or the
    new score with IN_INCR."""
    incr = flags & IN_INCR
    db = c.db
    srv = c.server  # compiled, typed (t_zset.pxd): its clock, config and counter are C fields
    v = db.get(key, srv.now_ms)
    if v is None:
        if flags & IN_XX:
            return c.enc.null if incr else R.ZERO
        zs = ZSet()
        db.add(key, zs)
    elif type(v) is not ZSet:
        raise CommandError(WRONGTYPE)
    else:
        zs = v
    max_entries, max_value = srv.config.zset_max_listpack  # listpack_limits, inline
    added = updated = 0
    processed = False
    score = 0.0
    try:
        for k in range(len(scores)):
            out, score = zset_add(zs, members[k], scores[k], flags, max_entries, max_value)
            if out & OUT_ADDED:
                added += 1
            elif out & OUT_UPDATED:
                updated += 1
            elif out & OUT_NAN:
                raise CommandError(NAN_RESULT)
            if not out & OUT_NOP:
                processed = True
    finally:
        if not len(zs):
            db.delete(key)
        if added or updated:
            written(c, key, NOTIFY_ZSET, "zincr" if incr else "zadd")
            srv.dirty += added + updated - 1
    if incr:
        return c.enc.double(score) if processed else c.enc.null
    return R.integer(added + updated if ch else added)


def zadd(c, argv):
    # The shape clients send most, `ZADD key <plain number> member`, skips option parsing and
    # does _zadd's bookkeeping inline (the benchmarked sorted-set write).
    if len(argv) == 4:
        arg = argv[2]
        v = digits_value(arg)
        if v >= 0:
            score = float(v)
        elif plain_decimal(arg):
            score = float(arg)
        else:
            return _zadd(c, argv, 0)
        key, member = argv[1], argv[3]
        zs = lookup_or_create(c, key, ZSet)
        srv = c.server
        max_entries, max_value = srv.config.zset_max_listpack  # listpack_limits, inline
        out = zset_add(zs, member, score, 0, max_entries, max_value)[0]
        if out == OUT_ADDED:
            reply = R.integer(1)  # the shared reply, through a C call (R.ONE is a module attribute)
        elif out == OUT_UPDATED:
            reply = R.integer(0)
        else:
            return R.integer(0)
        written(c, key, NOTIFY_ZSET, "zadd")
        return reply
    return _zadd(c, argv, 0)


command("zadd")(zadd)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zincrby(c, argv):
    return _zadd(c, argv, IN_INCR)


command("zincrby")(zincrby)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- simple reads --------------------------------------------------------------------------------
def zcard(c, argv):
    zs = get_zset(c, argv[1])
    return R.integer(len(zs)) if zs is not None else R.ZERO


command("zcard")(zcard)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zscore(c, argv):
    zs = get_zset(c, argv[1])
    if zs is None:
        return c.enc.null
    s = zs.score_text(argv[2])
    return c.enc.null if s is None else c.enc.score(s)


command("zscore")(zscore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zmscore(c, argv):
    zs = get_zset(c, argv[1])
    members = argv[2:]
    null = c.enc.null
    if zs is None:
        return b"*%d\r\n" % len(members) + null * len(members)
    get = zs.score_text
    d = c.enc.score
    out = []
    for m in members:
        s = get(m)
        out.append(null if s is None else d(s))
    return b"*%d\r\n" % len(members) + b"".join(out)


command("zmscore")(zmscore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def _rank(c, argv, reverse: bool) -> bytes:
    """Z[REV]RANK key member [WITHSCORE]: the option exists from 7.2 on (compat-version), where
    the command's arity is -3; 7.0's arity 3 refuses it before this runs."""
    withscore = len(argv) > 3
    if withscore:
        if len(argv) > 4:
            raise wrong_arity("zrevrank" if reverse else "zrank")
        if option_word(argv[3]) != b"withscore":
            raise CommandError(SYNTAX)
    zs = get_zset(c, argv[1])
    enc = c.enc
    if zs is None:
        return enc.null_array if withscore else enc.null
    r = zs.rank(argv[2], reverse)
    if r is None:
        return enc.null_array if withscore else enc.null
    if withscore:
        return b"*2\r\n%s%s" % (R.integer(r), enc.double(zs.score(argv[2])))
    return R.integer(r)


def zrank(c, argv):
    return _rank(c, argv, False)


command("zrank")(zrank)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrevrank(c, argv):
    return _rank(c, argv, True)


command("zrevrank")(zrevrank)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zcount(c, argv):
    r = parse_score_range(argv[2], argv[3])
    zs = get_zset(c, argv[1])
    if zs is None:
        return R.ZERO
    lo, hi = zs.score_bounds(r)
    return R.integer(hi - lo)


command("zcount")(zcount)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zlexcount(c, argv):
    r = parse_lex_range(argv[2], argv[3])
    zs = get_zset(c, argv[1])
    if zs is None:
        return R.ZERO
    return R.integer(zs.lex_count(r))


command("zlexcount")(zlexcount)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- ZRANGE family -------------------------------------------------------------------------------
RANK, SCORE, LEX = 1, 2, 3


def rank_range(zs: ZSet, start: int, end: int, reverse: bool, texts: bool = False) -> list[tuple[Any, bytes]]:
    """The pairs of ranks start..end (Redis's clamping), `texts` as ZSet.rank_slice's (a reply's)."""
    n = len(zs)
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return []
    if end >= n:
        end = n - 1
    if reverse:
        part = zs.rank_slice(n - 1 - end, n - start, texts)
        part.reverse()
        return part
    return zs.rank_slice(start, end + 1, texts)


def _offset_limit(it, offset: int, limit: int) -> list[tuple[float, bytes]]:
    if offset < 0:
        return []  # Redis's `while (offset--)` walks past the end
    out = []
    for pair in it:
        if offset:
            offset -= 1
            continue
        if limit == 0:
            break
        out.append(pair)
        limit -= 1
    return out


def score_range(zs: ZSet, r: ScoreRange, reverse: bool, offset: int = 0, limit: int = -1,
                texts: bool = False) -> list[tuple[Any, bytes]]:
    """The pairs within `r` after `offset`, at most `limit`; `texts` as ZSet.rank_slice's."""
    if offset > 0 and offset >= len(zs):
        return []
    lo, hi = zs.score_bounds(r)
    if lo >= hi or offset < 0:
        return []
    if reverse:
        a = hi - 1 - offset
        b = lo - 1 if limit < 0 else max(lo - 1, a - limit)
        if a < lo:
            return []
        part = zs.rank_slice(b + 1, a + 1, texts)
        part.reverse()
        return part
    a = lo + offset
    b = hi if limit < 0 else min(hi, a + limit)
    return zs.rank_slice(a, b, texts) if a < b else []


def lex_range(zs: ZSet, r: LexRange, reverse: bool, offset: int = 0, limit: int = -1
              ) -> list[tuple[float, bytes]]:
    if offset > 0 and offset >= len(zs):
        return []
    return _offset_limit(zs.lex_walk(r, reverse), offset, limit)


def zrange_generic(c, argv: list[bytes], key_idx: int, dst: bytes | None, rangetype: int | None,
                   reverse: bool | None) -> bytes | tuple[bytes, ...]:
    """zrangeGenericCommand: ZRANGE / ZRANGESTORE (rangetype and direction None = chosen by the
    arguments) and the legacy forms with a fixed type and direction."""
    store = dst is not None
    n = len(argv)
    withscores = False
    offset, limit = 0, -1
    j = key_idx + 3
    while j < n:
        opt = option_word(argv[j])
        if not store and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and n - j - 1 >= 2:
            offset = to_int(argv[j + 1])
            limit = to_int(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"rev":
            reverse = True
        elif rangetype is None and opt == b"bylex":
            rangetype = LEX
        elif rangetype is None and opt == b"byscore":
            rangetype = SCORE
        else:
            raise CommandError(SYNTAX)
        j += 1
    reverse = bool(reverse)
    if rangetype is None:
        rangetype = RANK
    if limit != -1 and rangetype == RANK:
        raise CommandError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    if withscores and rangetype == LEX:
        raise CommandError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    lo_arg, hi_arg = argv[key_idx + 1], argv[key_idx + 2]
    if reverse and rangetype != RANK:
        lo_arg, hi_arg = hi_arg, lo_arg
    if rangetype == RANK:
        start, end = to_int(lo_arg), to_int(hi_arg)
    elif rangetype == SCORE:
        srange = parse_score_range(lo_arg, hi_arg)
    else:
        lrange = parse_lex_range(lo_arg, hi_arg)
    zs = get_zset(c, argv[key_idx])
    if zs is None:
        pairs = []
    elif rangetype == RANK:  # a reply's scores as its listpack's text (withscores: never a store)
        pairs = rank_range(zs, start, end, reverse, withscores)
    elif rangetype == SCORE:
        pairs = score_range(zs, srange, reverse, offset, limit, withscores)
    else:
        pairs = lex_range(zs, lrange, reverse, offset, limit)
    if not pairs and not store:
        return R.EMPTY_ARRAY  # an empty range (or no key) in either protocol
    if store:
        # Redis starts a listpack unless a rank range is known to be too long, then adds the
        # elements in emission order (the conversion point decides which scores lose a -0)
        max_entries, max_value = listpack_limits(c)
        listpack = rangetype != RANK or len(pairs) <= max_entries
        return store_result(c, dst, ZSet.built_by_adds(pairs, listpack, max_entries, max_value),  # type: ignore[arg-type]  # store: dst is set
                            "zrangestore")
    return pairs_reply(c, pairs, withscores)


def zrange(c, argv):
    return zrange_generic(c, argv, 1, None, None, None)


command("zrange")(zrange)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrangestore(c, argv):
    return zrange_generic(c, argv, 2, argv[1], None, None)


command("zrangestore")(zrangestore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrevrange(c, argv):
    return zrange_generic(c, argv, 1, None, RANK, True)


command("zrevrange")(zrevrange)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrangebyscore(c, argv):
    return zrange_generic(c, argv, 1, None, SCORE, False)


command("zrangebyscore")(zrangebyscore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrevrangebyscore(c, argv):
    return zrange_generic(c, argv, 1, None, SCORE, True)


command("zrevrangebyscore")(zrevrangebyscore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrangebylex(c, argv):
    return zrange_generic(c, argv, 1, None, LEX, False)


command("zrangebylex")(zrangebylex)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zrevrangebylex(c, argv):
    return zrange_generic(c, argv, 1, None, LEX, True)


command("zrevrangebylex")(zrevrangebylex)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- removal -------------------------------------------------------------------------------------
def zrem(c, argv):
    key = argv[1]
    zs = get_zset(c, key, True)
    if zs is None:
        return R.ZERO
    deleted = 0
    for m in argv[2:]:
        if zs.delete(m):
            deleted += 1
            if not len(zs):
                break
    if deleted:
        _after_removal(c, key, zs, "zrem", deleted)
    return R.integer(deleted)


command("zrem")(zrem)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def _zremrange(c, argv, rangetype: int) -> bytes:
    key = argv[1]
    if rangetype == RANK:
        start, end = to_int(argv[2]), to_int(argv[3])
    elif rangetype == SCORE:
        srange = parse_score_range(argv[2], argv[3])
    else:
        lrange = parse_lex_range(argv[2], argv[3])
    zs = get_zset(c, key, True)
    if zs is None:
        return R.ZERO
    if rangetype == RANK:
        n = len(zs)
        if start < 0:
            start += n
        if end < 0:
            end += n
        if start < 0:
            start = 0
        if start > end or start >= n:
            return R.ZERO
        if end >= n:
            end = n - 1
        removed = zs.delete_slice(start, end + 1)
        event = "zremrangebyrank"
    elif rangetype == SCORE:
        lo, hi = zs.score_bounds(srange)
        removed = zs.delete_slice(lo, hi)
        event = "zremrangebyscore"
    else:
        first = zs.lex_first(lrange)
        removed = 0 if first is None else zs.delete_slice(first, first + sum(1 for _ in zs.lex_walk(lrange, False)))
        event = "zremrangebylex"
    if removed:
        _after_removal(c, key, zs, event, removed)
    return R.integer(removed)


def zremrangebyrank(c, argv):
    return _zremrange(c, argv, RANK)


command("zremrangebyrank")(zremrangebyrank)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zremrangebyscore(c, argv):
    return _zremrange(c, argv, SCORE)


command("zremrangebyscore")(zremrangebyscore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zremrangebylex(c, argv):
    return _zremrange(c, argv, LEX)


command("zremrangebylex")(zremrangebylex)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- pops ----------------------------------------------------------------------------------------
def zpop_pairs(c, key: bytes, zs: ZSet, from_max: bool, count: int) -> list[tuple[Any, bytes]]:
    """Pop up to `count` elements of the (existing, non-empty) zset at `key`, with notification,
    key deletion when emptied and WATCH invalidation.  Shared with BZPOPMIN/BZPOPMAX/BZMPOP."""
    pairs = zs.pop(count, from_max, True)  # the scores as a reply reads them: every caller replies
    _after_removal(c, key, zs, "zpopmax" if from_max else "zpopmin", len(pairs))
    return pairs


def _zpop(c, argv, from_max: bool) -> bytes | tuple[bytes, ...]:
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    count = 1
    if len(argv) == 3:
        count = to_int(argv[2], POSITIVE)
        if count < 0:
            raise CommandError(POSITIVE)
    key = argv[1]
    zs = get_zset(c, key, True)
    if zs is None or count == 0:
        return R.EMPTY_ARRAY
    pairs = zpop_pairs(c, key, zs, from_max, count)
    if len(argv) == 3 and c.resp > 2:
        return pairs_reply(c, pairs, True)
    return _flat_pairs_reply(c, pairs)


def zpopmin(c, argv):
    return _zpop(c, argv, False)


command("zpopmin")(zpopmin)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zpopmax(c, argv):
    return _zpop(c, argv, True)


command("zpopmax")(zpopmax)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def parse_mpop(argv: list[bytes], numkeys_idx: int) -> tuple[list[bytes], bool, int]:
    """`numkeys key [key ...] MIN|MAX [COUNT count]` -> (keys, from_max, count)."""
    numkeys = to_int(argv[numkeys_idx], "ERR numkeys should be greater than 0")
    if numkeys < 1:
        raise CommandError("ERR numkeys should be greater than 0")
    where_idx = numkeys_idx + numkeys + 1
    n = len(argv)
    if where_idx >= n:
        raise CommandError(SYNTAX)
    where = option_word(argv[where_idx])
    if where == b"min":
        from_max = False
    elif where == b"max":
        from_max = True
    else:
        raise CommandError(SYNTAX)
    count = -1
    j = where_idx + 1
    while j < n:
        if count == -1 and option_word(argv[j]) == b"count" and j + 1 < n:
            count = to_int(argv[j + 1], "ERR count should be greater than 0")
            if count < 1:
                raise CommandError("ERR count should be greater than 0")
            j += 2
        else:
            raise CommandError(SYNTAX)
    return argv[numkeys_idx + 1:where_idx], from_max, 1 if count == -1 else count


def first_nonempty(c, keys: list[bytes]) -> tuple[bytes, ZSet] | None:
    """The first existing key among `keys` (type-checked up to it), as genericZpopCommand picks."""
    for key in keys:
        zs = get_zset(c, key, True)
        if zs is not None:
            return key, zs
    return None


def zmpop(c, argv):
    keys, from_max, count = parse_mpop(argv, 1)
    found = first_nonempty(c, keys)
    if found is None:
        return c.enc.null_array
    key, zs = found
    propagate.rewrite_count_pop(c, b"ZPOPMAX" if from_max else b"ZPOPMIN", key, min(count, len(zs)))
    return zmpop_reply(c, key, zpop_pairs(c, key, zs, from_max, count))


command("zmpop")(zmpop)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- blocking pops -------------------------------------------------------------------------------
# BZPOPMIN, BZPOPMAX and BZMPOP pop at once when they can and block through server/net/blocking.py
# when not; the same pops serve them later.  Either way they travel as ZPOPMIN / ZPOPMAX (BZMPOP
# with the count it took).
_ZPOPMIN, _ZPOPMAX = b"ZPOPMIN", b"ZPOPMAX"


def _zpop_for(c, key: bytes, from_max: bool, count: int | None, served: bool = False) -> bytes | None:
    """Pop for BZPOPMIN/BZPOPMAX (count None) or BZMPOP, propagated as ZPOPMIN/ZPOPMAX (with the
    count it took)."""
    zs = c.db.get(key, c.server.now_ms)
    if zs is None or type(zs) is not ZSet or not len(zs):
        return None
    if c.server.also_propagate is not None:
        op = [_ZPOPMAX if from_max else _ZPOPMIN, key]
        if count is not None:
            op.append(b"%d" % min(count, len(zs)))
        blocking.propagate_as(c, op, served)
    pairs = zpop_pairs(c, key, zs, from_max, 1 if count is None else count)
    return bzpop_reply(c, key, pairs[0]) if count is None else zmpop_reply(c, key, pairs)


def _pop_or_block(c, keys: list[bytes], deadline: int, from_max: bool, count: int | None):
    """BZPOPMIN / BZPOPMAX (count None) and BZMPOP: pop from the first non-empty sorted set now,
    or block on all of `keys` until `deadline`."""
    found = first_nonempty(c, keys)
    if found is not None:
        return _zpop_for(c, found[0], from_max, count)
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _zpop_for(cl, key, from_max, count, True),
                          btype="zset")


def _bzpop(c, argv, from_max: bool):
    deadline = blocking.parse_timeout(argv[-1], c.server.now_ms)
    return _pop_or_block(c, argv[1:-1], deadline, from_max, None)


def bzpopmin(c, argv):
    return _bzpop(c, argv, False)


command("bzpopmin")(bzpopmin)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def bzpopmax(c, argv):
    return _bzpop(c, argv, True)


command("bzpopmax")(bzpopmax)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def bzmpop(c, argv):
    deadline = blocking.parse_timeout(argv[1], c.server.now_ms)
    keys, from_max, count = parse_mpop(argv, 2)
    return _pop_or_block(c, keys, deadline, from_max, count)


command("bzmpop")(bzmpop)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- ZRANDMEMBER ---------------------------------------------------------------------------------
def _random_pairs_reply(picked: list[tuple[float, bytes]], c, withscores: bool) -> bytes:
    """pairs_reply as one bytes object, ZRANDMEMBER's encoder for a negative count (random_picks_reply
    cuts it in chunks).  Module level, not a lambda: a cpdef handler takes no closure."""
    return R.flat(pairs_reply(c, picked, withscores))


def zrandmember(c, argv):
    key = argv[1]
    if len(argv) == 2:
        zs = get_zset(c, key)
        return c.enc.null if zs is None else R.value(zs.random_pair()[1])
    count = to_int(argv[2])
    if count == INT64_MIN:
        raise CommandError(LONG_RANGE)
    withscores = False
    if len(argv) > 4 or (len(argv) == 4 and option_word(argv[3]) != b"withscores"):
        raise CommandError(SYNTAX)
    if len(argv) == 4:
        withscores = True
        if abs(count) > 2**62 - 1:  # LONG_MAX / 2
            raise CommandError("ERR value is out of range")
    zs = get_zset(c, key)
    if zs is None or count == 0:
        return R.EMPTY_ARRAY
    if count < 0:
        return random_picks_reply(c, count, 2 if withscores and c.resp == 2 else 1, zs.choices,
                                  _random_pairs_reply, c, withscores)
    if count == 1:
        pairs = [zs.random_pair()]
    elif count >= len(zs):
        pairs = zs.rank_slice(0, len(zs), True)
        pairs.reverse()  # Redis 7.0 replies with the whole zset, highest first
    else:
        pairs = zs.sample(count)
    return pairs_reply(c, pairs, withscores)


command("zrandmember")(zrandmember)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- ZUNION / ZINTER / ZDIFF ---------------------------------------------------------------------
UNION, INTER, DIFF = 1, 2, 3
_AGG_SUM, _AGG_MIN, _AGG_MAX = 0, 1, 2
_OP_NAMES = {UNION: "zunion", INTER: "zinter", DIFF: "zdiff"}


def _src_pairs(v) -> list[tuple[float, bytes]]:
    if type(v) is ZSet:
        return list(v)
    return [(1.0, m) for m in v.members()]


def _src_score(v, m: bytes) -> float | None:
    if type(v) is ZSet:
        return v.score(m)
    return 1.0 if m in v else None


def _aggregate(target: float, val: float, how: int) -> float:
    if how == _AGG_SUM:
        t = target + val
        return 0.0 if t != t else t
    if how == _AGG_MIN:
        return val if val < target else target
    return val if val > target else target


def _combine(srcs: list, weights: list[float], op: int, how: int, card_limit: int | None
             ) -> dict[bytes, float] | int:
    """The member -> score result of the operation (or, with card_limit, only the intersection's
    cardinality), accumulating scores in Redis's source order."""
    if op == DIFF:
        first = srcs[0]
        if first is None:
            return {}
        others = [s for s in srcs[1:] if s is not None]
        return {m: s for s, m in _src_pairs(first) if not any(_src_score(o, m) is not None for o in others)}
    order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]) if srcs[i] is not None else 0)
    srcs = [srcs[i] for i in order]
    weights = [weights[i] for i in order]
    if op == UNION:
        acc: dict[bytes, float] = {}
        for src, w in zip(srcs, weights, strict=True):
            if src is None:
                continue
            for sc, m in _src_pairs(src):
                score = w * sc
                if score != score:
                    score = 0.0
                cur = acc.get(m)
                acc[m] = score if cur is None else _aggregate(cur, score, how)
        return acc
    first = srcs[0]
    if first is None or not len(first):
        return 0 if card_limit is not None else {}
    rest = list(zip(srcs[1:], weights[1:], strict=True))
    w0 = weights[0]
    out: dict[bytes, float] = {}
    count = 0
    for sc, m in _src_pairs(first):
        score = w0 * sc
        if score != score:
            score = 0.0
        for src, w in rest:
            if src is first:
                val = sc * w
            else:
                if src is None:
                    break
                v = _src_score(src, m)
                if v is None:
                    break
                val = v * w
            score = _aggregate(score, val, how)
        else:
            if card_limit is not None:
                count += 1
                if count == card_limit:
                    break
            else:
                out[m] = score
    return count if card_limit is not None else out


def zsetop_generic(c, argv: list[bytes], numkeys_idx: int, dst: bytes | None, op: int,
                   cardinality_only: bool = False) -> bytes | tuple[bytes, ...]:
    fullname = argv[0].decode(errors="replace").lower()
    numkeys = to_int(argv[numkeys_idx])
    if numkeys < 1:
        raise CommandError(f"ERR at least 1 input key is needed for '{fullname}' command")
    n = len(argv)
    if numkeys > n - numkeys_idx - 1:
        raise CommandError(SYNTAX)
    keys = argv[numkeys_idx + 1:numkeys_idx + 1 + numkeys]
    srcs = []
    for k in keys:
        v = lookup_write(c, k) if dst is not None else lookup_read(c, k)
        if type(v) is Intset:
            v = as_set(v)
        elif v is not None and type(v) is not ZSet and type(v) is not RSet:
            raise CommandError(WRONGTYPE)
        srcs.append(v)
    weights = [1.0] * numkeys
    how = _AGG_SUM
    withscores = False
    limit = 0
    j = numkeys_idx + 1 + numkeys
    while j < n:
        remaining = n - j
        opt = option_word(argv[j])
        if op != DIFF and not cardinality_only and remaining >= numkeys + 1 and opt == b"weights":
            for i in range(numkeys):
                weights[i] = parse_score(argv[j + 1 + i], "ERR weight value is not a float")
            j += numkeys + 1
        elif op != DIFF and not cardinality_only and remaining >= 2 and opt == b"aggregate":
            a = option_word(argv[j + 1])
            if a == b"sum":
                how = _AGG_SUM
            elif a == b"min":
                how = _AGG_MIN
            elif a == b"max":
                how = _AGG_MAX
            else:
                raise CommandError(SYNTAX)
            j += 2
        elif dst is None and not cardinality_only and opt == b"withscores":
            withscores = True
            j += 1
        elif cardinality_only and remaining >= 2 and opt == b"limit":
            limit = to_int(argv[j + 1], "ERR LIMIT can't be negative")
            if limit < 0:
                raise CommandError("ERR LIMIT can't be negative")
            j += 2
        else:
            raise CommandError(SYNTAX)
    if cardinality_only:
        return R.integer(_combine(srcs, weights, op, how, limit or -1))  # type: ignore[arg-type]
    result = _combine(srcs, weights, op, how, None)
    pairs = sorted([(s, m) for m, s in result.items()])  # type: ignore[union-attr]
    if dst is not None:
        return store_result(c, dst, ZSet.from_pairs(pairs, *listpack_limits(c)), _OP_NAMES[op] + "store")
    return pairs_reply(c, pairs, withscores)


def zunion(c, argv):
    return zsetop_generic(c, argv, 1, None, UNION)


command("zunion")(zunion)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zinter(c, argv):
    return zsetop_generic(c, argv, 1, None, INTER)


command("zinter")(zinter)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zdiff(c, argv):
    return zsetop_generic(c, argv, 1, None, DIFF)


command("zdiff")(zdiff)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zunionstore(c, argv):
    return zsetop_generic(c, argv, 2, argv[1], UNION)


command("zunionstore")(zunionstore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zinterstore(c, argv):
    return zsetop_generic(c, argv, 2, argv[1], INTER)


command("zinterstore")(zinterstore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zdiffstore(c, argv):
    return zsetop_generic(c, argv, 2, argv[1], DIFF)


command("zdiffstore")(zdiffstore)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


def zintercard(c, argv):
    return zsetop_generic(c, argv, 1, None, INTER, cardinality_only=True)


command("zintercard")(zintercard)  # not a decorator: compiled, a cpdef function (t_zset.pxd)


# ---- ZSCAN ---------------------------------------------------------------------------------------
def zscan(c, argv):
    cursor = parse_cursor(argv[2])
    opts = parse_scan_options(argv, 3)
    zs = get_zset(c, argv[1])
    if zs is None:
        return b"*2\r\n$1\r\n0\r\n*0\r\n"
    match = None if opts.match is None else compile_glob(opts.match)
    step = zs.scan_pairs(cursor, opts.count)
    if step is not None:  # a skiplist: the scores written by the WITHSCORES writer, as bulk strings
        nxt, pairs = step
        if match is not None:
            pairs = [p for p in pairs if match(p[1])]
        cur = b"%d" % nxt
        return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + R.scored_members(c.enc, pairs, True)
    nxt, items = zs.scan(cursor, opts.count)  # member, score text, member, score text...
    if match is not None or c.enc.short_doubles:  # 7.2's d2string (compat-version): the shortest text
        kept = []
        for i in range(0, len(items), 2):
            m = items[i]
            if match is None or match(m):
                kept.append(m)
                kept.append(R.score_text(c.enc, items[i + 1]))
        items = kept
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + R.bulk_strings(items)


command("zscan")(zscan)  # not a decorator: compiled, a cpdef function (t_zset.pxd)
