"""Set commands (Redis's t_set.c): SADD .. SSCAN over `storage.set_type.RSet`.

Each command works on an RSet: the stored one for a hashtable, one made by `as_set` over a copy of
an intset's bytes (the keyspace keeps an intset as a bare `Intset`).  So a write ends by storing
what the RSet says the key holds now (`_keep`): a new `Intset`, or the RSet once converted.

From compat-version 7.2 small sets of strings are listpacks (storage/set_type.py): SMEMBERS and the
other iterations reply in their order, SADD chooses a new set's encoding from its first member and
count (setTypeCreate) and converts an existing one the count would overflow first, as 7.2 does.

Replies follow Redis 7.0 exactly: SMEMBERS / SINTER / SUNION / SDIFF / SPOP-with-count are RESP3 sets
(`~`), SRANDMEMBER-with-count and SMISMEMBER are arrays.  Where Redis's output order is
deterministic it is reproduced: an intset iterates in ascending order, and SUNION / SDIFF / SPOP of
the whole set reply from a freshly built set (an intset again when every member is an integer), as
Redis does.  All source keys are type-checked before any work, as 7.0 does.

The encoding limits (`config.set_limits`) are read at each write, so CONFIG SET applies to the next
write.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import SYNTAX, WRONGTYPE, CommandError
from raxdb.server.commands.scanargs import parse_cursor, parse_scan_options
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_SET,
    lookup_read,
    lookup_write,
    modified,
    notify,
    set_key,
)
from raxdb.server.table.args import INT64_MIN, option_word, random_picks_reply, to_int
from raxdb.server.table.registry import command
from raxdb.storage.glob import compile_glob
from raxdb.storage.set_type import RSet, as_set

_POSITIVE = "ERR value is out of range, must be positive"
_LONG_RANGE = ("ERR value is out of range, value must between -9223372036854775807 and "
               "9223372036854775807")


def set_limits(c) -> tuple:
    return c.server.config.set_limits


def set_reply(c, members: list[bytes] | set[bytes]) -> bytes | tuple[bytes, ...]:
    """Members as a command's whole reply: a set (an array in RESP2), big members by reference."""
    return R.values(members, 126 if c.resp == 3 else 42)


def _array_reply(members: list[bytes]) -> bytes:
    return R.bulk_strings(members)


def _set_of(v) -> RSet | None:
    """The RSet to work on for a looked-up value (None for a missing key), WRONGTYPE if not a set."""
    if v is None or type(v) is RSet:
        return v
    s = as_set(v)
    if s is None:
        raise CommandError(WRONGTYPE)
    return s


def _get_set(c, key: bytes) -> RSet | None:
    return _set_of(lookup_read(c, key))


def _keep(c, key: bytes, stored, s: RSet) -> None:
    """After a write to `s`, made from `stored` (the key's value): store what the key holds now,
    when that is a new object (always after an intset changed; never for a hashtable, written in
    place, so callers may skip the call when `s is stored`)."""
    new = s.stored()
    if new is not stored:
        c.db.replace(key, new)


def _deleted(c, key: bytes) -> None:
    c.db.delete(key)
    notify(c, NOTIFY_GENERIC, "del", key)


# ---- single-key commands -----------------------------------------------------------------------
def sadd(c, argv):
    key = argv[1]
    db = c.db
    v = db.get(key, c.server.now_ms)  # lookupKeyWrite
    limit = c.server.config.set_limits
    if v is None:
        s = RSet() if not limit[3] else RSet.create(argv[2], len(argv) - 2, limit)
    elif type(v) is RSet:  # a hashtable or a listpack: written in place
        s = v
    else:
        s = _set_of(v)
    if limit[3] and v is not None:  # 7.2's setTypeMaybeConvert: converted even if nothing is added
        s.hint(len(argv) - 2, limit)
        if s is not v and not s.is_intset():
            db.replace(key, s)
            v = s
    if len(argv) == 3:  # one member, the benchmarked shape: no loop
        if not s.add(argv[2], limit):
            return R.ZERO
        added = 1
    else:
        add = s.add
        added = 0
        for i in range(2, len(argv)):
            if add(argv[i], limit):
                added += 1
        if not added:
            return R.ZERO
    if v is None:  # dbAdd: a new set always gains its first member
        db.add(key, s.stored())
    elif s is not v:
        _keep(c, key, v, s)
    srv = c.server
    if db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_SET, "sadd", key)
        srv.dirty += added - 1
    else:
        srv.dirty += added
    return R.integer(added)


command("sadd")(sadd)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def srem(c, argv):
    key = argv[1]
    v = lookup_write(c, key)
    s = _set_of(v)
    if s is None:
        return R.ZERO
    removed = 0
    for m in argv[2:]:
        if s.remove(m):
            removed += 1
            if not len(s):
                break
    if removed:
        notify(c, NOTIFY_SET, "srem", key)
        if not len(s):
            _deleted(c, key)
        elif s is not v:
            _keep(c, key, v, s)
        modified(c, key)
        c.server.dirty += removed - 1
    return R.integer(removed)


command("srem")(srem)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def smembers(c, argv):
    s = _get_set(c, argv[1])
    if s is None:
        return c.enc.set_header(0)
    return set_reply(c, s.view())


command("smembers")(smembers)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sismember(c, argv):
    s = _get_set(c, argv[1])
    return R.ONE if s is not None and argv[2] in s else R.ZERO


command("sismember")(sismember)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def smismember(c, argv):
    s = _get_set(c, argv[1])
    members = argv[2:]
    if s is None:
        return b"*%d\r\n" % len(members) + R.ZERO * len(members)
    return b"*%d\r\n" % len(members) + b"".join([R.ONE if m in s else R.ZERO for m in members])


command("smismember")(smismember)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def scard(c, argv):
    s = _get_set(c, argv[1])
    return R.integer(len(s)) if s is not None else R.ZERO


command("scard")(scard)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def spop(c, argv):
    key = argv[1]
    if len(argv) == 2:
        v = lookup_write(c, key)
        s = _set_of(v)
        if s is None:
            return c.enc.null
        m = s.pop_random()
        notify(c, NOTIFY_SET, "spop", key)
        if not len(s):
            _deleted(c, key)
        elif s is not v:
            _keep(c, key, v, s)
        modified(c, key)
        if c.server.also_propagate is not None:  # the member drawn, so a replay removes the same
            propagate.rewrite(c, [b"SREM", key, m])
        return R.value(m)
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    count = to_int(argv[2], _POSITIVE)
    if count < 0:
        raise CommandError(_POSITIVE)
    v = lookup_write(c, key)
    s = _set_of(v)
    if s is None or count == 0:
        return c.enc.set_header(0)
    limit = set_limits(c)
    if count >= len(s):
        members = RSet.of(s.members(), limit).members()
        notify(c, NOTIFY_SET, "spop", key)
        _deleted(c, key)
        if c.server.also_propagate is not None:  # always DEL, whatever lazyfree-lazy-user-del says
            propagate.rewrite(c, [b"DEL", key])
    else:
        members, replacement = s.spop_many(count, limit)
        if replacement is not None:
            c.db.replace(key, replacement.stored())
        elif s is not v:
            _keep(c, key, v, s)
        notify(c, NOTIFY_SET, "spop", key)
        srv = c.server
        if srv.also_propagate is not None:  # one SREM per member drawn, in the reply's order
            propagate.prevent(c)
            dbid = c.dbid
            for m in members:
                propagate.also(srv, dbid, [b"SREM", key, m])
    modified(c, key)
    return set_reply(c, members)


command("spop")(spop)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def srandmember(c, argv):
    key = argv[1]
    if len(argv) == 2:
        s = _get_set(c, key)
        return c.enc.null if s is None else R.value(s.random_member())
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    count = to_int(argv[2])
    if count == INT64_MIN:
        raise CommandError(_LONG_RANGE)
    s = _get_set(c, key)
    if s is None or count == 0:
        return R.EMPTY_ARRAY
    if count < 0:
        return random_picks_reply(c, count, 1, s.choices, _array_reply)
    if count >= len(s):
        return R.values(s.members())
    return R.values(s.sample(count))


command("srandmember")(srandmember)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def smove(c, argv):
    src_key, dst_key, m = argv[1], argv[2], argv[3]
    src_v = lookup_write(c, src_key)
    dst_v = lookup_write(c, dst_key)
    if src_v is None:
        return R.ZERO
    src = _set_of(src_v)
    dst = _set_of(dst_v)
    if src_key == dst_key:  # Redis compares the objects: one key, one object
        return R.ONE if m in src else R.ZERO
    if not src.remove(m):
        return R.ZERO
    notify(c, NOTIFY_SET, "srem", src_key)
    if not len(src):
        _deleted(c, src_key)
    else:
        _keep(c, src_key, src_v, src)
    limits = set_limits(c)
    if dst is None:  # dbAdd (before the source's signal, as in Redis) of a new set of the member
        dst = RSet() if not limits[3] else RSet.create(m, 1, limits)
        dst.add(m, limits)
        c.db.add(dst_key, dst.stored())
        added = True
    else:
        added = dst.add(m, limits)
        if added:
            _keep(c, dst_key, dst_v, dst)
    modified(c, src_key)
    if added:
        modified(c, dst_key)
        notify(c, NOTIFY_SET, "sadd", dst_key)
    return R.ONE


command("smove")(smove)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sscan(c, argv):
    cursor = parse_cursor(argv[2])
    opts = parse_scan_options(argv, 3)
    s = _get_set(c, argv[1])
    if s is None:
        return b"*2\r\n$1\r\n0\r\n*0\r\n"
    nxt, members = s.scan(cursor, opts.count)
    if opts.match is not None:
        match = compile_glob(opts.match)
        members = [m for m in members if match(m)]
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + _array_reply(members)


command("sscan")(sscan)  # not a decorator: compiled, a cpdef function (t_set.pxd)


# ---- multi-key algebra -------------------------------------------------------------------------
def _sources(c, keys: list[bytes], write: bool) -> list[RSet | None]:
    """Every key's set (None when missing), type-checking all of them first as Redis 7.0 does."""
    return [_set_of(lookup_write(c, k) if write else lookup_read(c, k)) for k in keys]


def intersection(sets: list[RSet | None], limit: int = 0) -> list[bytes]:
    """Members common to every set, in the iteration order of the smallest (as Redis streams it);
    stops after `limit` members when limit > 0."""
    if not sets or any(s is None for s in sets):
        return []
    ordered: list[RSet] = sorted(sets, key=len)  # type: ignore[arg-type]
    first = ordered[0]
    rest = [s for s in ordered[1:] if s is not first]
    if not rest:
        out = first.members()
        return out[:limit] if limit else out
    if not any(s.is_intset() for s in ordered):  # every set a hashtable: test the Python sets
        tables = [s.data for s in rest]
        if len(tables) == 1:  # (SINTER of two sets: one membership test per member, no generator)
            table = tables[0]
            out = [m for m in first.data if m in table]  # type: ignore[misc]  # hashtables: sets
        else:
            out = [m for m in first.data if all(m in t for t in tables)]  # type: ignore[misc]  # hashtables: sets
        return out[:limit] if limit else out
    out = []
    for m in first.members():
        for s in rest:
            if m not in s:
                break
        else:
            out.append(m)
            if len(out) == limit:
                break
    return out


def union(sets: list[RSet | None], limit: tuple) -> RSet:
    return RSet.of([m for s in sets if s is not None for m in s], limit)


def difference(sets: list[RSet | None], limit: tuple) -> RSet:
    first = sets[0]
    if first is None:
        return RSet()
    others = [s for s in sets[1:] if s is not None]
    if any(s is first for s in others):
        return RSet()
    n = len(first)
    if n * (len(others) + 1) // 2 > n + sum(map(len, others)):
        # t_set.c's second algorithm, which Redis picks when the first set is large beside the
        # others: every member of the first set goes into the result, then the others' members
        # come out, so the result keeps the encoding the whole first set made (a hashtable stays
        # one however few members are left; a listpack keeps the first set's order)
        result = RSet.of(first.members(), limit)
        for s in others:
            for m in s:
                result.remove(m)
        return result
    return RSet.of([m for m in first.members() if not any(m in s for s in others)], limit)


def _store(c, dst: bytes, result: RSet, event: str) -> bytes:
    n = len(result)
    if n:
        set_key(c, dst, result.stored())
        notify(c, NOTIFY_SET, event, dst)
        modified(c, dst)
    elif c.db.delete(dst):
        notify(c, NOTIFY_GENERIC, "del", dst)
        modified(c, dst)
    return R.integer(n)


def sinter(c, argv):
    return set_reply(c, intersection(_sources(c, argv[1:], False)))


command("sinter")(sinter)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sinterstore(c, argv):
    sets = _sources(c, argv[2:], True)
    members = intersection(sets)
    smallest = min(sets, key=len) if members else None  # (no None among them then)
    from_intset = smallest is not None and smallest.is_intset()
    return _store(c, argv[1], RSet.built(members, set_limits(c), from_intset), "sinterstore")


command("sinterstore")(sinterstore)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sintercard(c, argv):
    numkeys = to_int(argv[1], "ERR numkeys should be greater than 0")
    if numkeys < 1:
        raise CommandError("ERR numkeys should be greater than 0")
    if numkeys > len(argv) - 2:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    limit = 0
    j = 2 + numkeys
    while j < len(argv):
        if option_word(argv[j]) == b"limit" and j + 1 < len(argv):
            limit = to_int(argv[j + 1], "ERR LIMIT can't be negative")
            if limit < 0:
                raise CommandError("ERR LIMIT can't be negative")
            j += 2
        else:
            raise CommandError(SYNTAX)
    return R.integer(len(intersection(_sources(c, argv[2:2 + numkeys], False), limit)))


command("sintercard")(sintercard)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sunion(c, argv):
    return set_reply(c, union(_sources(c, argv[1:], False), set_limits(c)).view())


command("sunion")(sunion)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sunionstore(c, argv):
    return _store(c, argv[1], union(_sources(c, argv[2:], True), set_limits(c)), "sunionstore")


command("sunionstore")(sunionstore)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sdiff(c, argv):
    return set_reply(c, difference(_sources(c, argv[1:], False), set_limits(c)).view())


command("sdiff")(sdiff)  # not a decorator: compiled, a cpdef function (t_set.pxd)


def sdiffstore(c, argv):
    return _store(c, argv[1], difference(_sources(c, argv[2:], True), set_limits(c)), "sdiffstore")


command("sdiffstore")(sdiffstore)  # not a decorator: compiled, a cpdef function (t_set.pxd)
