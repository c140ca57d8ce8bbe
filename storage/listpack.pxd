# Declarations for compiling listpack.py with Cython (setup.py); the interpreter never reads this.
#
# Only the typed operations on a bare buffer (the section at the end of listpack.py) are declared:
# in them `s` is a pointer into the listpack, so a byte read is a C load rather than an indexing
# call that boxes an int, and the helpers they share are C functions.  The cpdef functions stay
# callable from Python; storage/quicklist.pxd cimports them, so a quicklist's push, pop, seek and
# range are C calls.  The rest of the module compiles as before, untyped.
cimport cython

cdef bint _COMPILED
cdef list _DECIMALS

@cython.locals(b=cython.uint, n=Py_ssize_t)
cdef Py_ssize_t _span(const unsigned char* s, Py_ssize_t p) except -1

@cython.locals(b=cython.uint, size=Py_ssize_t, shift=cython.uint)
cdef Py_ssize_t _prev(const unsigned char* s, Py_ssize_t q) noexcept

@cython.locals(b=cython.uint)
cdef bytes _value(const unsigned char* s, object buf, Py_ssize_t p)

@cython.locals(n=Py_ssize_t)
cdef int _put_header(bytearray buf, Py_ssize_t count) except -1

cdef Py_ssize_t _digits(unsigned long long u) noexcept

@cython.locals(s="const unsigned char*", n=Py_ssize_t, p=Py_ssize_t)
cpdef Py_ssize_t count_of(buf) except -1

@cython.locals(s="const unsigned char*", n=Py_ssize_t, p=Py_ssize_t, _i=Py_ssize_t)
cpdef Py_ssize_t offset_at(buf, Py_ssize_t index) except -1

@cython.locals(s="const unsigned char*", _i=Py_ssize_t)
cpdef Py_ssize_t skip(buf, Py_ssize_t p, Py_ssize_t n) except -1

@cython.locals(s="const unsigned char*")
cpdef bytes value_at(buf, Py_ssize_t p)

@cython.locals(s="const unsigned char*", _i=Py_ssize_t, out=list)
cpdef list values(buf, Py_ssize_t p, Py_ssize_t n)

@cython.locals(s="const unsigned char*", n=Py_ssize_t, count=Py_ssize_t, end=Py_ssize_t)
cpdef push_value(bytearray buf, v, bint head)

@cython.locals(s="const unsigned char*", count=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t)
cpdef bytes pop_value(bytearray buf, bint head)

@cython.locals(s="const unsigned char*", d="unsigned char*", t="const unsigned char*", total=Py_ssize_t,
               q=Py_ssize_t, b=cython.uint, ln=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t, u=cython.ulonglong,
               x=cython.uint, start=Py_ssize_t, i=Py_ssize_t, _e=Py_ssize_t, r=Py_ssize_t, out=bytearray,
               rare=list, v=bytes)
cpdef bytes bulks(buf, Py_ssize_t p, Py_ssize_t n)

@cython.locals(s="const unsigned char*", p=Py_ssize_t, i=Py_ssize_t, start=Py_ssize_t, count=Py_ssize_t,
               idx=Py_ssize_t, kept=list)
cpdef delete_indexes(bytearray buf, list indexes)

@cython.locals(s="const unsigned char*", n=Py_ssize_t, end=Py_ssize_t, p=Py_ssize_t, count=Py_ssize_t,
               b=cython.uint, size=Py_ssize_t, width=Py_ssize_t, q=Py_ssize_t, j=Py_ssize_t,
               want=cython.uint, header=Py_ssize_t)
cpdef Py_ssize_t checked_count(buf) except -1

@cython.locals(size=Py_ssize_t, buf=bytearray)
cpdef bytearray from_encoded(bytes chunk, Py_ssize_t n)
