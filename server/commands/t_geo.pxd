# Declarations for compiling t_geo.py with Cython (setup.py); the interpreter never reads this.
#
# GEOADD is C calls into ZADD's add core and score parser (t_zset.pxd's zadd_scored, parse_score)
# and the geohash encoder and range test (storage/geohash.pxd's score_of, in_range), over C-typed
# indices and coordinates.  It is registered with
# command() after its definition because a cpdef function takes no decorator.
cimport cython
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.base.fields cimport ServerFields
from raxdb.server.commands.t_zset cimport parse_score, zadd_scored
from raxdb.storage.geohash cimport in_range, score_of


@cython.locals(lon=cython.double, lat=cython.double)
cpdef tuple _lonlat(argv, Py_ssize_t i)

@cython.locals(i=Py_ssize_t, j=Py_ssize_t, nx=bint, xx=bint, ch=bint, lon=cython.double, lat=cython.double,
               opt=bytes, srv=ServerFields)
cpdef geoadd(ClientFields c, argv)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef geopos(ClientFields c, argv)
cpdef geosearch(ClientFields c, argv)
cpdef geodist(ClientFields c, argv)
cpdef geohash(ClientFields c, argv)
