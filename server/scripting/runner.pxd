# Declarations for compiling runner.py with Cython (setup.py); the interpreter never reads this.
#
# Runner is an extension type whose one method is cpdef, so that a caller holding the engine as a
# Runner (scripts.pxd, functions.pxd) calls engine.Engine's override through the method table;
# numkeys is cpdef, a C call from the EVAL and FCALL paths that cimport this module, and so is
# its parse (server/table/args.pxd's maybe_int).  The calling client is typed as Client's field
# base (server/base/fields.pxd), so the engine's entry reads its database and ACL user as C struct
# fields.
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.table.args cimport maybe_int


cdef class Runner:
    cpdef run(self, ClientFields c, fn, name, argv, numkeys, ro, is_function, allow_oom=*, cross_slot=*)


cpdef numkeys(argv, not_a_count)
