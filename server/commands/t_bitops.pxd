# Declarations for compiling t_bitops.py with Cython (setup.py); the interpreter never reads this.
#
# BITFIELD's path is C calls: the argument parsers (server/table/args.pxd), the key lookups and
# signals (server/events/keyaccess.pxd), the operations on C integers (storage/bits.pxd) and the
# reply encoders (protocol/reply.pxd), from cpdef helpers with C-integer locals; interpreted, each
# step of a BITFIELD was a Python call (~15 a command).  The parse puts each operation into
# bits.field_ops's words as C integers (bits.put_field), and bits.field_reply writes the reply.
# The subcommand words are matched as C chars (_keyword), a plain offset read as C digits
# (numparse.canonical_digits_value), and a new string made in C (bits.zeroed) and added to the
# database through its C method; string_for_bits returns the string alone (whether it grew is
# `_grows`, a C function asked first), not a tuple to build and unpack.
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.base.numparse cimport canonical_digits_value
from raxdb.server.events.keyaccess cimport lookup_read, lookup_write, modified, notify, written
from raxdb.server.table.args cimport maybe_int, option_word, to_int
from raxdb.storage.bits cimport apply_fields, field_ops, field_reply, put_field, zeroed
from raxdb.storage.keyspace cimport Database

cdef int _OVERFLOW, _GET


cpdef long long bit_offset(ClientFields c, arg, int field_bits=*) except? -1

@cython.locals(n=cython.longlong)
cpdef long long _offset(arg, int field_bits, long long limit) except? -1

cdef bint _grows(v, long long need) except -1

@cython.locals(srv=ServerFields, db=Database)
cpdef string_for_bits(ClientFields c, key, v, long long need)

@cython.locals(n=Py_ssize_t, code=Py_ssize_t, k=Py_ssize_t, b=bytes, w=bytes, s="const unsigned char *",
               p="const unsigned char *")
cpdef int _keyword(tuple words, arg) except? -2

@cython.locals(n=Py_ssize_t, b=bytes, w=cython.int, d=cython.int)
cpdef int _field_width(arg) except? 0

@cython.locals(j=Py_ssize_t, n=Py_ssize_t, width=cython.int, bits=cython.int, offset=cython.longlong,
               value=cython.longlong, highest=cython.longlong, mode=cython.int, op=cython.int, changes=Py_ssize_t,
               writes=bint, grown=bint, count=Py_ssize_t, limit=cython.longlong, ops=bytearray,
               srv=ServerFields, args=list, need=cython.longlong)
cpdef bytes _bitfield(ClientFields c, argv, bint readonly_cmd)

# The handlers in the reference signature (registry.pxd's `_entry_shape`): run_handler calls their
# C function, not a Python-level call of their wrapper.  Registered with command() after their
# definitions (a cpdef function takes no decorator).
cpdef bitfield(ClientFields c, argv)
cpdef bitfield_ro(ClientFields c, argv)

# The other bit commands' handlers, in the same signature.
@cython.locals(need=cython.longlong, offset=cython.longlong)
cpdef setbit(ClientFields c, argv)
cpdef getbit(ClientFields c, argv)
cpdef bitcount(ClientFields c, argv)
cpdef bitpos(ClientFields c, argv)
cpdef bitop(ClientFields c, argv)
