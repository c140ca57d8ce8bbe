# Declarations for compiling obuf.py with Cython (setup.py); the interpreter never reads this.
#
# check_delivery runs per Pub/Sub message and per subscriber (server/net/client.py's fan_out): its
# client is typed as the field base (server/base/fields.pxd), so the fields its common case reads
# (the soft-limit clock, the replica link, the byte counts, the reply buffer's size, what the
# transport held) are C fields, its arithmetic on C integers.  client.pxd cimports it: fan_out calls
# it as a C function.
cimport cython
from raxdb.server.base.fields cimport ClientFields


@cython.locals(held=cython.longlong)
cpdef bint check_delivery(ClientFields c) except -1
