# Declarations for compiling reply.py with Cython (setup.py); the interpreter never reads this.
#
# The encoders most command replies go through are cpdef: the compiled command modules cimport
# this module as R (beside their `from raxdb.protocol import reply as R`), so R.integer, R.bulk
# and R.array are C calls there; the reply constants (R.OK, R.ZERO, ...) stay module attributes.
#
# The decimal writers below are inline, defined here so that every module that cimports them
# (the compiled command modules, listpack, zset and stream, which write replies straight from
# their entries) gets them inline; reply.py holds their interpreted twins.  `put_u` and
# `put_head` write into a buffer sized beforehand (digits() tells how much a number needs).
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.math cimport signbit
from libc.string cimport memcpy

# C globals, None until a first use makes them (reply.py): integer's lookup is a list item read,
# not a module dict's, and the test that the table is made a pointer compare
cdef list _SMALL_INTS, _BULK_HEADERS, _BULK_SEPS, _ARRAY_HEADERS
cpdef list small_ints()
cpdef list bulk_headers()
cpdef list _bulk_seps()
cpdef list _array_headers()

# The protocol's shapes as an extension type: a typed client's `c.enc.null` (every miss of a read
# command) is two pointer reads (server/base/fields.pxd types ClientFields.enc with it).
cdef class Encoder:
    cdef public object version
    cdef public bytes null, null_array, true, false
    cdef public bint short_doubles  # Redis 7.2's doubles (compat-version 7.2+)

@cython.locals(i=Py_ssize_t, t=list)
cpdef bytes integer(n)

# buf an object: typed as the bytearray it is, Cython would take only a bytearray into its slices
@cython.locals(buf=object)
cpdef list decimals(bytes head, bytes tail, Py_ssize_t stop)

@cython.locals(t=list)
cpdef bytes length(Py_ssize_t n)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, d="unsigned char*", out=bytes)
cpdef bytes bulk(b)

@cython.locals(total=Py_ssize_t)
cpdef bytes array(items)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, m=Py_ssize_t, d="unsigned char*", out=bytes, it=bytes)
cdef bytes _array_of(list items, Py_ssize_t total)

@cython.locals(n=Py_ssize_t, total=Py_ssize_t, k=Py_ssize_t, m=Py_ssize_t, d="unsigned char*", out=bytes)
cpdef bytes bulk_aggregate(unsigned char head, items, Py_ssize_t count=*, Py_ssize_t big=*)

cpdef bytes bulk_strings(items, Py_ssize_t same_len=*)

# A reply in pieces (reply.py): `value` a big stored value's reply by reference, `flat` any reply
# as one bytes object, `add_reply` (inline) a reply added to a connection's list of replies.
@cython.locals(n=Py_ssize_t, head=bytes)
cpdef object value(v)

cpdef bytes flat(r)

# Whole replies of stored values that may hold big ones (reply.py): `values` an aggregate of them,
# `value_array` an array of replies some of which may be `value`s in pieces.
@cython.locals(n=Py_ssize_t, header=bytes, seq=object)
cpdef object values(items, unsigned char head=*, Py_ssize_t count=*)

@cython.locals(total=Py_ssize_t, plain=cython.bint)
cpdef object value_array(list parts)

cdef object _pieces(bytes header, list parts)

cdef inline int add_reply(list out, object r) except -1:
    """A command's reply added to `out`, a connection's list of replies: its pieces as they are."""
    if type(r) is tuple:
        out.extend(<tuple>r)
    else:
        out.append(r)
    return 0

cpdef bytes bulk_set(Encoder enc, items)

# WITHSCORES replies (t_zset.pairs_reply): scores that are whole numbers written as C integers
@cython.locals(s=cython.double, v=cython.longlong, u=cython.ulonglong, tlen=Py_ssize_t, total=Py_ssize_t,
               n=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t, mlen=Py_ssize_t, d="unsigned char*", out=bytes,
               resp3=bint)
cpdef bytes scored_members(Encoder enc, pairs, bint flat=*)

cpdef bytes score_text(Encoder enc, x)


cdef inline Py_ssize_t digits(unsigned long long u) noexcept:
    """Decimal digits of u."""
    cdef Py_ssize_t d = 1
    while u >= 10:
        u //= 10
        d += 1
    return d


cdef inline Py_ssize_t put_u(unsigned char* d, Py_ssize_t k, unsigned long long u) noexcept:
    """u in decimal at d[k:]; the offset after it."""
    cdef Py_ssize_t end = k + digits(u)
    k = end
    while True:
        k -= 1
        d[k] = 48 + u % 10
        u //= 10
        if not u:
            break
    return end


cdef inline Py_ssize_t put_head(unsigned char* d, Py_ssize_t k, unsigned char c, unsigned long long n) noexcept:
    """`<c><n>\r\n` (a bulk's or an array's header) at d[k:]; the offset after it."""
    d[k] = c
    k = put_u(d, k + 1, n)
    d[k] = 13
    d[k + 1] = 10
    return k + 2


cdef inline bytes decimal(long long x):
    """x in decimal, as b"%d" % x spells it."""
    cdef unsigned long long u = (0ULL - <unsigned long long>x) if x < 0 else <unsigned long long>x
    cdef Py_ssize_t neg = x < 0
    cdef bytes out = PyBytes_FromStringAndSize(NULL, neg + digits(u))
    cdef unsigned char* d = <unsigned char*>PyBytes_AS_STRING(out)
    d[0] = 45
    put_u(d, neg, u)
    return out


cdef inline Py_ssize_t bulk_size(Py_ssize_t n) noexcept:
    """Bytes of a bulk string frame of n bytes: `$<n>\r\n`, the bytes, `\r\n` (the common
    lengths without digits()'s loop: LRANGE sizes its reply with this per element)."""
    return n + (6 if n < 10 else (7 if n < 100 else (8 if n < 1000 else digits(n) + 5)))


cdef inline Py_ssize_t put_bulk(unsigned char* d, Py_ssize_t k, const unsigned char* src, Py_ssize_t st,
                                Py_ssize_t n) noexcept:
    """src[st:st + n] as a bulk string at d[k:]; the offset after it.  A byte loop, not memcpy: the
    values written this way (list elements, stream fields) are mostly a few bytes long."""
    cdef Py_ssize_t i
    k = put_head(d, k, 36, n)
    for i in range(n):
        d[k + i] = src[st + i]
    d[k + n] = 13
    d[k + n + 1] = 10
    return k + n + 2


cdef inline Py_ssize_t put_int_bulk(unsigned char* d, Py_ssize_t k, long long x) noexcept:
    """The 64-bit integer x in decimal as a bulk string at d[k:]; the offset after it."""
    cdef unsigned long long u
    if x < 0:
        u = 0ULL - <unsigned long long>x  # -x without overflowing for the most negative one
        k = put_head(d, k, 36, digits(u) + 1)
        d[k] = 45
        k = put_u(d, k + 1, u)
    else:
        u = <unsigned long long>x
        k = put_head(d, k, 36, digits(u))
        k = put_u(d, k, u)
    d[k] = 13
    d[k + 1] = 10
    return k + 2


cdef inline Py_ssize_t int_size(long long x) noexcept:
    """Bytes of the integer frame of x: `:<x>\r\n`."""
    if x < 0:
        return digits(0ULL - <unsigned long long>x) + 4
    return digits(<unsigned long long>x) + 3


cdef inline Py_ssize_t put_int(unsigned char* d, Py_ssize_t k, long long x) noexcept:
    """The integer frame of x, `:<x>\r\n`, at d[k:]; the offset after it."""
    d[k] = 58
    if x < 0:
        d[k + 1] = 45
        k = put_u(d, k + 2, 0ULL - <unsigned long long>x)  # -x without overflowing for the lowest
    else:
        k = put_u(d, k + 1, <unsigned long long>x)
    d[k] = 13
    d[k + 1] = 10
    return k + 2


cdef inline Py_ssize_t put_id_bulk(unsigned char* d, Py_ssize_t k, unsigned long long ms,
                                   unsigned long long seq) noexcept:
    """A stream ID, `<ms>-<seq>`, as a bulk string at d[k:]; the offset after it."""
    k = put_head(d, k, 36, digits(ms) + 1 + digits(seq))
    k = put_u(d, k, ms)
    d[k] = 45
    k = put_u(d, k + 1, seq)
    d[k] = 13
    d[k + 1] = 10
    return k + 2
