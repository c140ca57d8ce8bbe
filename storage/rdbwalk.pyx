# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The RDB file of a snapshot, written by walking the keyspace through borrowed references:
what a forked child (BGSAVE, a replica's full resync, an AOF rewrite's preamble) and a foreground
save run in the compiled build.

Why it exists.  A forked child shares every page of the parent's heap copy-on-write.  Python code
that reads an object writes to it (its reference count), so a child that walks the keyspace in
Python copies every page of the dataset, whatever the clients change meanwhile.  This walk reads
the keyspace's arrays and the values' C fields (their .pxd declarations) as `PyObject*`, never
takes a reference to a key or a value, and allocates nothing per key: its output, its LZF table and
its scratch space are C buffers of its own.  So the child's writes land on its own pages, and the
pages it shares with the parent are copied only when the parent changes them, as Redis's child.

Rule: C-level reads only, of every encoding but two: a stream's rax and groups are walked by
storage/rdb.py's own stream writer (a reference taken per rax node and PEL entry, none per
entry; its listpacks written from here), and an LFU counter is asked of the caller.  A value of
a kind it does not know goes to storage/rdb.py's writer whole.  It knows the types' fields, not their
logic: how a value is serialized stays storage/rdb.py's `write_value`, which this mirrors.

Invariant: the bytes are exactly those `rdb.write_file` writes for the same dataset and options
(LZF included: `lzf_compress` is storage/lzf.py's compressor on C pointers), which the tests check over
every type and encoding.  Compiled only: the interpreted build writes with storage/rdb.py.
"""

from cpython.ref cimport PyObject
from cpython.array cimport array
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from raxdb.storage.hashtype cimport Hash, HashTable
from raxdb.storage.keyspace cimport Database
from raxdb.storage.quicklist cimport Quicklist
from raxdb.storage.set_type cimport RSet
from raxdb.storage.zset cimport ZSet

from raxdb.storage import keyspace as _keyspace
from raxdb.storage.crc64 import crc64
from raxdb.storage import rdb as _rdb
from raxdb.storage import quicklist as _quicklist_mod
from raxdb.storage import set_type as _set_type
from raxdb.storage import stream as _stream_mod

cdef extern from "Python.h":
    ctypedef long Py_hash_t
    PyObject* list_item "PyList_GET_ITEM"(PyObject* l, Py_ssize_t i)
    Py_ssize_t list_size "PyList_GET_SIZE"(PyObject* l)
    char* bytes_data "PyBytes_AS_STRING"(PyObject* b)
    Py_ssize_t bytes_size "PyBytes_GET_SIZE"(PyObject* b)
    char* bytearray_data "PyByteArray_AS_STRING"(PyObject* b)
    Py_ssize_t bytearray_size "PyByteArray_GET_SIZE"(PyObject* b)
    void* type_of "Py_TYPE"(PyObject* o)
    Py_ssize_t set_size "PySet_GET_SIZE"(PyObject* s)
    int _PySet_NextEntry(PyObject* s, Py_ssize_t* pos, PyObject** key, Py_hash_t* h)
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    bytes PyBytes_FromStringAndSize(char* s, Py_ssize_t n)

# The types a value can be, compared by address (no reference taken).
cdef void* _BYTES = <void*>bytes
cdef void* _EMBSTR = <void*>_keyspace.EmbStr
cdef void* _BYTEARRAY = <void*>bytearray
cdef void* _RAWSTR = <void*>_keyspace.RawStr
cdef void* _INTSET = <void*>_set_type.Intset
cdef void* _SET = <void*>set
cdef void* _LIST = <void*>list
cdef void* _HASH = <void*>Hash
cdef void* _RSET = <void*>RSet
cdef void* _ZSET = <void*>ZSet
cdef void* _QUICKLIST = <void*>Quicklist
cdef void* _PACKED = <void*>_quicklist_mod.PackedNode
cdef void* _STREAM = <void*>_stream_mod.Stream
cdef PyObject* _NONE = <PyObject*>None

cdef int T_STRING = _rdb.T_STRING
cdef int T_SET = _rdb.T_SET
cdef int T_HASH = _rdb.T_HASH
cdef int T_ZSET_2 = _rdb.T_ZSET_2
cdef int T_STREAM_LISTPACKS_2 = _rdb.T_STREAM_LISTPACKS_2
cdef int T_SET_INTSET = _rdb.T_SET_INTSET
cdef int T_HASH_LISTPACK = _rdb.T_HASH_LISTPACK
cdef int T_ZSET_LISTPACK = _rdb.T_ZSET_LISTPACK
cdef int T_LIST_QUICKLIST_2 = _rdb.T_LIST_QUICKLIST_2
cdef int OP_IDLE = _rdb.OP_IDLE
cdef int OP_FREQ = _rdb.OP_FREQ
cdef int OP_RESIZEDB = _rdb.OP_RESIZEDB
cdef int OP_EXPIRETIME_MS = _rdb.OP_EXPIRETIME_MS
cdef int OP_SELECTDB = _rdb.OP_SELECTDB
cdef int OP_EOF = _rdb.OP_EOF
cdef int ENC_LZF = 0xC0 | _rdb._ENC_LZF
cdef int QL_PACKED = _rdb._QL_PACKED
cdef Py_ssize_t QL_MIN_COMPRESS_IMPROVE = _rdb._QL_MIN_COMPRESS_IMPROVE
cdef Py_ssize_t CHUNK = 1 << 16  # bytes handed to the sink at a time (rdb.Writer's chunk)
cdef Py_ssize_t PROGRESS_EVERY = 1024  # keys between progress calls (rdbSaveRio's 1024)


# ---- LZF: storage/lzf.py's compressor on C memory ---------------------------------------------------
# The table holds position + base and is never cleared: each call takes a base above every
# position stored before, so stale slots decode to positions <= 0 (storage/lzf.py's HashTable).  It is
# allocated on first use: by a forked child on its own pages, unless a foreground save made it in the
# parent first (then the child's first use copies its 512 KB once).
cdef int64_t* _htab = NULL
cdef int64_t _base = 1


cdef Py_ssize_t lzf_compress(const uint8_t* buf, Py_ssize_t n, uint8_t* out, Py_ssize_t out_limit) noexcept:
    """lzf_compress: the compressed length, or 0 where it returns 0 (empty input, no room)."""
    global _htab, _base
    if n == 0 or out_limit <= 0:
        return 0
    if _htab == NULL:
        _htab = <int64_t*>malloc(sizeof(int64_t) << 16)
        if _htab == NULL:
            return 0
        memset(_htab, 0, sizeof(int64_t) << 16)
    if _base > (<int64_t>1 << 36):
        memset(_htab, 0, sizeof(int64_t) << 16)
        _base = 1
    cdef int64_t base = _base
    _base = base + n + 1
    cdef Py_ssize_t o = 0, lit_start = 0, flush_at = 32, lit_stop = out_limit - 1, ip = 0, last = n - 2
    cdef Py_ssize_t limit, count, off, p, end
    cdef int64_t ref
    cdef long long h
    if n > 2:
        h = (buf[0] << 8) | buf[1]
        while ip < last:
            h = ((h << 8) | buf[ip + 2]) & 0xFFFFFF
            slot = ((h >> 8) - h * 5) & 0xFFFF
            ref = _htab[slot] - base
            _htab[slot] = ip + base
            if ref > 0 and ip - ref <= 8192:
                limit = n - ip - 2
                if limit > 16:
                    if limit > 264:
                        limit = 264
                    elif limit < 19:
                        limit = 19
                elif limit < 3:
                    limit = 3
                count = 0
                while count < limit and buf[ref + count] == buf[ip + count]:
                    count += 1
                if count >= 3:
                    if ip > lit_start:
                        if o + (ip - lit_start) + 5 >= out_limit:
                            return 0
                        out[o] = <uint8_t>(ip - lit_start - 1)
                        memcpy(out + o + 1, buf + lit_start, ip - lit_start)
                        o += 1 + ip - lit_start
                    elif o + 4 >= out_limit:
                        return 0
                    off = ip - ref - 1
                    if count < 9:
                        out[o] = <uint8_t>(((count - 2) << 5) | (off >> 8))
                        o += 1
                    else:
                        out[o] = <uint8_t>(0xE0 | (off >> 8))
                        out[o + 1] = <uint8_t>(count - 9)
                        o += 2
                    out[o] = <uint8_t>(off & 0xFF)
                    o += 1
                    ip += count
                    lit_start = ip
                    flush_at = ip + 32
                    lit_stop = out_limit - 1 - o + ip
                    if ip >= last:
                        break
                    p = ip - 2
                    h = (buf[p] << 16) | (buf[ip - 1] << 8) | buf[ip]
                    _htab[((h >> 8) - h * 5) & 0xFFFF] = p + base
                    h = ((h << 8) | buf[ip + 1]) & 0xFFFFFF
                    _htab[((h >> 8) - h * 5) & 0xFFFF] = p + 1 + base
                    continue
            if ip >= lit_stop:
                return 0
            ip += 1
            if ip == flush_at:
                out[o] = 31
                memcpy(out + o + 1, buf + lit_start, ip - lit_start)
                o += 1 + ip - lit_start
                lit_start = ip
                flush_at = ip + 32
                lit_stop = out_limit - 1 - o + ip
    if o + 1 + (ip - lit_start) + 3 > out_limit:
        return 0
    while lit_start < n:
        end = lit_start + 32
        if end > n:
            end = n
        out[o] = <uint8_t>(end - lit_start - 1)
        memcpy(out + o + 1, buf + lit_start, end - lit_start)
        o += 1 + end - lit_start
        lit_start = end
    return o


def lzf(data, Py_ssize_t out_limit):
    """`lzf_compress` on `data` as storage/lzf.py's compress answers (bytes or None): for the tests."""
    cdef bytes b = bytes(data)
    cdef Py_ssize_t n = len(b)
    if n == 0 or out_limit <= 0:
        return None
    cdef uint8_t* out = <uint8_t*>malloc(out_limit + 64)
    try:
        size = lzf_compress(<const uint8_t*><char*>b, n, out, out_limit)
        return None if size == 0 else (<char*>out)[:size]
    finally:
        free(out)


# ---- the output ------------------------------------------------------------------------------------
cdef inline bint _canonical_int32(const uint8_t* s, Py_ssize_t n, long long* out) noexcept:
    """storage/intset.py's canonical_int for 1..11 bytes, and the value within int32 (what
    rdbTryIntegerEncoding and rdbEncodeInteger accept)."""
    cdef Py_ssize_t i = 0
    cdef long long v
    cdef bint neg
    if n == 1 and s[0] == 48:
        out[0] = 0
        return True
    neg = s[0] == 45
    if neg:
        i = 1
    if i == n or s[i] < 49 or s[i] > 57:
        return False
    v = s[i] - 48
    i += 1
    while i < n:
        if s[i] < 48 or s[i] > 57:
            return False
        v = v * 10 + (s[i] - 48)  # at most 11 digits: no overflow
        i += 1
    if neg:
        v = -v
    if v < -(1 << 31) or v >= (1 << 31):
        return False
    out[0] = v
    return True


cdef class _Out:
    """The file being written: a buffer handed to `sink` a chunk at a time, with the running CRC
    of everything handed over (storage/rdb.py's Writer, in C).  The buffer is a bytes object of
    its own, written through its pointer, so that storage/crc64.py's crc64 checksums it where it
    is (its first `n` bytes, without a copy)."""

    cdef bytes chunk
    cdef uint8_t* buf
    cdef Py_ssize_t n, cap
    cdef uint8_t* scratch  # LZF's output
    cdef Py_ssize_t scratch_cap
    cdef object sink
    cdef uint64_t crc
    cdef bint compress

    def __cinit__(self, object sink, bint compress):
        self.chunk = PyBytes_FromStringAndSize(NULL, CHUNK)
        self.buf = <uint8_t*><char*>self.chunk
        self.cap = CHUNK
        self.n = 0
        self.scratch = NULL
        self.scratch_cap = 0
        self.sink = sink
        self.crc = 0
        self.compress = compress

    def __dealloc__(self):
        free(self.scratch)

    cdef int flush(self) except -1:
        if self.n:
            self.crc = crc64(self.chunk, self.crc, self.n)
            self.sink(PyMemoryView_FromMemory(<char*>self.buf, self.n, PyBUF_READ))
            self.n = 0
        return 0

    cdef int put(self, const uint8_t* p, Py_ssize_t k) except -1:
        cdef Py_ssize_t room
        while k > 0:
            room = self.cap - self.n
            if room == 0:
                self.flush()
                room = self.cap
            if room > k:
                room = k
            memcpy(self.buf + self.n, p, room)
            self.n += room
            p += room
            k -= room
        return 0

    cdef inline int byte(self, int b) except -1:
        if self.n == self.cap:
            self.flush()
        self.buf[self.n] = <uint8_t>b
        self.n += 1
        return 0

    cpdef int length(self, uint64_t v) except -1:
        """rdbSaveLen."""
        cdef uint8_t b[9]
        cdef int i
        if v < 64:
            return self.byte(<int>v)
        if v < 16384:
            b[0] = <uint8_t>(0x40 | (v >> 8))
            b[1] = <uint8_t>(v & 0xFF)
            return self.put(b, 2)
        if v <= 0xFFFFFFFF:
            b[0] = 0x80
            for i in range(4):
                b[1 + i] = <uint8_t>(v >> (24 - 8 * i))
            return self.put(b, 5)
        b[0] = 0x81
        for i in range(8):
            b[1 + i] = <uint8_t>(v >> (56 - 8 * i))
        return self.put(b, 9)

    cdef int int64le(self, long long v) except -1:
        cdef uint8_t b[8]
        cdef uint64_t u = <uint64_t>v
        cdef int i
        for i in range(8):
            b[i] = <uint8_t>(u >> (8 * i))
        return self.put(b, 8)

    cdef int chars(self, const uint8_t* s, Py_ssize_t n) except -1:
        """rdbSaveRawString: integer encoding, LZF or plain, as storage/rdb.py's Writer.string."""
        cdef long long v
        cdef uint8_t b[5]
        if 0 < n <= 11 and _canonical_int32(s, n, &v):
            if -128 <= v <= 127:
                b[0] = 0xC0
                b[1] = <uint8_t>(v & 0xFF)
                return self.put(b, 2)
            if -32768 <= v <= 32767:
                b[0] = 0xC1
                b[1] = <uint8_t>(v & 0xFF)
                b[2] = <uint8_t>((v >> 8) & 0xFF)
                return self.put(b, 3)
            b[0] = 0xC2
            for i in range(4):
                b[1 + i] = <uint8_t>((v >> (8 * i)) & 0xFF)
            return self.put(b, 5)
        if n > 20 and self.compress and self.lzf_blob(s, n, n - 4, n):
            return 0
        self.length(n)
        return self.put(s, n)

    cdef int double(self, double d) except -1:
        return self.put(<uint8_t*>&d, 8)  # little-endian IEEE 754, as struct "<d" (x86-64, aarch64)

    cdef int lzf_blob(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t limit, Py_ssize_t below) except -1:
        """`s` as an LZF blob if lzf_compress with room for `limit` bytes gives fewer than `below`
        (1: written), else 0."""
        cdef Py_ssize_t packed
        if self.scratch_cap < n + 64:
            free(self.scratch)
            self.scratch_cap = n + 64 if n + 64 > 65536 else 65536
            self.scratch = <uint8_t*>malloc(self.scratch_cap)
            if self.scratch == NULL:
                self.scratch_cap = 0
                raise MemoryError()
        packed = lzf_compress(s, n, self.scratch, limit)
        if packed == 0 or packed >= below:
            return 0
        self.byte(ENC_LZF)
        self.length(packed)
        self.length(n)
        self.put(self.scratch, packed)
        return 1

    # storage/rdb.py's Writer interface, for rdb's own writers of the values walked in Python
    # (_write_stream): what they write goes through this output, LZF and CRC in C.
    def string(self, s) -> None:
        if type(s) is not bytes and type(s) is not bytearray:
            s = bytes(s)
        self.obj_string(<PyObject*>s)

    def ms(self, long long t) -> None:
        self.int64le(t)

    def raw(self, bytes b) -> None:
        self.put(<uint8_t*><char*>b, len(b))

    cdef int obj_string(self, PyObject* o) except -1:
        """A string value or a key: bytes (or a subclass) or bytearray (or RawStr)."""
        cdef void* t = type_of(o)
        if t == _BYTEARRAY or t == _RAWSTR:
            return self.chars(<uint8_t*>bytearray_data(o), bytearray_size(o))
        return self.chars(<uint8_t*>bytes_data(o), bytes_size(o))


# ---- the values ------------------------------------------------------------------------------------
cdef int _hash_table(_Out out, PyObject* table) except -1:
    """A hashtable-encoded hash: its count, then each item's field and value (hashtype.py's items:
    the field's length in one byte below 128, else four big-endian with the top bit set)."""
    cdef PyObject* items = <PyObject*>(<HashTable>table).items
    cdef Py_ssize_t i, k, n = list_size(items), flen
    cdef PyObject* item
    cdef const uint8_t* s
    out.length((<HashTable>table).count)
    for i in range(n):
        item = list_item(items, i)
        if item == _NONE:
            continue
        s = <const uint8_t*>bytes_data(item)
        if s[0] < 0x80:
            flen = s[0]
            k = 1
        else:
            flen = ((s[0] & 0x7F) << 24) | (s[1] << 16) | (s[2] << 8) | s[3]
            k = 4
        out.chars(s + k, flen)
        out.chars(s + k + flen, bytes_size(item) - k - flen)
    return 0


cdef int _set_table(_Out out, PyObject* members) except -1:
    cdef Py_ssize_t pos = 0
    cdef PyObject* m
    cdef Py_hash_t h
    out.length(set_size(members))
    while _PySet_NextEntry(members, &pos, &m, &h):
        out.obj_string(m)
    return 0


cdef bint _quicklist_nodes(PyObject* nodes) noexcept:
    """Are a quicklist's nodes as this walk reads them: none, one, or a list of plain and
    compressed nodes?"""
    cdef Py_ssize_t i
    cdef void* t
    if nodes == _NONE or type_of(nodes) == _BYTEARRAY:
        return True
    if type_of(nodes) != _LIST:
        return False
    for i in range(list_size(nodes)):
        t = type_of(list_item(nodes, i))
        if t != _BYTEARRAY and t != _PACKED:
            return False
    return True


cdef int _quicklist(_Out out, PyObject* nodes) except -1:
    """rdb._write_list: every node as a packed listpack; a compressed node (list-compress-depth)
    as the LZF blob Redis's quicklist keeps for it, decompressed from its zlib here (the one
    Python call, for the nodes a configuration compresses)."""
    cdef Py_ssize_t i, n, size
    cdef PyObject* node
    cdef bytes lp
    if nodes == _NONE:
        return out.length(0)
    if type_of(nodes) == _BYTEARRAY:
        out.length(1)
        out.length(QL_PACKED)
        return out.obj_string(nodes)
    n = list_size(nodes)
    out.length(n)
    for i in range(n):
        node = list_item(nodes, i)
        out.length(QL_PACKED)
        if type_of(node) == _BYTEARRAY:
            out.obj_string(node)
            continue
        lp = (<object>node).listpack()
        size = len(lp)
        if not out.lzf_blob(<uint8_t*><char*>lp, size, size, size - QL_MIN_COMPRESS_IMPROVE):
            out.obj_string(<PyObject*>lp)
    return 0


cdef int _skiplist(_Out out, PyObject* sk) except -1:
    """A skiplist sorted set, highest score first (the loader inserts at the head): the pairs
    read from zset.py's _SkipOrder, its score arrays and member lists.  References are taken to
    its containers (one per ~128 members), never to a member."""
    order = (<object>sk).order
    cdef PyObject* keys = <PyObject*>order._keys
    cdef PyObject* members = <PyObject*>order._members
    cdef PyObject* ms
    cdef double* scores
    cdef Py_ssize_t k, j
    out.length(order._len)
    for k in range(list_size(keys) - 1, -1, -1):
        scores = (<array>list_item(keys, k)).data.as_doubles
        ms = list_item(members, k)
        for j in range(list_size(ms) - 1, -1, -1):
            out.obj_string(list_item(ms, j))
            out.double(scores[j])
    return 0


cdef int _kind(PyObject* v) noexcept:
    """The type byte of value `v`, or -1 when it must go to storage/rdb.py's writer."""
    cdef void* t = type_of(v)
    cdef PyObject* field
    if t == _BYTES or t == _EMBSTR or t == _BYTEARRAY or t == _RAWSTR:
        return T_STRING
    if t == _INTSET:
        return T_SET_INTSET
    if t == _HASH:
        return T_HASH_LISTPACK if <PyObject*>(<Hash>v).lp != _NONE else T_HASH
    if t == _RSET:
        field = <PyObject*>(<RSet>v).data
        if type_of(field) == _BYTES:
            return T_SET_INTSET
        if type_of(field) == _SET:
            return T_SET
        return -1
    if t == _ZSET:
        return T_ZSET_LISTPACK if <PyObject*>(<ZSet>v).lp != _NONE else T_ZSET_2
    if t == _QUICKLIST:
        return T_LIST_QUICKLIST_2 if _quicklist_nodes(<PyObject*>(<Quicklist>v)._n) else -1
    if t == _STREAM:
        return T_STREAM_LISTPACKS_2
    return -1


cdef int _key_value(_Out out, PyObject* k, PyObject* v) except -1:
    """The type byte, the key and the value's body (rdbSaveKeyValuePair's part after the opcodes)."""
    cdef int t = _kind(v)
    cdef void* tp
    cdef bytearray fallback
    if t < 0:  # storage/rdb.py writes it: Python objects, for this value only
        w = _rdb.Writer(out.compress)
        t = _rdb.write_value(w, <object>v)
        fallback = w.buf
        out.byte(t)
        out.obj_string(k)
        return out.put(<uint8_t*>bytearray_data(<PyObject*>fallback), len(fallback))
    out.byte(t)
    out.obj_string(k)
    tp = type_of(v)
    if t == T_STRING or tp == _INTSET:
        return out.obj_string(v)
    if tp == _HASH:
        if t == T_HASH_LISTPACK:
            return out.obj_string(<PyObject*>(<Hash>v).lp)
        return _hash_table(out, <PyObject*>(<Hash>v).d)
    if tp == _RSET:
        if t == T_SET_INTSET:
            return out.obj_string(<PyObject*>(<RSet>v).data)
        return _set_table(out, <PyObject*>(<RSet>v).data)
    if tp == _ZSET:
        if t == T_ZSET_LISTPACK:
            return out.obj_string(<PyObject*>(<ZSet>v).lp)
        return _skiplist(out, <PyObject*>(<ZSet>v).sk)
    if tp == _STREAM:
        # rdb's stream writer, on this output: the rax's nodes and the groups are walked in
        # Python (a reference per node and per PEL entry), the listpacks written from here.
        _rdb._write_stream(out, <object>v)
        return 0
    return _quicklist(out, <PyObject*>(<Quicklist>v)._n)


cdef int _database(_Out out, int dbid, Database db, long long now_ms, bint lru, object lfu, object delay,
                   object progress, Py_ssize_t* done) except -1:
    """One database's keys, from its arrays, in position order (Database.records' order)."""
    cdef PyObject* keys = <PyObject*>db._keys
    cdef PyObject* values = <PyObject*>db._values
    cdef unsigned int* meta = db._meta.data.as_uints
    cdef long long* when = db._ttl_when.data.as_longlongs
    cdef Py_ssize_t p, n = list_size(keys)
    cdef PyObject* k
    cdef unsigned int t, d, stamp = <unsigned int>((now_ms // 10) & 0xFFFFFFFF)
    for p in range(n):
        k = list_item(keys, p)
        if k == _NONE:
            continue
        t = meta[p * 3 + 2]
        if t:
            out.byte(OP_EXPIRETIME_MS)
            out.int64le(when[t - 1])
        if lru:  # Database.idle_ms, in whole seconds
            d = stamp - meta[p * 3 + 1]
            out.byte(OP_IDLE)
            out.length(0 if d >= 0x80000000 else (<uint64_t>d * 10) // 1000)
        if lfu is not None:
            f = lfu(dbid, <object>k)
            if f is not None:
                out.byte(OP_FREQ)
                out.byte(f)
        _key_value(out, k, list_item(values, p))
        done[0] += 1
        if progress is not None and not done[0] % PROGRESS_EVERY:
            progress(done[0])
        if delay is not None:
            delay()
    return 0


def write_file(sink, bint compress, bint checksum, prologue, list dbs, long long now_ms, bint lru=False,
               lfu=None, delay=None, progress=None):
    """rdb.write_file with the keys read from the databases: `prologue` is the header, aux fields
    and functions as rdb.write_prologue wrote them; `dbs` holds (id, Database) for every non-empty
    database; `lru`: write each key's idle time (as of `now_ms`); `lfu(dbid, key)`: its LFU counter
    or None; `delay()` runs after each key (rdb-key-save-delay); `progress(keys)` every 1024 keys.
    `sink` receives the file's bytes a chunk at a time (memoryviews valid during the call)."""
    cdef _Out out = _Out(sink, compress)
    cdef Py_ssize_t done = 0
    cdef Database db
    out.put(<uint8_t*><char*>prologue, len(prologue))
    for dbid, db in dbs:
        out.byte(OP_SELECTDB)
        out.length(dbid)
        out.byte(OP_RESIZEDB)
        out.length(db.count)
        out.length(db.nexpires)
        _database(out, dbid, db, now_ms, lru, lfu, delay, progress, &done)
    out.byte(OP_EOF)
    out.flush()
    out.int64le(<long long>out.crc if checksum else 0)  # the CRC, little endian (the bytes before it)
    out.flush()
    return done
