# Declarations for compiling args.py with Cython (setup.py); the interpreter never reads this.
#
# The integer parsers every command's arguments go through, and option_word, are cpdef (C calls
# for the compiled handlers that cimport them), and string2ll (protocol/request.pxd) is a C call
# inside them.
from raxdb.protocol.request cimport _string2ll


cpdef to_int(arg, err=*)

cpdef maybe_int(arg)

cpdef bytes option_word(arg)
