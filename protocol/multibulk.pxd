# Declarations for compiling multibulk.py with Cython (setup.py); the interpreter never reads this.
#
# MultibulkWalk is an extension type whose `next` and `rest` are cpdef: server/net/client.pxd
# cimports it and the fast loop calls them in C for every command.  The header line's reader
# (`_line`) is a C method of the final type, so a C call the compiler may inline; it reads the
# buffer through a C pointer (its bytes are typed `bytes`), so a header's check is a few C
# comparisons per byte, and each argument is one PyBytes_FromStringAndSize from that pointer.
# A small freelist: one walk is made per read event and dropped at its end.
cimport cython
from cpython.list cimport PyList_New
from cpython.object cimport PyObject

cdef Py_ssize_t _MAX_ARGS, _BIG_ARG, _REFUSED, _SHORT


# `next`'s argv: a list of `count` NULL slots (PyList_New), each then given its argument's new
# bytes, whose reference the slot takes (PyList_SET_ITEM): no placeholder put in each slot and
# taken out again, no bounds-checked set, no reference taken and dropped for each argument.
# Nothing runs between the list's making and its last slot's filling but these allocations (bytes
# are not tracked by the cyclic collector, so no collection can see the NULL slots); on a failed
# allocation the list is freed with its NULL slots (list_dealloc skips them).
cdef extern from "Python.h":
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* v, Py_ssize_t n)
    void _set_slot "PyList_SET_ITEM"(object lst, Py_ssize_t i, PyObject* v)


cdef inline list _argv(Py_ssize_t count):
    return PyList_New(count)


cdef inline int _fill(list argv, Py_ssize_t i, const unsigned char* s, Py_ssize_t q, Py_ssize_t length) except -1:
    cdef PyObject* b = _new_bytes(<const char*>s + q, length)
    if b == NULL:
        return -1
    _set_slot(argv, i, b)
    return 0


@cython.freelist(8)
@cython.final
cdef class MultibulkWalk:
    cdef readonly bytes buf
    cdef readonly Py_ssize_t end
    cdef public Py_ssize_t pos
    cdef public Py_ssize_t at
    cdef public Py_ssize_t hpos
    cdef public Py_ssize_t hdone
    cdef public bint short
    cdef public Py_ssize_t mark
    cdef public Py_ssize_t left
    cdef public Py_ssize_t blen

    @cython.locals(q=Py_ssize_t, value=Py_ssize_t)
    cdef inline Py_ssize_t _line(self, const unsigned char* s, Py_ssize_t end, Py_ssize_t p, Py_ssize_t lead) noexcept

    @cython.locals(length=Py_ssize_t)
    cdef inline Py_ssize_t _bulks(self, const unsigned char* s, Py_ssize_t end, Py_ssize_t p, Py_ssize_t left) noexcept

    cpdef Py_ssize_t header(self, Py_ssize_t lead) except? -3

    @cython.locals(s="const unsigned char*", end=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t, first=Py_ssize_t,
                   count=Py_ssize_t, length=Py_ssize_t, stop=Py_ssize_t, i=Py_ssize_t, argv=list)
    cpdef list next(self)

    @cython.locals(s="const unsigned char*", end=Py_ssize_t, p=Py_ssize_t, left=Py_ssize_t, value=Py_ssize_t,
                   biggest=Py_ssize_t)
    cpdef Py_ssize_t rest(self) except -2


# A command's first bytes held between reads (client.py's tail): `take` per read, `argv` once.
@cython.final
cdef class HeldCommand:
    cdef public bytearray buf
    cdef public Py_ssize_t mark
    cdef public Py_ssize_t left
    cdef public Py_ssize_t blen

    @cython.locals(held=Py_ssize_t, n=Py_ssize_t, left=Py_ssize_t, blen=Py_ssize_t, part=Py_ssize_t,
                   value=Py_ssize_t, p=Py_ssize_t, line=MultibulkWalk, walk=MultibulkWalk)
    cpdef Py_ssize_t take(self, bytes data) except? -3

    @cython.locals(argv=list)
    cpdef list argv(self, bytes data, Py_ssize_t end)


cpdef Py_ssize_t frames_biggest(bytes buf) except -2
