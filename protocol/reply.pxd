# Declarations for compiling reply.py with Cython (setup.py); the interpreter never reads this.
#
# The encoders most command replies go through are cpdef: the compiled command modules cimport
# this module as R (beside their `from raxdb.protocol import reply as R`), so R.integer, R.bulk
# and R.array are C calls there; the reply constants (R.OK, R.ZERO, ...) stay module attributes.

cpdef bytes integer(n)

cpdef bytes bulk(b)

cpdef bytes array(items)
