# Declarations for compiling geohash.py with Cython (setup.py); the interpreter never reads this.
#
# Compiled, a search's per-member work (decode a score to its cell's centre, the haversine
# distance) runs on C integers and doubles: a GEOSEARCH decodes every member of the cells it walks,
# as Redis does, and interpreted that cost ~2 us a member.  The arithmetic is the same IEEE double
# arithmetic in the same order, so the results are bit for bit the interpreter's.
cimport cython
from cpython cimport array
from libc.math cimport asin, cos, sin, sqrt

# Constants of the per-member functions, C doubles (geohash.py gives them their values).
cdef double _D_R, _CELLS, _LAT_LO, _LAT_HI, _LONG_LO, _LONG_HI, _EARTH_R, _HALF_PI
cdef unsigned long long _EVEN, _M32, _M16, _M8, _M4, _M2


cpdef unsigned long long _spread(unsigned long long v)

cpdef unsigned long long _squeeze(unsigned long long v)

@cython.locals(lat_offset=cython.double, long_offset=cython.double)
cpdef unsigned long long encode(double lon, double lat, int step, double lat_min=*, double lat_max=*)

# GEOADD's score of a point and its range test (server/commands/t_geo.pxd cimports them).
cpdef unsigned long long score_of(double lon, double lat)

cpdef bint in_range(double lon, double lat) noexcept

@cython.locals(ilat=cython.ulonglong, ilon=cython.ulonglong, lat_scale=cython.double, long_scale=cython.double,
               n=cython.double)
cpdef tuple cell(unsigned long long bits, int step)

cpdef tuple decode(double score)

@cython.locals(bits=cython.ulonglong, ilat=cython.ulonglong, ilon=cython.ulonglong, n=cython.double, lon=cython.double,
               lat=cython.double, long_min=cython.double, long_max=cython.double, lat_min=cython.double,
               lat_max=cython.double)
cdef (double, double) _centre(double score) noexcept

cpdef double deg_rad(double a)

cpdef double rad_deg(double a)

cpdef double lat_distance(double lat1, double lat2)

@cython.locals(lon1r=cython.double, lon2r=cython.double, lat1r=cython.double, lat2r=cython.double, v=cython.double,
               u=cython.double, a=cython.double)
cpdef double distance(double lon1, double lat1, double lon2, double lat2)

cpdef double box_distance(double clon, double clat, double half_width, double half_height, double lon, double lat)

@cython.locals(theta=cython.double, lat_reach=cython.double, far=cython.double, half=cython.double, k=cython.double)
cdef (double, double) _circle_reach(double clat, double reach) noexcept

@cython.locals(d="double*", i=Py_ssize_t, score=cython.double, clon=cython.double, clat=cython.double, is_box=bint,
               reach=cython.double, half_width=cython.double, half_height=cython.double, lon=cython.double,
               lat=cython.double, dist=cython.double, lat_reach=cython.double, lon_reach=cython.double,
               dlon=cython.double)
cpdef bint members_within(object shape, array.array scores, list members, Py_ssize_t lo, Py_ssize_t hi, list found,
                          Py_ssize_t limit) except -1
