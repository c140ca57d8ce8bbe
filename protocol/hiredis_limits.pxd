# Declarations for compiling hiredis_limits.py with Cython (setup.py); the interpreter never reads this.
#
# The reader struct's accessors are C functions of an address held as a C integer, each a load or
# a store: the compiled build needs no ctypes (the interpreted one reads through it).
cimport cython

cdef Py_ssize_t _PTR_OFFSET, _POS_OFFSET, _LEN_OFFSET, _MAXBUF_OFFSET, _MAXELEMENTS_OFFSET

cdef inline Py_ssize_t _pointer_at(Py_ssize_t address) noexcept
cdef inline size_t _size_at(Py_ssize_t address) noexcept
cdef inline long long _longlong_at(Py_ssize_t address) noexcept
cdef inline void _set_longlong(Py_ssize_t address, long long value) noexcept
cdef Py_ssize_t _reader_struct(reader) except? -1

@cython.locals(ptr=Py_ssize_t)
cpdef Py_ssize_t unconsumed(reader) except? -1
