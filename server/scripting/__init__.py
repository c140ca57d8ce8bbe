"""Lua scripting: EVAL scripts and FUNCTION libraries on lupa's Lua 5.1, as Redis 7.0 runs them.

engine.py     one sandboxed Lua state with the `redis` library (call/pcall, replies, errors, hook)
lua_env.py    the Lua side of the sandbox (read-only globals, pcall semantics, error handler)
convert.py    RESP reply <-> Lua value conversions, both protocols
luanum.py     Lua 5.1 number semantics and argument checks, and LuaRaise (a Lua error from Python)
lib_*.py      the bundled libraries: bit, struct, cjson, cmsgpack
libs.py       installs the bundled libraries in a Lua state
untail.py     compiled chunks with tail calls made plain calls (an error keeps the script's line)
scripts.py    the EVAL script cache and shebang flags
functions.py  FUNCTION libraries (LOAD, FCALL, DUMP/RESTORE)
busy.py       answering other clients while a script runs past busy-reply-threshold
ldb.py        the Lua debugger (SCRIPT DEBUG, redis-cli --ldb)
interfaces.py the engine and a running script as busy.py, ldb.py and libs.py see them
runner.py     the engine as scripts.py and functions.py call it (a C call when compiled)
cbridge.pyx   redis.call / pcall and the call into a script through Lua's C API (compiled only;
              the engine falls back to lupa's own crossing without it)
cjson_lua.py  cjson.encode's common case in Lua, in front of lib_cjson
msgpack_lua.py cmsgpack.unpack's common case in Lua (or C), in front of lib_cmsgpack

Rule: imports only the layers below it (net and everything under it); inside, the engine imports
its helpers and they name it through interfaces.py, never by importing it back.
"""


def stats(server) -> dict[str, int]:
    """Counts for INFO memory (number_of_cached_scripts, number_of_functions, number_of_libraries);
    creates nothing when scripting was never used."""
    sc = server.script_cache
    fe = server.functions_engine
    return {
        "number_of_cached_scripts": len(sc.scripts) if sc is not None else 0,
        "number_of_functions": len(fe.functions) if fe is not None else 0,
        "number_of_libraries": len(fe.libraries) if fe is not None else 0,
    }
