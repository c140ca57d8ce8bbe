# Declarations for compiling hashtype.py with Cython (setup.py); the interpreter never reads this.
#
# Hash becomes an extension type whose two slots are C struct fields: the same 48-byte object as
# the interpreted class (header, two references, the cycle collector's header).  Its methods stay
# `def` methods, since a cpdef method would add a vtable pointer to every hash.  The listpack
# functions they call on every HSET / HGET are cimported, so those are C calls instead of calls
# through the listpack module's attributes.
cimport cython
from raxdb.storage.listpack cimport (append_pair, count_of, elements, entry_end, find_key, pair_value,
                                    replace_value, replace_values, splice)


cdef class Hash:
    cdef public bytes lp
    cdef public object d


@cython.locals(n=Py_ssize_t, i=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, count=Py_ssize_t, created=Py_ssize_t,
               lp=bytes)
cpdef Py_ssize_t _set_pairs(Hash h, args, Py_ssize_t start, Py_ssize_t max_entries, Py_ssize_t max_value) except -1
