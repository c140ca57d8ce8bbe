# Declarations for compiling stream.py with Cython (setup.py); the interpreter never reads this.
#
# Stream and Tail become extension types: their slots are C struct fields, so XADD's dozens of
# attribute reads and writes per entry are a pointer offset each instead of a type lookup and a
# descriptor call (what a compiled module pays for an attribute of a plain Python object; the
# interpreter's own specialised LOAD_ATTR is cheap, so this matters only once compiled).  Every
# field stays a Python object and public, so other modules, the RDB code and the tests read and
# write them as before.  `add`, `trim` and `_appended` are callable from C by a caller that knows
# it holds a Stream (XADD, see server/commands/t_stream.pxd), from Python as ordinary methods;
# add's tail is typed, so its reads of the Tail's fields are C-level too.
cimport cython
from raxdb.protocol.reply cimport put_bulk as _put_bulk, put_head as _put_head, put_id_bulk as _put_id_bulk
from raxdb.protocol.reply cimport put_int_bulk as _put_int_bulk
from raxdb.storage.listpack cimport entry_span as lp_span, skip as lp_skip, values as lp_values
from raxdb.storage.listpack cimport put_header, encode_int_entry as _int_entry
from raxdb.storage.listpack cimport int_entry_size, put_int, encoded_size, put_entry, grown
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from raxdb.storage.alloc cimport size_class
from raxdb.storage.rax cimport Rax, untrack as _untrack

# XADD's entry (stream.py's _append_entry) and a new node (_new_node): written into the node by
# listpack's in-place writers, with C-sized counters and offsets, called from add by C calls.
@cython.locals(nf=Py_ssize_t, a=cython.longlong, b=cython.longlong, start=Py_ssize_t, step=Py_ssize_t,
               last=Py_ssize_t, size=Py_ssize_t, k=Py_ssize_t, d="unsigned char*")
cdef Py_ssize_t _append_entry(bytearray lp, argv, Py_ssize_t pos, long long msd, long long seqd,
                              bint same) except -1

@cython.locals(size=Py_ssize_t, end=Py_ssize_t)
cdef Py_ssize_t _run_size(argv, Py_ssize_t i, Py_ssize_t step) except -1

@cython.locals(end=Py_ssize_t)
cdef Py_ssize_t _put_run(unsigned char* d, Py_ssize_t k, argv, Py_ssize_t i, Py_ssize_t step) except -1

@cython.locals(nf=Py_ssize_t, size=Py_ssize_t, k=Py_ssize_t, n=Py_ssize_t, d="unsigned char*", lp=bytearray)
cdef bytearray _new_node(argv, Py_ssize_t pos)

cdef _as_int64(v)

@cython.locals(size=Py_ssize_t, i=Py_ssize_t, v=bytes)
cdef Py_ssize_t _args_size(argv, Py_ssize_t pos) except -1

# XADD's tests of an entry against the tail node (add()): C loops over argv, no slices made.
@cython.locals(n=Py_ssize_t, j=Py_ssize_t, a=bytes, b=bytes)
cdef bint _same_fields(argv, Py_ssize_t pos, list fields) except -1

cdef _set_int(bytearray buf, Py_ssize_t p, v)


# _resp_entries walks a node through a pointer `s` (a bytearray's buffer); the ID parts are C
# unsigned 64-bit numbers, whose wrap-around is the `& U64` of the interpreted code.
@cython.locals(b=cython.uint, x=cython.longlong)
cdef long long _int_at(const unsigned char* s, Py_ssize_t p) except? -1

cdef Py_ssize_t _int_size(unsigned int b) noexcept

# _entry_head: both walks' reading of an entry's header (deleted entries skipped), inline in each;
# its results go to `h`, the walk's C array (a list interpreted).
@cython.locals(flags=cython.longlong, msd=cython.longlong, seqd=cython.longlong, nf=Py_ssize_t)
cdef inline Py_ssize_t _entry_head(bytearray lp, const unsigned char* s, Py_ssize_t p, Py_ssize_t end,
                                   unsigned long long mms, unsigned long long mseq, Py_ssize_t nmf,
                                   unsigned long long* h) except -1

@cython.locals(s="const unsigned char*", end=Py_ssize_t, mms=cython.ulonglong, mseq=cython.ulonglong,
               nmf=Py_ssize_t, flags=cython.ulonglong, h="unsigned long long[4]",
               nf=Py_ssize_t, ms=cython.ulonglong, seq=cython.ulonglong, vals=list, flat=list)
cpdef _resp_entries(master_id, bytearray lp, Py_ssize_t p, list mfields, list ids, list items)

cdef bint _COMPILED

# A loaded stream's node check (Stream.checked_as_loaded): one walk through a pointer, the ID parts
# C unsigned 64-bit numbers as in _resp_entries.
cdef bint _is_int_entry(unsigned int b) noexcept

@cython.locals(s="const unsigned char*", end=Py_ssize_t, p=Py_ssize_t, count=cython.longlong,
               deleted=cython.longlong, nmf=cython.longlong, _i=cython.longlong, mms=cython.ulonglong,
               mseq=cython.ulonglong, has_prev=bint, pms=cython.ulonglong, pseq=cython.ulonglong, first=bint,
               live=cython.longlong, dead=cython.longlong, fms=cython.ulonglong, fseq=cython.ulonglong,
               has_live=bint, flags=cython.uint, msd=cython.longlong, seqd=cython.longlong, ms=cython.ulonglong,
               seq=cython.ulonglong, n=cython.longlong, want=cython.longlong, nf=cython.longlong)
cdef _loaded_node(bytes key, bytearray lp, object after)

cdef object _stream_id(object ms, object seq)

# _resp_write writes a node's replies into one bytearray through a C pointer `d`: the helpers
# (protocol/reply.pxd's RESP writers, and _put_elem) write at an offset and return the offset
# after what they wrote.
@cython.locals(b=cython.uint, ln=Py_ssize_t, st=Py_ssize_t)
cdef Py_ssize_t _put_elem(unsigned char* d, Py_ssize_t k, const unsigned char* s, Py_ssize_t p) except -1

@cython.locals(s="const unsigned char*", d="unsigned char*", end=Py_ssize_t, mms=cython.ulonglong,
               mseq=cython.ulonglong, lo_ms=cython.ulonglong, lo_seq=cython.ulonglong, hi_ms=cython.ulonglong,
               hi_seq=cython.ulonglong, nmf=Py_ssize_t, nfb=Py_ssize_t, rem=Py_ssize_t, k=Py_ssize_t,
               flags=cython.ulonglong, h="unsigned long long[4]", nf=Py_ssize_t, n=Py_ssize_t, past=cython.int,
               i=Py_ssize_t, _i=Py_ssize_t, ms=cython.ulonglong, seq=cython.ulonglong,
               fld=bytes, f="const unsigned char*")
cpdef bytearray _resp_write(master_id, bytearray lp, Py_ssize_t p, list mfields, list ids, list offs,
                            Py_ssize_t base, lo, hi, Py_ssize_t count, list res, bytearray out)


# The Tail's counters and its master ID's parts are C integers, and add() takes the
# new ID's parts, the argument position and the node limits as C integers: XADD's tests of the
# node's room, its count updates and the ID deltas are C arithmetic (the deltas wrap as uint64, as
# streamAppendItem's do, and are passed on as the int64s the node stores).
cdef class Tail:
    cdef public object key, lp, fields
    cdef public unsigned long long mms, mseq
    cdef public Py_ssize_t count, deleted, nelem


cdef class Stream:
    cdef public Rax rax  # typed: XADD's insertion into the index is a C call
    cdef public object length, last_id, first_id, max_deleted_id, entries_added, cgroups
    cdef public Tail _tail
    cdef public object _head, _last_valid, _prealloc, _sampled
    # the ID of the last append and its parts, for XADD's next automatic ID (stream.py's __init__)
    cdef public object split_id
    cdef public unsigned long long last_ms, last_seq

    @cython.locals(t=Tail, lp=bytearray, size=Py_ssize_t, small=bint, count=Py_ssize_t, n=Py_ssize_t,
                   nelems=Py_ssize_t)
    cpdef add(self, argv, Py_ssize_t pos, unsigned long long ms, unsigned long long seq, new_id,
              Py_ssize_t max_bytes, Py_ssize_t max_entries)
    cpdef trim(self, maxlen, minid, approx, limit)
    cpdef _appended(self, new_id, unsigned long long ms, unsigned long long seq)


# MEMORY USAGE's terms (stream_usage): C calls
cpdef Py_ssize_t _rax_usage(Rax rax) except -1
@cython.locals(size=Py_ssize_t)
cpdef Py_ssize_t _node_alloc(key, lp, prealloc) except -1

# Stream.mem_usage's body, a module function: evict.py's recount after every XADD under a memory
# limit reaches it through usage.pxd as a C call.
@cython.locals(t=Tail, nodes=Py_ssize_t, total=Py_ssize_t, taken=Py_ssize_t, size=Py_ssize_t)
cpdef Py_ssize_t stream_usage(Stream st, Py_ssize_t samples=*) except -1
