# Declarations for compiling obuf.py with Cython (setup.py); the interpreter never reads this.
#
# check_delivery runs per Pub/Sub message and per subscriber (server/net/client.py's fan_out): its
# client is typed as the field base (server/base/fields.pxd), so the fields its common case reads
# (the soft-limit clock, the replica link, the byte counts, the reply buffer's size) are C fields.
from raxdb.server.base.fields cimport ClientFields


cpdef bint check_delivery(ClientFields c) except -1
