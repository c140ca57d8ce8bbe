# Declarations for compiling rax.py with Cython (setup.py); the interpreter never reads this.
#
# RaxNode and Rax become extension types: their slots are C struct fields, public, so the other
# modules (the stream, consumer groups and PELs, the replication index) read and write them as
# attributes as before.  Lookups and insertion type their nodes, so the walk down the tree reads
# a node's fields at a pointer offset, and a new node is a C allocation with no Python call of a
# class: a new stream (XADD to a new key) makes its tree and two nodes.  `untrack` is CPython's
# C call.
cimport cython

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)

cpdef untrack(obj)


cdef class RaxNode:
    cdef public object chars, children, value
    cdef public bint iskey, compressed


cdef class Rax:
    cdef public RaxNode head
    cdef public Py_ssize_t numele, numnodes
    cdef public bint plain

    @cython.locals(h=RaxNode, i=Py_ssize_t, n=Py_ssize_t, j=Py_ssize_t, m=Py_ssize_t, child=RaxNode)
    cpdef tuple _walk(self, key, stack)

    @cython.locals(h=RaxNode, i=Py_ssize_t, n=Py_ssize_t, j=Py_ssize_t)
    cpdef find(self, key, default=*)

    cpdef bint insert(self, key, value) except -1

    @cython.locals(h=RaxNode, i=Py_ssize_t, j=Py_ssize_t, n=Py_ssize_t, plain=bint, postfix=RaxNode,
                   split=RaxNode, child=RaxNode, k=Py_ssize_t)
    cpdef bint _insert(self, key, value, bint overwrite) except -1
