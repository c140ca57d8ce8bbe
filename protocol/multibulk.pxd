# Declarations for compiling multibulk.py with Cython (setup.py); the interpreter never reads this.
#
# MultibulkWalk is an extension type whose `next` is cpdef: server/net/client.pxd cimports it and
# the fast loop calls it in C for every command.  The walk reads the buffer through a C pointer
# (its bytes are typed `bytes`), so a header's check is a few C comparisons per byte, and each
# argument is one PyBytes_FromStringAndSize from that pointer.  A small freelist: one walk is made
# per read event and dropped at its end.
cimport cython

cdef Py_ssize_t _MAX_ARGS, _BIG_ARG


@cython.freelist(8)
@cython.final
cdef class MultibulkWalk:
    cdef readonly bytes buf
    cdef readonly Py_ssize_t end
    cdef public Py_ssize_t pos

    @cython.locals(s="const unsigned char*", end=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t, left=Py_ssize_t,
                   count=Py_ssize_t, value=Py_ssize_t, stop=Py_ssize_t, i=Py_ssize_t, argv=list)
    cpdef list next(self)
