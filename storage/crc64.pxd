# Declarations for compiling crc64.py with Cython (setup.py); the interpreter never reads this.
#
# Compiled, crc64() is the byte-at-a-time table loop: the CRC and the byte are C integers and the
# table is read through a typed view of its array, so each byte is a load, a shift and two xors.
cimport cython


@cython.locals(table=cython.ulonglong[:], b=cython.uchar)
cpdef unsigned long long _crc_bytewise(bytes buf, unsigned long long crc)
