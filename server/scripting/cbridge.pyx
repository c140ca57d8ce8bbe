# cython: language_level=3
"""redis.call and redis.pcall as C functions of the engine's own Lua state (the C-API bridge).

What it is.  lupa runs Lua 5.1 statically linked into its extension module, which exports the Lua
C API as dynamic symbols.  This module resolves those symbols (dlsym on lupa's already loaded
module) and reaches the `lua_State` lupa's `LuaRuntime` runs, so that redis.call and redis.pcall
are `lua_CFunction`s: their arguments are read straight off the Lua stack into the argv the
command path takes (`Engine._reply_of`), and the common replies (integer, bulk, null, status,
error, RESP2 arrays of those) are pushed onto the Lua stack directly, without lupa's generic
crossing (an argument tuple built by concatenation, a kwargs dict, a Lua function in front).  The
rest of a reply goes through `Engine._to_lua`, the converter the interpreted path uses.

Its rule.  It is the one module of raxdb written as C-level Cython (a .pyx): a bridge to a C API
cannot be plain Python.  It is optional in every way: not built (RAXDB_PURE=1, no compiler), not
importable, or lupa's objects not laid out as `bind` checks at start-up, and the engine keeps
lupa's path (`Engine._command`), which behaves identically.  It decides nothing about commands:
every check, the command's run and the slow conversions stay in engine.py.

Invariants.
- `bind` derives the lua_State and lupa's registry-reference field from lupa's objects (found by
  their known neighbours, not by fixed offsets) and proves them against values set through lupa
  (a global read back through the C API, registry references compared raw); any disagreement
  returns None and nothing is used.
- No Lua error ever crosses a Python frame: the part of a call that touches Python
  (`_py_call`, `_py_convert`) runs with the GIL, holds its references only in its own frame, and
  pushes only what cannot raise (nil, booleans, numbers, registry references); what allocates in
  Lua (strings, tables) and `lua_error` happen after it returned, in the C function, where a
  longjmp crosses only Lua's and this module's C frames.  The bytes such a push reads are held
  by the Bridge (`reply`) so they outlive the Python frame.
- The Lua stack is balanced: each C function returns exactly the values it pushed above its
  arguments (one), or raises one error value; `bind` restores the top it found.
- Errors keep Redis's texts and shapes: a refused or failed command is the same {err=...} table
  the interpreted path builds, raised by redis.call and returned by redis.pcall.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject

from raxdb.server.scripting.engine cimport Engine

from raxdb.server.scripting import engine as _engine_module
from raxdb.server.scripting.luanum import LuaRaise

cdef extern from *:
    """
    #include <dlfcn.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <stddef.h>

    /* Lua 5.1's C API, as lupa.lua51 exports it (declared here: no Lua headers are installed). */
    typedef struct lua_State lua_State;
    typedef double lua_Number;
    typedef int (*lua_CFunction)(lua_State *L);
    #define RX_REGISTRYINDEX (-10000)
    #define RX_GLOBALSINDEX (-10002)
    #define rx_upvalueindex(i) (RX_GLOBALSINDEX - (i))
    #define RX_TNIL 0
    #define RX_TBOOLEAN 1
    #define RX_TNUMBER 3
    #define RX_TSTRING 4
    #define RX_TTABLE 5
    #define RX_TFUNCTION 6
    #define RX_TTHREAD 8

    static struct {
        int (*gettop)(lua_State *);
        void (*settop)(lua_State *, int);
        int (*type)(lua_State *, int);
        lua_Number (*tonumber)(lua_State *, int);
        const char *(*tolstring)(lua_State *, int, size_t *);
        void *(*touserdata)(lua_State *, int);
        int (*rawequal)(lua_State *, int, int);
        void (*pushnil)(lua_State *);
        void (*pushnumber)(lua_State *, lua_Number);
        void (*pushlstring)(lua_State *, const char *, size_t);
        void (*pushboolean)(lua_State *, int);
        void (*pushlightuserdata)(lua_State *, void *);
        void (*pushcclosure)(lua_State *, lua_CFunction, int);
        void (*pushvalue)(lua_State *, int);
        void (*createtable)(lua_State *, int, int);
        void (*rawgeti)(lua_State *, int, int);
        void (*rawseti)(lua_State *, int, int);
        void (*getfield)(lua_State *, int, const char *);
        void (*setfield)(lua_State *, int, const char *);
        int (*error)(lua_State *);
        int (*checkstack)(lua_State *, int);
    } rx;

    /* The API's entry points out of lupa's module (already loaded: RTLD_NOLOAD); 0 if any is missing. */
    static int rx_resolve(const char *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (h == NULL) return 0;
        #define RX_SYM(field, name) if ((*(void **)&rx.field = dlsym(h, name)) == NULL) return 0;
        RX_SYM(gettop, "lua_gettop") RX_SYM(settop, "lua_settop") RX_SYM(type, "lua_type")
        RX_SYM(tonumber, "lua_tonumber") RX_SYM(tolstring, "lua_tolstring")
        RX_SYM(touserdata, "lua_touserdata") RX_SYM(rawequal, "lua_rawequal")
        RX_SYM(pushnil, "lua_pushnil") RX_SYM(pushnumber, "lua_pushnumber")
        RX_SYM(pushlstring, "lua_pushlstring") RX_SYM(pushboolean, "lua_pushboolean")
        RX_SYM(pushlightuserdata, "lua_pushlightuserdata") RX_SYM(pushcclosure, "lua_pushcclosure")
        RX_SYM(pushvalue, "lua_pushvalue") RX_SYM(createtable, "lua_createtable")
        RX_SYM(rawgeti, "lua_rawgeti") RX_SYM(rawseti, "lua_rawseti")
        RX_SYM(getfield, "lua_getfield") RX_SYM(setfield, "lua_setfield")
        RX_SYM(error, "lua_error") RX_SYM(checkstack, "lua_checkstack")
        #undef RX_SYM
        return 1;
    }

    /* Redis's luaArgsToRedisArgv: a number argument as "%.17g" (lua_tolstring would lose precision). */
    static int rx_number_arg(lua_Number n, char *buf, int size) {
        return snprintf(buf, size, "%.17g", (double)n);
    }

    /* A reply pushed as the Lua value convert.py's parser makes of it, for the shapes handled here:
       integer, bulk, null bulk (false), status ({ok=...}) and, when the script's protocol is RESP2,
       an array of integers, bulks and null bulks (a null array is false).  1 when pushed, 0 (and
       the stack as it was) for any other shape: the caller converts those in Python. */
    static int rx_push_reply(lua_State *L, const char *p, Py_ssize_t len, int resp) {
        const char *end = p + len, *q;
        char *e;
        long long n, m, i;
        int top;
        if (len < 3) return 0;
        switch (p[0]) {
        case ':':
            rx.pushnumber(L, (lua_Number)strtoll(p + 1, NULL, 10));
            return 1;
        case '$':
            if (p[1] == '-') { rx.pushboolean(L, 0); return 1; }
            q = memchr(p, '\\r', len);
            if (q == NULL || q + 2 > end - 2) return 0;
            rx.pushlstring(L, q + 2, (size_t)(end - 2 - (q + 2)));
            return 1;
        case '+':
            rx.createtable(L, 0, 1);
            rx.pushlstring(L, p + 1, (size_t)(len - 3));
            rx.setfield(L, -2, "ok");
            return 1;
        case '*':
            if (resp != 2) return 0;
            n = strtoll(p + 1, &e, 10);
            if (*e != '\\r') return 0;
            if (n < 0) { rx.pushboolean(L, 0); return 1; }
            if (n > 0x7fffffff) return 0;
            top = rx.gettop(L);
            rx.createtable(L, (int)n, 0);
            q = e + 2;
            for (i = 1; i <= n; i++) {
                if (q >= end) goto other;
                if (*q == ':') {
                    m = strtoll(q + 1, &e, 10);
                    rx.pushnumber(L, (lua_Number)m);
                    q = e + 2;
                } else if (*q == '$') {
                    m = strtoll(q + 1, &e, 10);
                    if (m < 0) {
                        rx.pushboolean(L, 0);
                        q = e + 2;
                    } else {
                        if (e + 2 + m + 2 > end) goto other;
                        rx.pushlstring(L, e + 2, (size_t)m);
                        q = e + 2 + m + 2;
                    }
                } else {
                    goto other;
                }
                rx.rawseti(L, -2, (int)i);
            }
            return 1;
        other:
            rx.settop(L, top);
            return 0;
        }
        return 0;
    }

    /* The error of a command the script called: {err = s, ignore_err_stats_update = true}, as
       lua_env.py's cmd_err builds it. */
    static void rx_push_cmd_err(lua_State *L, const char *s, Py_ssize_t len) {
        rx.createtable(L, 0, 2);
        rx.pushlstring(L, s, (size_t)len);
        rx.setfield(L, -2, "err");
        rx.pushboolean(L, 1);
        rx.setfield(L, -2, "ignore_err_stats_update");
    }

    /* lupa's number conversion (py_from_lua): an integral value as an integer. */
    static int rx_is_integral(lua_Number n) {
        ptrdiff_t i = (ptrdiff_t)n;
        return n == (lua_Number)i;
    }
    """
    ctypedef struct lua_State
    ctypedef double lua_Number
    ctypedef int (*lua_CFunction)(lua_State *L) noexcept nogil
    int RX_REGISTRYINDEX, RX_GLOBALSINDEX, RX_TNIL, RX_TBOOLEAN, RX_TNUMBER, RX_TSTRING, RX_TTABLE
    int RX_TFUNCTION, RX_TTHREAD
    int rx_upvalueindex(int i) nogil

    ctypedef struct rx_api:
        int (*gettop)(lua_State *) nogil
        void (*settop)(lua_State *, int) nogil
        int (*type)(lua_State *, int) nogil
        lua_Number (*tonumber)(lua_State *, int) nogil
        const char *(*tolstring)(lua_State *, int, size_t *) nogil
        void *(*touserdata)(lua_State *, int) nogil
        int (*rawequal)(lua_State *, int, int) nogil
        void (*pushnil)(lua_State *) nogil
        void (*pushnumber)(lua_State *, lua_Number) nogil
        void (*pushlstring)(lua_State *, const char *, size_t) nogil
        void (*pushboolean)(lua_State *, int) nogil
        void (*pushlightuserdata)(lua_State *, void *) nogil
        void (*pushcclosure)(lua_State *, lua_CFunction, int) nogil
        void (*pushvalue)(lua_State *, int) nogil
        void (*createtable)(lua_State *, int, int) nogil
        void (*rawgeti)(lua_State *, int, int) nogil
        void (*rawseti)(lua_State *, int, int) nogil
        void (*getfield)(lua_State *, int, const char *) nogil
        void (*setfield)(lua_State *, int, const char *) nogil
        int (*error)(lua_State *) nogil
        int (*checkstack)(lua_State *, int) nogil
    rx_api rx
    int rx_resolve(const char *path)
    int rx_number_arg(lua_Number n, char *buf, int size) nogil
    int rx_push_reply(lua_State *L, const char *p, Py_ssize_t len, int resp) nogil
    void rx_push_cmd_err(lua_State *L, const char *s, Py_ssize_t len) nogil
    int rx_is_integral(lua_Number n) nogil


# What the Python part of a call leaves for its C part to do (each after the GIL part returned).
cdef enum:
    RET_PUSHED = 0       # the value is on the stack: return it
    RET_REPLY = 1        # the reply (bytes) is in st.buf: convert it
    RET_STRING = 2       # st.buf is a string value: push and return it
    RET_CMD_ERR = 3      # st.buf is an error reply's text: its {err=...} table, raised or returned
    RAISE_PUSHED = 4     # the error value is on the stack: raise it
    RAISE_STRING = 5     # st.buf is the error (a string): push and raise it


cdef struct rx_state:
    PyObject *bridge     # the Bridge (borrowed: it owns this struct)
    const char *buf      # bytes held by the Bridge's `reply`
    Py_ssize_t len
    int resp             # the script client's protocol (redis.setresp)


cdef bint _resolved = False


cdef class Bridge:
    """One engine's crossing: its lua_State, how to push lupa's objects, and redis.call's state."""

    cdef lua_State *L
    cdef Engine engine
    cdef object runtime, table_type, function_type
    cdef Py_ssize_t ref_offset   # of lupa's _LuaObject._ref (an int)
    cdef object reply            # what st.buf points into, while the C part reads it
    cdef rx_state st

    def install_calls(self, table: object) -> None:
        """Make `table`.call and .pcall (the engine's redis table, a lupa table) the C functions."""
        cdef lua_State *L = self.L
        cdef int top = rx.gettop(L)
        if not self._push_object(table):
            raise TypeError("not a table of this engine")
        rx.pushlightuserdata(L, <void *>&self.st)
        rx.pushcclosure(L, <lua_CFunction>_l_call, 1)
        rx.setfield(L, -2, "call")
        rx.pushlightuserdata(L, <void *>&self.st)
        rx.pushcclosure(L, <lua_CFunction>_l_pcall, 1)
        rx.setfield(L, -2, "pcall")
        rx.settop(L, top)

    cdef bint _push_object(self, object v):
        """Push a lupa table or function of this runtime by its registry reference (no allocation)."""
        cdef type t = type(v)
        if t is not self.table_type and t is not self.function_type:
            return False
        rx.rawgeti(self.L, RX_REGISTRYINDEX, (<int *>(<char *><PyObject *>v + self.ref_offset))[0])
        return True

    cdef int _push_value(self, object v) except -1:
        """A Python value as lupa would push it; RET_PUSHED, or RET_STRING with st.buf set for a
        string (pushing it allocates: the C part does it)."""
        cdef lua_State *L = self.L
        cdef type t = type(v)
        if v is None:
            rx.pushnil(L)
        elif v is True or v is False:
            rx.pushboolean(L, v is True)
        elif t is int:
            rx.pushnumber(L, <lua_Number>(<long long>v))
        elif t is float:
            rx.pushnumber(L, <lua_Number>(<double>v))
        elif t is bytes:
            self._hold(v)
            return RET_STRING
        elif not self._push_object(v):
            raise TypeError(f"cannot pass {t.__name__} to Lua")
        return RET_PUSHED

    cdef inline void _hold(self, bytes b):
        self.reply = b
        self.st.buf = PyBytes_AS_STRING(b)
        self.st.len = PyBytes_GET_SIZE(b)


# ---- redis.call / redis.pcall ------------------------------------------------------------------
cdef int _l_call(lua_State *L) noexcept nogil:
    return _call(L, 1)


cdef int _l_pcall(lua_State *L) noexcept nogil:
    return _call(L, 0)


cdef inline int _call(lua_State *L, bint raise_errors) noexcept nogil:
    cdef rx_state *st = <rx_state *>rx.touserdata(L, rx_upvalueindex(1))
    cdef int code = _py_call(st, L, raise_errors)
    if code == RET_REPLY:
        if not rx_push_reply(L, st.buf, st.len, st.resp):
            code = _py_convert(st, L, raise_errors)
        else:
            return 1
    return _finish(L, st, code, raise_errors)


cdef inline int _finish(lua_State *L, rx_state *st, int code, bint raise_errors) noexcept nogil:
    """The C part of a call: what allocates and what raises, after the Python part returned."""
    if code == RET_PUSHED:
        return 1
    if code == RET_STRING:
        rx.pushlstring(L, st.buf, <size_t>st.len)
        return 1
    if code == RET_CMD_ERR:
        rx_push_cmd_err(L, st.buf, st.len)
        if not raise_errors:
            return 1
        return rx.error(L)
    if code == RAISE_STRING:
        rx.pushlstring(L, st.buf, <size_t>st.len)
    return rx.error(L)  # RAISE_PUSHED, RAISE_STRING


cdef int _py_call(rx_state *st, lua_State *L, bint raise_errors) noexcept with gil:
    """The Python part of redis.call: the arguments as argv, the command run by the engine."""
    cdef Bridge b = <Bridge>st.bridge
    cdef Engine eng = b.engine
    cdef int n = rx.gettop(L), i, t
    cdef size_t size
    cdef const char *s
    cdef char buf[64]
    cdef list argv = []
    try:
        for i in range(1, n + 1):
            t = rx.type(L, i)
            if t == RX_TSTRING:
                s = rx.tolstring(L, i, &size)
                argv.append(PyBytes_FromStringAndSize(s, <Py_ssize_t>size))
            elif t == RX_TNUMBER:
                argv.append(PyBytes_FromStringAndSize(buf, rx_number_arg(rx.tonumber(L, i), buf, 64)))
            else:
                return b._push_value(eng._fail(raise_errors, b"Lua redis lib command arguments must be strings or integers"))
        r = eng._reply_of(raise_errors, argv)
        if type(r) is not bytes:
            return b._push_value(r)  # a refusal's error, when pcall returns it
        st.resp = eng.client.resp
        if (<bytes>r)[0] == 45:  # -: the error of a called command (counted in errorstats already)
            b._hold(_engine_module.error_text((<bytes>r)[:-2]))
            return RET_CMD_ERR
        b._hold(<bytes>r)
        return RET_REPLY
    except BaseException as e:
        return _raise(b, eng, e)


cdef int _py_convert(rx_state *st, lua_State *L, bint raise_errors) noexcept with gil:
    """A reply rx_push_reply leaves to the Python converter."""
    cdef Bridge b = <Bridge>st.bridge
    try:
        return b._push_value(b.engine._to_lua(raise_errors, b.reply))
    except BaseException as e:
        return _raise(b, b.engine, e)


cdef int _raise(Bridge b, Engine eng, BaseException e) noexcept:
    """An exception of the Python part as the Lua error lupa's crossing would have raised (what
    the error handler's `unwrap` makes of it)."""
    cdef int code
    try:
        if isinstance(e, LuaRaise):
            code = b._push_value(e.value)
        else:
            code = b._push_value(eng._unwrap(e))
        return RAISE_STRING if code == RET_STRING else RAISE_PUSHED
    except BaseException:
        b._hold(b"Internal error in redis.call")
        return RAISE_STRING


# ---- binding to an engine's Lua state -----------------------------------------------------------
def bind(engine: object) -> Bridge | None:
    """A Bridge for `engine`'s lupa runtime, or None when lupa's objects are not what this module
    expects (then nothing of it is used)."""
    global _resolved
    import lupa.lua51 as lupa51

    if not isinstance(engine, Engine):
        return None
    if not _resolved:
        _resolved = bool(rx_resolve(lupa51.__file__.encode()))
        if not _resolved:
            return None
    runtime = engine.lua
    if type(runtime) is not lupa51.LuaRuntime:
        return None
    cdef Bridge b = Bridge.__new__(Bridge)
    b.engine = engine
    b.runtime = runtime
    b.st.bridge = <PyObject *>b
    g = runtime.globals()
    f = runtime.eval("function() end")
    b.table_type = type(g)
    b.function_type = type(f)
    # A lupa object: PyObject_HEAD, (a vtable,) its runtime, its lua_State, its registry reference.
    cdef Py_ssize_t off, limit = type(g).__basicsize__ - sizeof(void *) * 2 - sizeof(int)
    cdef Py_ssize_t found = -1
    off = sizeof(PyObject)
    while off <= limit:
        if (<void **>(<char *><PyObject *>g + off))[0] == <void *><PyObject *>runtime:
            found = off
            break
        off += sizeof(void *)
    if found < 0 or type(f).__basicsize__ < type(g).__basicsize__:
        return None
    cdef lua_State *L = (<lua_State **>(<char *><PyObject *>g + found + sizeof(void *)))[0]
    b.ref_offset = found + 2 * sizeof(void *)
    if L == NULL or not _runtime_holds(runtime, L):
        return None
    if (<unsigned char *>L)[sizeof(void *)] != RX_TTHREAD:  # CommonHeader: next, tt
        return None
    b.L = L
    return b if _proves(b, runtime, g, f) else None


cdef bint _runtime_holds(object runtime, lua_State *L):
    cdef Py_ssize_t off = sizeof(PyObject), limit = type(runtime).__basicsize__ - sizeof(void *)
    while off <= limit:
        if (<void **>(<char *><PyObject *>runtime + off))[0] == <void *>L:
            return True
        off += sizeof(void *)
    return False


cdef bint _proves(Bridge b, object runtime, object g, object f):
    """Values set through lupa read back through the C API, at the derived state and references."""
    cdef lua_State *L = b.L
    cdef int top = rx.gettop(L)
    cdef size_t size
    cdef const char *s
    cdef bint ok
    token = b"raxdb-cbridge-%x" % id(b)
    name = b"__raxdb_cbridge_probe"
    g[name] = token
    try:
        rx.getfield(L, RX_GLOBALSINDEX, name)
        s = rx.tolstring(L, -1, &size) if rx.type(L, -1) == RX_TSTRING else NULL
        ok = s != NULL and s[:size] == token
        rx.settop(L, top)
        if not ok:
            return False
        b._push_object(g)
        rx.pushvalue(L, RX_GLOBALSINDEX)
        ok = rx.rawequal(L, -1, -2)
        rx.settop(L, top)
        if not ok:
            return False
        g[name] = f
        b._push_object(f)
        rx.getfield(L, RX_GLOBALSINDEX, name)
        ok = rx.type(L, -1) == RX_TFUNCTION and rx.rawequal(L, -1, -2)
        rx.settop(L, top)
        return ok
    finally:
        g[name] = None
