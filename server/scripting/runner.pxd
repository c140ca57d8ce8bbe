# Declarations for compiling runner.py with Cython (setup.py); the interpreter never reads this.
#
# Runner is an extension type whose one method is cpdef, so that a caller holding the engine as a
# Runner (scripts.pxd, functions.pxd) calls engine.Engine's override through the method table.


cdef class Runner:
    cpdef run(self, c, fn, name, argv, numkeys, ro, is_function, allow_oom=*, cross_slot=*)
