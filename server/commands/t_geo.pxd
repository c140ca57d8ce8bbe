# Declarations for compiling t_geo.py with Cython (setup.py); the interpreter never reads this.
#
# GEOADD is C calls into ZADD's add core (t_zset.pxd's zadd_scored) and the geohash encoder
# (storage/geohash.pxd's score_of), over C-typed indices and coordinates.  It is registered with
# command() after its definition because a cpdef function takes no decorator.
cimport cython
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.commands.t_zset cimport zadd_scored
from raxdb.storage.geohash cimport score_of


cpdef tuple _lonlat(argv, Py_ssize_t i)

@cython.locals(i=Py_ssize_t, j=Py_ssize_t, nx=bint, xx=bint, ch=bint, lon=cython.double, lat=cython.double)
cpdef geoadd(ClientFields c, argv)
