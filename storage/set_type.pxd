# Declarations for compiling set_type.py with Cython (setup.py); the interpreter never reads this.
#
# RSet becomes an extension type of two C fields without a GC header (a set of bytes, an intset's
# bytes and a scan index cannot hold a reference cycle back to it): 32 bytes per value, Redis's
# robj is 16.  The PySetObject declarations (CPython's Include/cpython/setobject.h) let `_pick`
# and `_slots` read a set's table directly: random members without copying the set.
cimport cython
from cpython.object cimport PyObject
from raxdb.storage.alloc cimport dict_table_bytes, sds_alloc_first, size_class
from raxdb.storage.rax cimport untrack

cdef extern from "Python.h":
    ctypedef struct setentry:
        PyObject *key
        Py_hash_t hash
    ctypedef struct PySetObject:
        Py_ssize_t fill
        Py_ssize_t used
        Py_ssize_t mask
        setentry *table

ctypedef PySetObject *SetPtr
# Intset (set_type.py): a bytes subclass made without Py_TPFLAGS_HAVE_GC.  A class statement
# gives every subclass a GC header (16 bytes per instance, a 48-byte intset then costs 112 where a
# bytes object costs 96); a type from a spec without the flag has none, and bytes' own allocation
# and deallocation serve it unchanged (its instances hold no references to trace).
cdef extern from *:
    """
    static PyObject *raxdb_plain_bytes_subclass(const char *name) {
        PyType_Slot slots[] = {{0, NULL}};
        PyType_Spec spec = {name, 0, 0, Py_TPFLAGS_DEFAULT, slots};
        PyObject *bases = PyTuple_Pack(1, (PyObject *)&PyBytes_Type);
        if (bases == NULL) return NULL;
        PyObject *type = PyType_FromSpecWithBases(&spec, bases);
        Py_DECREF(bases);
        return type;
    }
    """
    object _plain_bytes_subclass "raxdb_plain_bytes_subclass"(const char *name)

ctypedef setentry *EntryPtr
ctypedef PyObject *ObjPtr


cdef class RSet:  # @cython.no_gc is on the class in set_type.py: Cython reads it only there
    cdef public object data, _scan


cdef unsigned long long _rng
cdef object _DUMMY

@cython.locals(x=cython.ulonglong)
cdef unsigned long long _rand() noexcept
cpdef Py_ssize_t _below(Py_ssize_t n) except -1

@cython.locals(so=SetPtr, table=EntryPtr, key=ObjPtr, dummy=ObjPtr, mask=Py_ssize_t)
cpdef object _pick(set s)
cpdef Py_ssize_t _slots(set s) except -1

# RSet.mem_usage's body, a module function (no method table on the set object): evict.py's
# recount after every set write reaches it through usage.pxd as a C call.
@cython.locals(n=Py_ssize_t, k=Py_ssize_t, size=Py_ssize_t)
cpdef Py_ssize_t set_usage(RSet s, Py_ssize_t samples=*) except -1
