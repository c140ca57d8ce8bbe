"""Geohashes as Redis's GEO commands use them: 52-bit interleaved cells of the WGS84 (Mercator-
limited) coordinate space, stored as sorted-set scores.

A point is encoded at step 26: latitude and longitude are each scaled to 26 bits over their range
(latitude over [-85.05112878, 85.05112878], longitude over [-180, 180]) and interleaved, latitude
in the even bits.  Decoding returns the cell's centre, so a stored point reads back slightly moved,
exactly as in Redis.  A search walks the cell containing the centre at a coarser step, and its
eight neighbours, as score ranges of the sorted set; every computation below is the one Redis makes
(IEEE doubles, the same order of operations), because which cells are walked decides the order of
an unsorted GEOSEARCH reply.  Standard geohash strings (GEOHASH) re-encode the point over latitude
[-90, 90].
"""

from __future__ import annotations

import math
from array import array

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, geohash.pxd cimports libc's: C calls, the same results
    from math import asin, cos, sin, sqrt

STEP_MAX = 26
LAT_MIN, LAT_MAX = -85.05112878, 85.05112878
LONG_MIN, LONG_MAX = -180.0, 180.0
EARTH_RADIUS = 6372797.560856  # meters, Redis's EARTH_RADIUS_IN_METERS
MERCATOR_MAX = 20037726.37
_D_R = math.pi / 180.0
_ODD = 0xAAAAAAAAAAAAAAAA
_EVEN = 0x5555555555555555
_MASK64 = (1 << 64) - 1
_CELLS = float(1 << STEP_MAX)  # cells per axis at step 26
# The constants the per-member functions read, under names geohash.pxd declares C doubles
# (compiled, a module attribute is a dict lookup per read; the public names above stay attributes).
_LAT_LO, _LAT_HI, _LONG_LO, _LONG_HI, _EARTH_R = LAT_MIN, LAT_MAX, LONG_MIN, LONG_MAX, EARTH_RADIUS
_HALF_PI = math.pi / 2


# The masks of the bit spreading, C integers compiled (geohash.pxd): a literal this wide would
# compile to a Python int, and every step with it to Python arithmetic.
_M32, _M16, _M8 = 0xFFFFFFFF, 0x0000FFFF0000FFFF, 0x00FF00FF00FF00FF
_M4, _M2 = 0x0F0F0F0F0F0F0F0F, 0x3333333333333333


def _spread(v: int) -> int:
    """The 32 bits of v in the even bit positions of a 64-bit word."""
    v &= _M32
    v = (v | (v << 16)) & _M16
    v = (v | (v << 8)) & _M8
    v = (v | (v << 4)) & _M4
    v = (v | (v << 2)) & _M2
    return (v | (v << 1)) & _EVEN


def _squeeze(v: int) -> int:
    """The inverse of _spread: the even bits of v, packed."""
    v &= _EVEN
    v = (v | (v >> 1)) & _M2
    v = (v | (v >> 2)) & _M4
    v = (v | (v >> 4)) & _M8
    v = (v | (v >> 8)) & _M16
    return (v | (v >> 16)) & _M32


def encode(lon: float, lat: float, step: int, lat_min: float = LAT_MIN, lat_max: float = LAT_MAX) -> int:
    """The cell's bits (step*2 of them) holding the point; the point must be within range."""
    lat_offset = (lat - lat_min) / (lat_max - lat_min) * (1 << step)
    long_offset = (lon - _LONG_LO) / (_LONG_HI - _LONG_LO) * (1 << step)  # compiled, C doubles
    return _spread(int(lat_offset)) | (_spread(int(long_offset)) << 1)


def in_range(lon: float, lat: float) -> bool:
    """Whether a point can be encoded (extractLongLatOrReply's test: GEOADD's and the searches'
    coordinates); compiled, C compares of C doubles."""
    return not (lon < _LONG_LO or lon > _LONG_HI or lat < _LAT_LO or lat > _LAT_HI)


def cell(bits: int, step: int) -> tuple[float, float, float, float]:
    """The cell's (long_min, long_max, lat_min, lat_max)."""
    ilat = _squeeze(bits)
    ilon = _squeeze(bits >> 1)
    lat_scale = LAT_MAX - LAT_MIN
    long_scale = LONG_MAX - LONG_MIN
    n = float(1 << step)
    return (LONG_MIN + (ilon * 1.0 / n) * long_scale, LONG_MIN + ((ilon + 1) * 1.0 / n) * long_scale,
            LAT_MIN + (ilat * 1.0 / n) * lat_scale, LAT_MIN + ((ilat + 1) * 1.0 / n) * lat_scale)


def decode(score: float) -> tuple[float, float]:
    """The (longitude, latitude) a stored score stands for: its step-26 cell's centre."""
    return _centre(score)


def _centre(score: float) -> tuple[float, float]:
    """decode's body (cell()'s bounds, computed without building them); compiled, a C function
    returning two doubles: a search decodes every member it walks."""
    bits = int(score)
    ilat = _squeeze(bits)
    ilon = _squeeze(bits >> 1)
    n = _CELLS
    # the bounds as locals: compiled, C doubles, so the arithmetic below is C's
    long_min, long_max, lat_min, lat_max = _LONG_LO, _LONG_HI, _LAT_LO, _LAT_HI
    lon = ((long_min + (ilon * 1.0 / n) * (long_max - long_min))
           + (long_min + ((ilon + 1) * 1.0 / n) * (long_max - long_min))) / 2
    lat = ((lat_min + (ilat * 1.0 / n) * (lat_max - lat_min))
           + (lat_min + ((ilat + 1) * 1.0 / n) * (lat_max - lat_min))) / 2
    if lon < long_min:
        lon = long_min
    elif lon > long_max:
        lon = long_max
    if lat < lat_min:
        lat = lat_min
    elif lat > lat_max:
        lat = lat_max
    return lon, lat


def score_of(lon: float, lat: float) -> int:
    return encode(lon, lat, STEP_MAX)


def _move(bits: int, step: int, d: int, moving: int, fixed: int) -> int:
    """The cell `d` (+1 or -1) along one axis: `moving` masks that axis's bits (odd bits for
    longitude, even for latitude), `fixed` the other's; the axis's bits count up or down with
    the other axis's bits set as carries, as geohash_move_x / geohash_move_y do."""
    m, f = bits & moving, bits & fixed
    zz = fixed >> (64 - step * 2)
    if d > 0:
        m = (m + (zz + 1)) & _MASK64
    else:
        m = ((m | zz) - (zz + 1)) & _MASK64
    return (m & (moving >> (64 - step * 2))) | f


def _move_x(bits: int, step: int, d: int) -> int:
    return _move(bits, step, d, _ODD, _EVEN)


def _move_y(bits: int, step: int, d: int) -> int:
    return _move(bits, step, d, _EVEN, _ODD)


def deg_rad(a: float) -> float:
    return a * _D_R


def rad_deg(a: float) -> float:
    return a / _D_R


def lat_distance(lat1: float, lat2: float) -> float:
    return _EARTH_R * abs(deg_rad(lat2) - deg_rad(lat1))


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """Haversine distance in meters, as geohashGetDistance computes it."""
    lon1r, lon2r = deg_rad(lon1), deg_rad(lon2)
    v = sin((lon2r - lon1r) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r, lat2r = deg_rad(lat1), deg_rad(lat2)
    u = sin((lat2r - lat1r) / 2)
    a = u * u + cos(lat1r) * cos(lat2r) * v * v
    return 2.0 * _EARTH_R * asin(sqrt(a))


def box_distance(clon: float, clat: float, half_width: float, half_height: float, lon: float, lat: float) -> float:
    """geohashGetDistanceIfInRectangle: the distance in meters from the centre (clon, clat) of a
    box half_width by half_height meters to a point, or -1.0 when the point is outside the box."""
    if lat_distance(clat, lat) > half_height:
        return -1.0
    if distance(lon, lat, clon, lat) > half_width:  # along the point's parallel
        return -1.0
    return distance(clon, clat, lon, lat)


def _circle_reach(clat: float, reach: float) -> tuple[float, float]:
    """How far, in degrees of latitude and of longitude (wrapped), a point can lie from a circle's
    centre at latitude `clat` and still be within `reach` meters: a point further off either way
    is outside, which members_within tells without the haversine; the haversine decides the rest,
    as in Redis.  The bounds hold for the haversine itself, with margins (a millionth, and 1e-9
    degrees) far above its rounding, so a point they leave out is one the haversine leaves out:
    - the distance is at least EARTH_RADIUS * |dlat| (a >= sin^2(dlat/2));
    - a point within the latitude band has cos(lat) >= cos(far), far the band's poleward edge, so
      a >= cos(clat) cos(far) sin^2(dlon/2), and inside needs a <= sin^2(theta / 2).
    360 means no bound: a radius of a radian or more, or a band reaching a pole."""
    theta = reach / _EARTH_R  # the radius as an angle at the earth's centre
    if theta >= 1.0:
        return 360.0, 360.0
    lat_reach = rad_deg(theta) * (1 + 1e-6) + 1e-9
    far = deg_rad(abs(clat) + lat_reach)
    if far >= _HALF_PI - 1e-3:
        return lat_reach, 360.0
    half = sin(theta / 2)
    k = half * half * (1 + 1e-6) / (cos(deg_rad(clat)) * cos(far))
    if k >= 1.0:
        return lat_reach, 360.0
    return lat_reach, rad_deg(2 * asin(sqrt(k))) * (1 + 1e-6) + 1e-9


def members_within(shape: Shape, scores: array[float], members: list[bytes], lo: int, hi: int,
                   found: list[tuple[float, float, float, float, bytes]], limit: int) -> bool:
    """geoWithinShape over the run scores[lo:hi] (beside members[lo:hi]) of a cell's score range,
    in order: appends (lon, lat, distance in meters, score, member) of each member inside `shape`
    to `found`; True once `limit` (when not 0) are found.  Compiled, the walk reads the scores as
    C doubles and decodes and measures on C doubles: only a member found makes Python objects."""
    if cython.compiled:
        d = scores.data.as_doubles
    else:
        d = scores
    clon = shape.lon
    clat = shape.lat
    is_box = shape.is_box
    reach = shape.radius * shape.conversion
    half_width = shape.width * shape.conversion / 2
    half_height = shape.height * shape.conversion / 2
    lat_reach, lon_reach = _circle_reach(clat, reach)
    for i in range(lo, hi):
        score = d[i]
        lon, lat = _centre(score)
        if is_box:
            dist = box_distance(clon, clat, half_width, half_height, lon, lat)
            if dist < 0:
                continue
        else:
            if abs(lat - clat) > lat_reach:
                continue
            dlon = abs(lon - clon)
            if dlon > 180.0:
                dlon = 360.0 - dlon
            if dlon > lon_reach:
                continue
            dist = distance(clon, clat, lon, lat)
            if not dist <= reach:
                continue
        found.append((lon, lat, dist, score, members[i]))
        if limit and len(found) >= limit:
            return True
    return False


def _steps_for(radius: float, lat: float) -> int:
    """geohashEstimateStepsByRadius."""
    if radius == 0:
        return 26
    step = 1
    while radius < MERCATOR_MAX:
        radius *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return min(max(step, 1), 26)


class Shape:
    """A search area: a circle (radius) or a box (width, height) around (lon, lat), in the unit
    `conversion` converts to meters."""

    __slots__ = ("lon", "lat", "radius", "width", "height", "conversion", "is_box")

    def __init__(self) -> None:
        self.lon = self.lat = 0.0
        self.radius = self.width = self.height = 0.0
        self.conversion = 1.0
        self.is_box = False

    def bounds(self) -> tuple[float, float, float, float]:
        """geohashBoundingBox: (min_lon, min_lat, max_lon, max_lat)."""
        height = self.conversion * (self.height / 2 if self.is_box else self.radius)
        width = self.conversion * (self.width / 2 if self.is_box else self.radius)
        lat_delta = rad_deg(height / EARTH_RADIUS)
        top = rad_deg(width / EARTH_RADIUS / math.cos(deg_rad(self.lat + lat_delta)))
        bottom = rad_deg(width / EARTH_RADIUS / math.cos(deg_rad(self.lat - lat_delta)))
        delta = bottom if self.lat < 0 else top
        return self.lon - delta, self.lat - lat_delta, self.lon + delta, self.lat + lat_delta

    def cells(self) -> list[tuple[int, int]]:
        """geohashCalculateAreasByShapeWGS84: the cells to walk, as (bits, step), centre first
        then north, south, east, west, north-east, north-west, south-east, south-west; a cell
        that cannot hold a match is (0, 0)."""
        min_lon, min_lat, max_lon, max_lat = self.bounds()
        if self.is_box:
            radius = math.sqrt((self.width / 2) * (self.width / 2) + (self.height / 2) * (self.height / 2))
        else:
            radius = self.radius
        radius *= self.conversion
        step = _steps_for(radius, self.lat)
        bits = encode(self.lon, self.lat, step)
        nb = _neighbours(bits, step)
        north, south, east, west = (cell(nb[k], step) for k in ("n", "s", "e", "w"))
        if north[3] < max_lat or south[2] > min_lat or east[1] < max_lon or west[0] > min_lon:
            if step > 1:
                step -= 1
                bits = encode(self.lon, self.lat, step)
                nb = _neighbours(bits, step)
        area = cell(bits, step)
        zero: set[str] = set()
        if step >= 2:
            if area[2] < min_lat:
                zero |= {"s", "sw", "se"}
            if area[3] > max_lat:
                zero |= {"n", "ne", "nw"}
            if area[0] < min_lon:
                zero |= {"w", "sw", "nw"}
            if area[1] > max_lon:
                zero |= {"e", "se", "ne"}
        out = [(bits, step)]
        for k in ("n", "s", "e", "w", "ne", "nw", "se", "sw"):
            out.append((0, 0) if k in zero else (nb[k], step))
        return out


def _neighbours(bits: int, step: int) -> dict[str, int]:
    def at(dx: int, dy: int) -> int:
        return _move_y(_move_x(bits, step, dx), step, dy) if dx else _move_y(bits, step, dy)

    return {"e": _move_x(bits, step, 1), "w": _move_x(bits, step, -1), "s": _move_y(bits, step, -1),
            "n": _move_y(bits, step, 1), "nw": at(-1, 1), "ne": at(1, 1), "se": at(1, -1), "sw": at(-1, -1)}


_ALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"


def geohash_string(lon: float, lat: float) -> bytes:
    """GEOHASH: the standard 11-character geohash (latitude over [-90, 90]); the 11th character
    is always '0', as the 52 bits fill only ten."""
    bits = encode(lon, lat, STEP_MAX, -90.0, 90.0)
    return bytes(_ALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F] for i in range(10)) + b"0"
