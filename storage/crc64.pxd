# Declarations for compiling crc64.py with Cython (setup.py); the interpreter never reads this.
#
# Compiled, crc64() is slicing by 8: the CRC and the bytes are C integers and the tables are read
# through their array's data pointer, so each 8 bytes are eight loads and xors.
cimport cython
from cpython cimport array


@cython.locals(table=cython.ulonglong[:], b=cython.uchar)
cpdef unsigned long long _crc_bytewise(bytes buf, unsigned long long crc)

# Slicing by 8 reads its tables through the array's data pointer: its indexes (a byte plus a
# multiple of 256) stay within the 2048 entries, so no bounds are checked.
cdef array.array _SLICE8_TABLE

@cython.locals(t="unsigned long long*", s="const unsigned char*", p=cython.Py_ssize_t, w=cython.ulonglong,
               table=cython.ulonglong[:])
cpdef unsigned long long _crc_slice8(bytes buf, unsigned long long crc, Py_ssize_t n)
