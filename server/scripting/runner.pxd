# Declarations for compiling runner.py with Cython (setup.py); the interpreter never reads this.
#
# Runner is an extension type whose one method is cpdef, so that a caller holding the engine as a
# Runner (scripts.pxd, functions.pxd) calls engine.Engine's override through the method table;
# numkeys is cpdef, a C call from the EVAL and FCALL paths that cimport this module.


cdef class Runner:
    cpdef run(self, c, fn, name, argv, numkeys, ro, is_function, allow_oom=*, cross_slot=*)


cpdef numkeys(argv, not_a_count)
