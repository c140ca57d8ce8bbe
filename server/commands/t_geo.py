"""GEO commands (Redis's geo.c): points are members of a sorted set scored by their 52-bit geohash.

GEOADD is ZADD with the scores computed: it adds through ZADD's core (t_zset.zadd_scored; its NX,
XX and CH are ZADD's, and it notifies "zadd") and propagates as the ZADD it amounts to.
Searches (GEORADIUS*, GEOSEARCH, GEOSEARCHSTORE) walk the cells storage/geohash.py picks, in its
order, and within each cell the members in score order, so an unsorted reply lists the same points
in the same order as redis-server.  ASC/DESC sort by distance; COUNT without ANY sorts ascending
and keeps the nearest, with Redis's partial quicksort when it cuts the list (ties then fall as
they fall in Redis); ANY stops the walk once COUNT points are found.  Distances are printed with
four decimals (fixedpoint_d2string), coordinates as INCRBYFLOAT prints long doubles
(addReplyHumanLongDouble: longdouble.format_human).
"""

from __future__ import annotations

from functools import partial
from operator import itemgetter

from raxdb.protocol import reply as R
from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.commands import t_zset
from raxdb.server.commands.longdouble import format_human, of_double
from raxdb.server.commands.pqsort import first_by_key
from raxdb.server.commands.t_zset import get_zset, parse_score, zadd_scored
from raxdb.server.events import propagate
from raxdb.server.table.args import maybe_int
from raxdb.server.table.registry import command
from raxdb.storage import geohash as gh
from raxdb.storage.geohash import Shape, in_range, score_of
from raxdb.storage.zset import IN_NX, IN_XX, ScoreRange, ZSet

_DISTANCE = itemgetter(2)  # of a found point (lon, lat, distance, score, member)
_UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}


# ---- arguments -----------------------------------------------------------------------------------
def _lonlat(argv: list[bytes], i: int) -> tuple[float, float]:
    """extractLongLatOrReply."""
    lon, lat = parse_score(argv[i]), parse_score(argv[i + 1])
    if not in_range(lon, lat):
        raise CommandError(b"ERR invalid longitude,latitude pair %f,%f" % (lon, lat))
    return lon, lat


def _unit(arg: bytes) -> float:
    to_meters = _UNITS.get(arg.lower())
    if to_meters is None:
        raise CommandError("ERR unsupported unit provided. please use M, KM, FT, MI")
    return to_meters


def _radius(argv: list[bytes], i: int, shape: Shape) -> None:
    r = parse_score(argv[i], "ERR need numeric radius")
    if r < 0:
        raise CommandError("ERR radius cannot be negative")
    shape.radius = r
    shape.conversion = _unit(argv[i + 1])
    shape.is_box = False


def _box(argv: list[bytes], i: int, shape: Shape) -> None:
    w = parse_score(argv[i], "ERR need numeric width")
    h = parse_score(argv[i + 1], "ERR need numeric height")
    if h < 0 or w < 0:
        raise CommandError("ERR height or width cannot be negative")
    shape.width, shape.height = w, h
    shape.conversion = _unit(argv[i + 2])
    shape.is_box = True


def _member_point(zs: ZSet, member: bytes) -> tuple[float, float]:
    score = zs.score(member)
    if score is None:
        raise CommandError("ERR could not decode requested zset member")
    return gh.decode(score)


# ---- replies -------------------------------------------------------------------------------------
def _fixed4(d: float) -> bytes:
    """fixedpoint_d2string(d, 4): rounded half to even on d * 10^4, as llrint does."""
    if d == 0:
        return b"$6\r\n0.0000\r\n"
    v = round(d * 10000.0)
    digits = b"%05d" % abs(v)
    text = (b"-" if v < 0 else b"") + digits[:-4] + b"." + digits[-4:]
    return b"$%d\r\n%s\r\n" % (len(text), text)


def _coord(c, d: float) -> bytes:
    """addReplyHumanLongDouble: the coordinate as INCRBYFLOAT prints its long doubles."""
    text = format_human(of_double(d))
    if c.resp == 2:
        return b"$%d\r\n%s\r\n" % (len(text), text)
    return b",%s\r\n" % text


# ---- GEOADD / GEOPOS / GEODIST / GEOHASH ---------------------------------------------------------
def geoadd(c, argv):
    i = 2
    nx = xx = ch = False
    while i < len(argv):
        opt = argv[i]
        if len(opt) != 2:  # not NX, XX or CH (a coordinate mostly: no lower() made of it)
            break
        opt = opt.lower()
        if opt == b"nx":
            nx = True
        elif opt == b"xx":
            xx = True
        elif opt == b"ch":
            ch = True
        else:
            break
        i += 1
    if (len(argv) - i) % 3 or (nx and xx):
        raise CommandError(SYNTAX)
    if i == len(argv):  # what ZADD says to no score-member pair
        raise CommandError(SYNTAX)
    scores = []
    for j in range(i, len(argv), 3):
        lon, lat = _lonlat(argv, j)
        scores.append(float(score_of(lon, lat)))
    members = argv[i + 2::3]
    srv = c.server
    if srv.also_propagate is not None:  # something consumes propagation (AOF, replicas)
        propagate.rewrite_geoadd(c, argv[1:i], scores, members)
    return zadd_scored(c, argv[1], scores, members, (IN_NX if nx else 0) | (IN_XX if xx else 0), ch)


command("geoadd")(geoadd)  # not a decorator: compiled, a cpdef function (t_geo.pxd)


def geopos(c, argv):
    zs = get_zset(c, argv[1])
    out = []
    for member in argv[2:]:
        score = zs.score(member) if zs is not None else None
        if score is None:
            out.append(c.enc.null_array)
        else:
            lon, lat = gh.decode(score)
            out.append(b"*2\r\n" + _coord(c, lon) + _coord(c, lat))
    return R.array(out)


command("geopos")(geopos)  # not a decorator: compiled, a cpdef function (t_geo.pxd)


def geodist(c, argv):
    to_meters = 1.0
    if len(argv) == 5:
        to_meters = _unit(argv[4])
    elif len(argv) > 5:
        raise CommandError(SYNTAX)
    zs = get_zset(c, argv[1])
    if zs is None:
        return c.enc.null
    s1, s2 = zs.score(argv[2]), zs.score(argv[3])
    if s1 is None or s2 is None:
        return c.enc.null
    (lon1, lat1), (lon2, lat2) = gh.decode(s1), gh.decode(s2)
    return _fixed4(gh.distance(lon1, lat1, lon2, lat2) / to_meters)


command("geodist")(geodist)  # not a decorator: compiled, a cpdef function (t_geo.pxd)


def geohash(c, argv):
    zs = get_zset(c, argv[1])
    out = []
    for member in argv[2:]:
        score = zs.score(member) if zs is not None else None
        if score is None:
            out.append(c.enc.null)
        else:
            out.append(R.bulk(gh.geohash_string(*gh.decode(score))))
    return R.array(out)


command("geohash")(geohash)  # not a decorator: compiled, a cpdef function (t_geo.pxd)


# ---- searches ------------------------------------------------------------------------------------
_COORDS, _MEMBER, _NOSTORE, _SEARCH, _SEARCHSTORE = 1, 2, 4, 8, 16


def _search(c, argv: list[bytes], src: int, flags: int) -> bytes:
    """georadiusGeneric."""
    zs = get_zset(c, argv[src])
    shape = Shape()
    storekey = None
    storedist = False
    if flags & _COORDS:
        base = 6
        shape.lon, shape.lat = _lonlat(argv, 2)
        _radius(argv, 4, shape)
    elif flags & _MEMBER:
        base = 5
        if zs is not None:
            shape.lon, shape.lat = _member_point(zs, argv[2])
            _radius(argv, 3, shape)
    else:
        base = 2
        if flags & _SEARCHSTORE:
            base = 3
            storekey = argv[1]
    withdist = withhash = withcoord = any_ = False
    frommember = fromloc = byradius = bybox = False
    sort = 0  # 1 ascending, 2 descending
    count = 0
    n = len(argv)
    i = base
    while i < n:
        opt = argv[i].lower()
        more = n - i - 1
        if opt == b"withdist":
            withdist = True
        elif opt == b"withhash":
            withhash = True
        elif opt == b"withcoord":
            withcoord = True
        elif opt == b"any":
            any_ = True
        elif opt == b"asc":
            sort = 1
        elif opt == b"desc":
            sort = 2
        elif opt == b"count" and more >= 1:
            v = maybe_int(argv[i + 1])
            if v is None:
                raise CommandError("ERR value is not an integer or out of range")
            if v <= 0:
                raise CommandError("ERR COUNT must be > 0")
            count = v
            i += 1
        elif opt in (b"store", b"storedist") and more >= 1 and not flags & (_NOSTORE | _SEARCH):
            storekey = argv[i + 1]
            storedist = opt == b"storedist"
            i += 1
        elif opt == b"storedist" and flags & _SEARCH and flags & _SEARCHSTORE:
            storedist = True
        elif opt == b"frommember" and more >= 1 and flags & _SEARCH and not fromloc:
            if zs is not None:
                shape.lon, shape.lat = _member_point(zs, argv[i + 1])
            frommember = True
            i += 1
        elif opt == b"fromlonlat" and more >= 2 and flags & _SEARCH and not frommember:
            shape.lon, shape.lat = _lonlat(argv, i + 1)
            fromloc = True
            i += 2
        elif opt == b"byradius" and more >= 2 and flags & _SEARCH and not bybox:
            _radius(argv, i + 1, shape)
            byradius = True
            i += 2
        elif opt == b"bybox" and more >= 3 and flags & _SEARCH and not byradius:
            _box(argv, i + 1, shape)
            bybox = True
            i += 3
        else:
            raise CommandError(SYNTAX)
        i += 1
    if storekey is not None and (withdist or withhash or withcoord):
        raise CommandError("ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
                           % ("GEOSEARCHSTORE" if flags & _SEARCHSTORE else "STORE option in GEORADIUS"))
    if flags & _SEARCH and not (frommember or fromloc):
        raise CommandError(b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + argv[0])
    if flags & _SEARCH and not (byradius or bybox):
        raise CommandError(b"ERR exactly one of BYRADIUS and BYBOX can be specified for " + argv[0])
    if any_ and not count:
        raise CommandError("ERR the ANY argument requires COUNT argument")
    if zs is None:
        if storekey is not None:
            return t_zset.store_result(c, storekey, ZSet(), "")
        return R.EMPTY_ARRAY
    if count and not sort and not any_:
        sort = 1
    found = _points_within(zs, shape, count if any_ else 0)
    if not found and storekey is None:
        return R.EMPTY_ARRAY
    returned = len(found) if count == 0 or len(found) < count else count
    if sort:
        if returned == len(found):
            found.sort(key=_DISTANCE, reverse=sort == 2)
        else:
            asc = sort == 1

            def cmp(a, b) -> int:  # noqa: ANN001 - sort_gp_asc / sort_gp_desc
                r = (a[2] > b[2]) - (a[2] < b[2])
                return r if asc else -r

            found = first_by_key(found, _DISTANCE, returned, sort == 2, cmp)
    found = found[:returned]
    conv = shape.conversion
    if storekey is None:
        extra = withdist + withhash + withcoord
        out = []
        for lon, lat, dist, score, member in found:
            parts = [R.bulk(member)]
            if withdist:
                parts.append(_fixed4(dist / conv))
            if withhash:
                parts.append(R.integer(int(score)))
            if withcoord:
                parts.append(b"*2\r\n" + _coord(c, lon) + _coord(c, lat))
            out.append(R.array(parts) if extra else parts[0])
        return R.array(out)
    pairs = sorted({m: (dist / conv if storedist else score) for _, _, dist, score, m in found}.items(),
                   key=lambda kv: (kv[1], kv[0]))
    zmax, zval = t_zset.listpack_limits(c)
    result = ZSet.from_pairs([(s, m) for m, s in pairs], zmax, zval)
    reply = t_zset.store_result(c, storekey, result, "geosearchstore" if flags & _SEARCH else "georadiusstore")
    c.server.dirty += max(0, len(pairs) - 1)
    return reply


def _points_within(zs: ZSet, shape: Shape, limit: int) -> list[tuple[float, float, float, float, bytes]]:
    """membersOfAllNeighbors: (lon, lat, distance in meters, score, member) of every member in the
    shape, cell by cell; with `limit` (ANY), stop once that many are found."""
    found: list[tuple[float, float, float, float, bytes]] = []
    cells = shape.cells()
    last = 0
    for i, (bits, step) in enumerate(cells):
        if bits == 0 and step == 0:
            continue
        if last and cells[i] == cells[last]:
            continue
        if limit and len(found) >= limit:
            break
        lo = bits << (52 - step * 2)
        hi = (bits + 1) << (52 - step * 2)
        first, end = zs.score_bounds(ScoreRange(float(lo), False, float(hi), True))
        for scores, members, a, b in zs.score_runs(first, end):
            if gh.members_within(shape, scores, members, a, b, found, limit):
                break
        last = i
    return found


def _search_command(src: int, flags: int, c, argv):  # noqa: ANN001
    return _search(c, argv, src, flags)


# One body, six commands.  GEOSEARCH (the benchmarked one) has its own cpdef entry (t_geo.pxd), so
# that run_handler calls its C function; the others are registered through functools.partial and
# keep the Python-level call.
def geosearch(c, argv):
    return _search(c, argv, 1, _SEARCH)


for _name, _src, _flags in (("georadius", 1, _COORDS), ("georadius_ro", 1, _COORDS | _NOSTORE),
                            ("georadiusbymember", 1, _MEMBER), ("georadiusbymember_ro", 1, _MEMBER | _NOSTORE),
                            ("geosearch", 1, _SEARCH), ("geosearchstore", 2, _SEARCH | _SEARCHSTORE)):
    command(_name)(geosearch if _name == "geosearch" else partial(_search_command, _src, _flags))
