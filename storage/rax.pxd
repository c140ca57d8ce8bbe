# Declarations for compiling rax.py with Cython (setup.py); the interpreter never reads this.
# Only `untrack`'s C call: the tree's classes stay Python classes (their slots are read by the
# other modules as attributes).
cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)

cpdef untrack(obj)
