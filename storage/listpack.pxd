# Declarations for compiling listpack.py with Cython (setup.py); the interpreter never reads this.
#
# Only the functions over listpacks held as immutable bytes are declared: offsets and encoding
# bytes become C integers, and `s`, the local alias of the buffer, a C pointer to the bytes
# object's data, so that a field lookup walks a small hash's listpack at C speed (interpreted, the
# walk is a bytecode loop per entry).  `buf` is typed bytes (a bytearray is refused compiled):
# every caller holds its listpack as bytes.  They stay callable from Python as ordinary functions,
# and from another compiled module that cimports them as C functions (storage/hashtype.pxd).
cimport cython


@cython.locals(n=Py_ssize_t)
cdef bint _plain(bytes v) except -1

@cython.locals(b=cython.uchar, n=Py_ssize_t)
cdef Py_ssize_t _skip(const unsigned char *s, Py_ssize_t p) noexcept

@cython.locals(s='const unsigned char *')
cpdef Py_ssize_t entry_end(bytes buf, Py_ssize_t p) except -1

@cython.locals(s='const unsigned char *', n=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, last=Py_ssize_t,
               head=cython.uchar, tail=cython.uchar)
cpdef Py_ssize_t find_key(bytes buf, bytes key) except -2

@cython.locals(s='const unsigned char *', b=cython.uchar)
cpdef bytes value_at(bytes buf, Py_ssize_t p)

@cython.locals(s='const unsigned char *', p=Py_ssize_t)
cpdef object pair_value(bytes buf, bytes key)

@cython.locals(s='const unsigned char *', p=Py_ssize_t, q=Py_ssize_t, end=Py_ssize_t, b=cython.uchar)
cpdef list elements(bytes buf)

@cython.locals(s='const unsigned char *', q=Py_ssize_t, n=Py_ssize_t, t=Py_ssize_t)
cpdef bytes replace_value(bytes buf, Py_ssize_t p, bytes value)

@cython.locals(s='const unsigned char *', count=Py_ssize_t, end=Py_ssize_t, n=Py_ssize_t, m=Py_ssize_t,
               t=Py_ssize_t)
cpdef bytes append_pair(bytes buf, bytes key, bytes value)

@cython.locals(s='const unsigned char *', prev=Py_ssize_t, count=Py_ssize_t, n=Py_ssize_t)
cpdef bytes replace_values(bytes buf, dict changes, list appended)

@cython.locals(n=Py_ssize_t)
cdef int _add_entry(list pieces, bytes v) except -1

@cython.locals(s='const unsigned char *', n=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t)
cpdef Py_ssize_t count_elements(bytes buf) except -1

@cython.locals(count=Py_ssize_t, n=Py_ssize_t)
cpdef bytes splice(bytes buf, Py_ssize_t p, Py_ssize_t q, bytes chunk, Py_ssize_t delta)
