# Declarations for compiling t_keys.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
from raxdb.protocol cimport reply as R
from raxdb.server.events.keyaccess cimport lookup_read, lookup_write, modified, notify
from raxdb.server.table.args cimport maybe_int
