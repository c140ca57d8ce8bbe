# Declarations for compiling t_scripting.py with Cython (setup.py); the interpreter never reads this.
#
# EVALSHA's and EVAL's path to the script cache is C calls: the cache and its entry are held in
# locals typed as scripts.pxd's extension types, so `sc.run` is a call through its vtable (not a
# Python method call with six arguments), and the helpers between the handler and it are cpdef.
# scripts and functions are cimported as modules too (beside the .py's imports of them), so that
# `scripts.cache(...)`, `functions.registry(...).call(...)` and `runner.numkeys(...)`, cpdef there,
# are C calls.  EVALSHA's client and server are typed as their field bases (server/base/fields.pxd):
# its server, the monitors and its debugging mode are C struct fields; the cache's find is a C call.
# FCALL's likewise: its server and the monitors are C struct fields, the registry a C call.
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.scripting cimport functions, runner, scripts
from raxdb.server.scripting.scripts cimport Script, ScriptCache


cpdef _check_numkeys(argv)

cpdef _feed_monitors(c, argv)

@cython.locals(sc=ScriptCache, script=Script)
cpdef _run_eval(c, argv, ro)

@cython.locals(sc=ScriptCache, script=Script, srv=ServerFields)
cpdef _evalsha(ClientFields c, argv, ro)

@cython.locals(srv=ServerFields)
cpdef _fcall(ClientFields c, argv, bint ro)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef eval_(ClientFields c, argv)
cpdef eval_ro(ClientFields c, argv)
cpdef evalsha(ClientFields c, argv)
cpdef evalsha_ro(ClientFields c, argv)
cpdef fcall(ClientFields c, argv)
cpdef fcall_ro(ClientFields c, argv)

# SCRIPT's and FUNCTION's subcommands, in the same signature (a subcommand's record calls its handler
# as a command's).
cpdef script_load(ClientFields c, argv)
cpdef script_exists(ClientFields c, argv)
cpdef script_flush(ClientFields c, argv)
cpdef script_kill(ClientFields c, argv)
cpdef script_debug(ClientFields c, argv)
cpdef script_help(ClientFields c, argv)
cpdef function_load(ClientFields c, argv)
cpdef function_delete(ClientFields c, argv)
cpdef function_flush(ClientFields c, argv)
cpdef function_kill(ClientFields c, argv)
cpdef function_list(ClientFields c, argv)
cpdef function_stats(ClientFields c, argv)
cpdef function_dump(ClientFields c, argv)
cpdef function_restore(ClientFields c, argv)
cpdef function_help(ClientFields c, argv)
