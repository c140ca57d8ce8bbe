# Declarations for compiling args.py with Cython (setup.py); the interpreter never reads this.
#
# The integer parsers every command's arguments go through, and option_word, are cpdef (C calls
# for the compiled handlers that cimport them), and string2ll (protocol/request.pxd) is a C call
# inside them.
cimport cython
from raxdb.protocol.request cimport string2ll
from raxdb.server.base.numparse cimport digits_value


cpdef to_int(arg, err=*)

@cython.locals(n=Py_ssize_t, v=cython.longlong)
cpdef maybe_int(arg)

# the known option words: a C dict read (see option_word)
cdef dict _WORDS

@cython.locals(word=object)
cpdef bytes option_word(arg)
