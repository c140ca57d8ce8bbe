# Declarations for compiling rdb.py with Cython (setup.py); the interpreter never reads this.
#
# A file's every length, string and key goes through Reader and Writer: as extension types with
# typed fields and C-callable methods, and with the loops that drive them (read_file,
# write_file, read_value, write_value) knowing their types, each is a C call over a byte
# buffer instead of a method lookup and Python int arithmetic.  The fields stay public: the
# function library's dump and the loaders' windows read them.
cimport cython
from raxdb.storage.keyspace cimport Database
from raxdb.storage.lzf cimport decompress_at as lzf_decompress_at
from raxdb.storage.listpack cimport canonical_pairs
from raxdb.protocol.reply cimport decimal


cdef class Writer:
    cdef public bytearray buf
    cdef public object compress, sink, chunk, crc

    cpdef flush(self)
    cpdef maybe_flush(self)
    cpdef length(self, n)
    cpdef string(self, s)


cdef class Reader:
    cdef public bytes data
    cdef public Py_ssize_t pos

    cpdef bytes take(self, n)  # n untyped: a corrupt file's length may not fit a C integer
    @cython.locals(p=cython.Py_ssize_t)
    cpdef int byte(self) except -1
    @cython.locals(p=cython.Py_ssize_t, data=bytes, b=cython.int)
    cpdef length(self)
    @cython.locals(p=cython.Py_ssize_t, data=bytes, b=cython.int, end=cython.Py_ssize_t, width=cython.int,
                   x=cython.longlong, s="const unsigned char*")
    cpdef bytes string(self)
    @cython.locals(p=cython.Py_ssize_t, n=cython.Py_ssize_t)
    cdef bytes _lzf(self)


@cython.locals(w=Writer)
cpdef int write_value(w, value) except -1


cdef int _K_STRING, _K_LIST, _K_SET, _K_ZSET, _K_HASH, _K_STREAM, _K_MODULE, _FIRST_OPCODE
cdef bytes _KINDS
cdef object _HUGE

@cython.locals(r=Reader, kind=cython.int)
cpdef read_value(r, int t, limits)

# The readers of each type, C calls from read_value.
@cython.locals(r=Reader)
cdef _read_list(r, int t, limits)
@cython.locals(r=Reader)
cdef _read_set(r, int t, limits)
@cython.locals(r=Reader, items=list, members=list, pairs=list)
cdef _read_zset(r, int t, limits)
@cython.locals(r=Reader, count=cython.Py_ssize_t)
cdef _read_hash(r, int t, limits)
@cython.locals(r=Reader)
cdef _read_stream(r, int t)
cdef list _listpack_items(blob, str what)
cdef _score(text)


cdef class KeyRecord:
    cdef public object db, key, value, expire_ms, idle_s, freq


# A load's reading (read_file): the record loop is _Records._run, a C method over a typed Reader,
# and a key KeySink takes goes into its Database through keyspace's C methods (add_new).
cdef class KeySink:
    cdef public list dbs
    cdef public long long now_ms
    cdef public Py_ssize_t added, expiring


cdef class _Records:
    cdef public Reader r
    cdef public Py_ssize_t base
    cdef public object crc, arriving, limits, db, expire, idle, freq, key
    cdef public KeySink sink
    cdef public Database target
    cdef public int t, version
    cdef public bytes stored
    cdef public long long tick, next_tick, tick_at
    cdef public Py_ssize_t start, refill_at

    cpdef bint can_wait(self) except -1
    cpdef Py_ssize_t want(self, Py_ssize_t start) except -1
    cpdef refill(self, Py_ssize_t start)
    cdef _select(self, db)
    cpdef next(self)
    @cython.locals(r=Reader, t=cython.int, at=cython.longlong, target=Database, sink=KeySink)
    cdef _run(self)
