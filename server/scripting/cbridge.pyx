# cython: language_level=3
"""The scripting engine's crossings into and out of Lua through the Lua C API (the C-API bridge):
redis.call and redis.pcall as C functions, and the call into a script.

What it is.  lupa runs Lua 5.1 statically linked into its extension module, which exports the Lua
C API as dynamic symbols.  This module resolves those symbols (dlsym on lupa's already loaded
module) and reaches the `lua_State` lupa's `LuaRuntime` runs, so that redis.call and redis.pcall
are `lua_CFunction`s: their arguments are read straight off the Lua stack into the argv the
command path takes (`Engine._reply_of`), and the common replies (integer, bulk, null, status,
error, RESP2 arrays of those) are pushed onto the Lua stack directly, without lupa's generic
crossing (an argument tuple built by concatenation, a kwargs dict, a Lua function in front).  The
rest of a reply goes through `Engine._to_lua`, the converter the interpreted path uses.  And
`Bridge.run` calls a script (EVAL, EVALSHA, FCALL) as lua_env.py's run_eval / run_fcall do: KEYS and
ARGV built with lua_createtable from the argv, the function run by lua_pcall under the same error
handler.  Its result comes back as the reply `Engine.run` would make of it, encoded here straight
off the Lua stack: an integral number (the commonest) as its integer reply, and, while the script
is at RESP2, strings, numbers, booleans, nil and tables of the common shapes (arrays of those,
nested; {ok=...}, and {err=...} at the top) by `rx_conv`, which follows convert.py's
`lua_to_resp` rule for rule.  Anything else comes back as lupa would give it (numbers, strings,
booleans made here; a table through lupa, which alone makes its objects) for convert.py to
convert, as before.  And `bind` gives the state an allocator for its small blocks
(`rx_pool_alloc`): free lists by size class in one reserved region, where malloc and free cost
a script call several times more.

Its rule.  It is written as C-level Cython (a .pyx): a bridge to a C API cannot be plain Python.
What must be C, the functions that run on a Lua stack, is in cbridge_lua.h beside it (a header
of static functions this module alone includes, with its own opening notes); what touches Python
objects is here.  It is optional in every way: not built (RAXDB_PURE=1, no compiler), not
importable, or lupa's objects not laid out as `bind` checks at start-up, and the engine keeps
lupa's path (`Engine._command`), which behaves identically.  It decides nothing about commands:
every check, the command's run and the slow conversions stay in engine.py.

Invariants.
- `bind` derives the lua_State and lupa's registry-reference field from lupa's objects (found by
  their known neighbours, not by fixed offsets) and proves them against values set through lupa
  (a global read back through the C API, registry references compared raw); any disagreement
  returns None and nothing is used.
- No Lua error ever crosses a Python frame: the part of a call that touches Python
  (`_py_call_held`, `_py_convert`) runs with the GIL (taken unless the thread state holding it
  is the script thread's, as under `Bridge.run`), holds its references only in its own frame, and
  pushes only what cannot raise (nil, booleans, numbers, registry references); what allocates in
  Lua (strings, tables) and `lua_error` happen after it returned, in the C function, where a
  longjmp crosses only Lua's and this module's C frames.  The bytes such a push reads are held
  by the Bridge (`reply`) so they outlive the Python frame.
- The Lua stack is balanced: each C function returns exactly the values it pushed above its
  arguments (one), or raises one error value; `bind` restores the top it found.
- A result is converted after the protected call returned, outside any Lua protection: `rx_conv`
  makes only calls that neither allocate in Lua nor raise (raw reads, lua_next from nil, pushes
  into stack room `_l_run` reserved while still protected) and writes the reply into its own C
  buffer, so giving up part way (a shape it leaves to convert.py) discards
  the buffer and leaves the stack as it was, the result still there for lupa.
- lupa reads whatever it finds on the Lua stack as the results of its own calls, so nothing of
  this module's stays on the stack while Python code runs: redis.call's frame is emptied once its
  arguments are read (as lupa's crossing empties it), and a script's result leaves the stack
  before lupa is asked to wrap it.
- A script may call redis.call from a coroutine: while its Python part runs, lupa's runtime points
  at the calling thread's state (lupa's `_state`, swapped and restored as lupa's own crossing does)
  and values are pushed on that thread (`Bridge.cur`), never on the suspended main thread.
- A run's arguments reach `_l_run` as pointers into the caller's argv (bytes, alive and unchanged
  through the run); they are read before the script starts, so a nested use could not see them.
- Errors keep Redis's texts and shapes: a refused or failed command is the same {err=...} table
  the interpreted path builds, raised by redis.call and returned by redis.pcall.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from libc.stdlib cimport free
from libc.string cimport memcmp, strlen

from raxdb.server.scripting.engine cimport Crossing, Engine, Running

from raxdb.protocol.reply import small_ints
from raxdb.server.scripting import engine as _engine_module
from raxdb.server.scripting.luanum import LuaRaise

_SMALL_INT_REPLIES = small_ints()  # reply.integer's replies of -1..10000, by value + 1

cdef extern from "cbridge_lua.h":
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
        void (*rawget)(lua_State *, int) nogil
        void (*rawset)(lua_State *, int) nogil
        int (*next)(lua_State *, int) nogil
        int (*getmetatable)(lua_State *, int) nogil
        void (*getfield)(lua_State *, int, const char *) nogil
        void (*setfield)(lua_State *, int, const char *) nogil
        int (*error)(lua_State *) nogil
        int (*checkstack)(lua_State *, int) nogil
        int (*toboolean)(lua_State *, int) nogil
        void (*call)(lua_State *, int, int) nogil
        int (*pcall)(lua_State *, int, int, int) nogil
        int (*ref)(lua_State *, int) nogil
    rx_api rx
    int rx_resolve(const char *path)
    int rx_pool_install(lua_State *L)
    int rx_number_arg(lua_Number n, char *buf, int size) nogil
    int rx_push_reply(lua_State *L, const char *p, Py_ssize_t len, int resp) nogil
    void rx_push_cmd_err(lua_State *L, const char *s, Py_ssize_t len) nogil
    int rx_integral(lua_Number n, long long *out) nogil
    int rx_integer_reply(long long n, char *buf, int size) nogil
    int RX_REPLY_SLOTS, RX_NKEYS
    const char *const rx_key_names[]
    ctypedef struct rx_out:
        char *p
        size_t len, cap
        const char *null
        size_t null_len
        int keys[8]
    int rx_conv(lua_State *L, rx_out *o, int idx, int depth) nogil
    int rx_mp_unpack(lua_State *L) nogil


# The Bridge's cache of redis.call's short string arguments: its size (a power of two) and the
# longest string it holds.
cdef enum:
    RX_STRINGS = 256
    RX_STRING_MAX = 32
    RX_NAMES = 64  # the size of the Bridge's memory of command names (a power of two)


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
    # a run's arguments, for _l_run: pointers into the caller's argv (alive through the run)
    const char **args
    Py_ssize_t *lens
    Py_ssize_t nargs, nkeys, cap
    bint fcall
    int env_ref          # the scripts' global environment (lua_env.py's env), a registry reference
    int keys_ref, argv_ref  # the strings "KEYS" and "ARGV", registry references (_l_run's names)
    bint room            # _l_run reserved the stack room rx_conv may use (RX_REPLY_SLOTS)
    void *tstate         # the thread state of the thread that runs scripts (the event loop's)


cdef extern from *:
    """
    /* the running thread state, read without a check: the GIL holder's (3.11), this thread's
       while it holds the GIL (3.12 on); NULL once this thread let go of the GIL, either way
       (3.13 names the function PyThreadState_GetUnchecked) */
    #if PY_VERSION_HEX >= 0x030D0000
    #define rx_tstate_now() ((void *)PyThreadState_GetUnchecked())
    #else
    #define rx_tstate_now() ((void *)_PyThreadState_UncheckedGet())
    #endif
    """
    void *rx_tstate_now() nogil


# The Python part of redis.call, entered without PyGILState_Ensure (see _call).
ctypedef int (*rx_py_part)(rx_state *, lua_State *, bint) noexcept nogil


cdef bint _resolved = False


cdef class Bridge(Crossing):
    """One engine's crossing: its lua_State, how to push lupa's objects, and redis.call's state.
    A Crossing (engine.pxd), so that `Engine.run`'s call of `run` is a C call."""

    cdef lua_State *L
    cdef Engine engine
    cdef object runtime, table_type, function_type
    cdef Py_ssize_t ref_offset   # of lupa's _LuaObject._ref (an int)
    cdef Py_ssize_t state_offset  # of lupa's LuaRuntime._state
    cdef lua_State *cur          # the thread values are pushed on: L, or a calling coroutine's
    cdef object reply            # what st.buf points into, while the C part reads it
    cdef rx_state st
    cdef object handler, box, env  # the error handler (lua_env.py's err_handler); a {false} table
    cdef int run_ref             # _l_run as a closure over st, a registry reference
    cdef rx_out out              # a result's reply as rx_conv writes it, and the keys it reads
    cdef readonly bint pooled    # whether the state's small blocks come from rx_pool_alloc
    # redis.call's short string arguments as bytes, by the address of their Lua string (interned:
    # a command name, a constant, or a key of KEYS is the same string each time a script passes
    # it), so that a call's argv holds objects whose hash is cached (the command table's lookup,
    # the keyspace's), not new ones; an entry is used only when its bytes are the string's (an
    # address may be another string's after a collection).  Bytes are immutable: a command that
    # keeps one (a field, a value) keeps what a new object would have held.
    cdef const char *str_at[RX_STRINGS]
    cdef PyObject *str_obj[RX_STRINGS]
    # The command table's own name objects (the engine's dispatch dict's keys, each mapped to
    # itself, as they are at bind: rename-command is applied at start-up, before any script): a
    # command name entering the cache above is the table's key object when it is one, so that
    # _reply_of's lookup finds it by identity, without comparing bytes.  A name missing here is
    # still looked up, by value.
    cdef dict name_keys
    # The command each recent name object maps to in the dispatch table, by the object's address:
    # redis.call's name is an object of the string cache above (a table key when it is one), so the
    # same name is the same object call after call, and its command is found by identity instead of
    # a dict lookup (~100 instructions).  Only names the table holds are remembered; its entries
    # do not change once scripts run (rename-command is applied at start-up, a family's first
    # import adds names and sets handlers on the same commands).  Both arrays hold references.
    cdef PyObject *cmd_name[RX_NAMES]
    cdef PyObject *cmd_of[RX_NAMES]

    def __dealloc__(self):
        cdef int i
        for i in range(RX_STRINGS):
            Py_XDECREF(self.str_obj[i])
        for i in range(RX_NAMES):
            Py_XDECREF(self.cmd_name[i])
            Py_XDECREF(self.cmd_of[i])
        PyMem_Free(self.st.args)
        PyMem_Free(self.st.lens)
        free(self.out.p)

    cpdef run(self, fn, Py_ssize_t numkeys, list argv, bint is_function):
        """Run `fn` as lua_env.py's run_eval / run_fcall do (KEYS and ARGV from argv[3:], the
        first `numkeys` keys; protected by the error handler): (ok, its first result or the
        error) as lupa would give them, or None when `fn` or an argument is not what this path
        takes (then lupa's path runs it).  A result that is an integral number (the commonest),
        or one `rx_conv` converts, comes back as its encoded reply (bytes), what `Engine.run`
        would make of it, and an error reply (one not yet in errorstats) as (None, its text)."""
        cdef lua_State *L = self.L
        cdef Py_ssize_t n = len(argv) - 3, i
        cdef int top, status, size
        cdef long long v
        cdef char buf[32]
        if n < 0 or numkeys < 0 or numkeys > n or type(fn) is not self.function_type:
            return None
        if n > self.st.cap and not self._reserve(n):
            return None
        for i in range(n):
            a = argv[i + 3]
            if type(a) is not bytes:
                return None
            self.st.args[i] = PyBytes_AS_STRING(a)
            self.st.lens[i] = PyBytes_GET_SIZE(a)
        self.st.nargs = n
        self.st.nkeys = numkeys
        self.st.tstate = rx_tstate_now()  # this thread's: it holds the GIL
        self.st.fcall = is_function
        top = rx.gettop(L)
        self._push_object(self.handler)
        rx.rawgeti(L, RX_REGISTRYINDEX, self.run_ref)
        self._push_object(fn)
        self.st.room = False
        status = rx.pcall(L, 1, 1, top + 1)
        self.st.nargs = 0
        if status == 0:
            if rx.type(L, top + 2) == RX_TNUMBER and rx_integral(rx.tonumber(L, top + 2), &v):
                # lupa would give an int (always within a long long here): reply.integer's reply
                rx.settop(L, top)
                if -1 <= v <= 10000:
                    return (<list>_SMALL_INT_REPLIES)[v + 1]
                size = rx_integer_reply(v, buf, sizeof(buf))
                return PyBytes_FromStringAndSize(buf, size)
            r = self._reply(top + 2)
            if r is not None:
                rx.settop(L, top)
                return r
        return status == 0, self._take(top + 2, top)

    cdef object _reply(self, int idx):
        """The result at `idx` as the reply convert.py's lua_to_resp would make of it, encoded by
        rx_conv (an error reply as (None, its text)), or None when rx_conv leaves it to convert.py
        (or the script switched to RESP3): the stack is as it was either way, the result still at
        `idx` for `_take`."""
        cdef Engine eng = self.engine
        cdef Running run = eng.running
        cdef bint ok
        if not self.st.room or run is None or eng.client.resp != 2:
            return None
        null = run.caller.enc.null  # the caller's null (RESP2's or RESP3's), held through rx_conv
        if type(null) is not bytes:
            return None
        self.out.null = PyBytes_AS_STRING(null)
        self.out.null_len = PyBytes_GET_SIZE(null)
        self.out.len = 0
        ok = rx_conv(self.L, &self.out, idx, 0)
        rx.settop(self.L, idx)
        if not ok:
            r = None
        elif self.out.p[0] == 45:  # -: an error reply, its text for Engine.run's CommandError
            r = (None, PyBytes_FromStringAndSize(self.out.p + 1, <Py_ssize_t>self.out.len - 3))
        else:
            r = PyBytes_FromStringAndSize(self.out.p, <Py_ssize_t>self.out.len)
        if self.out.cap > 1 << 20:  # a large reply's buffer is not kept for the next run
            free(self.out.p)
            self.out.p = NULL
            self.out.cap = 0
        return r

    cdef bint _reserve(self, Py_ssize_t n):
        cdef Py_ssize_t cap = max(n, 2 * self.st.cap, 16)
        cdef void *a = PyMem_Realloc(self.st.args, cap * sizeof(char *))
        if a == NULL:
            return False
        self.st.args = <const char **>a
        a = PyMem_Realloc(self.st.lens, cap * sizeof(Py_ssize_t))
        if a == NULL:
            return False
        self.st.lens = <Py_ssize_t *>a
        self.st.cap = cap
        return True

    cdef object _take(self, int idx, int top):
        """The Lua value at `idx` as lupa's py_from_lua makes it (a table, a function and the
        rest through lupa itself, from the box), and the stack back at `top` (lupa reads what it
        finds on the stack as its results: nothing of ours may stay there when it is called)."""
        cdef lua_State *L = self.L
        cdef int t = rx.type(L, idx)
        cdef size_t size
        cdef const char *s
        cdef long long i
        cdef lua_Number d
        v = None
        if t == RX_TNUMBER:
            d = rx.tonumber(L, idx)
            v = i if rx_integral(d, &i) else d
        elif t == RX_TSTRING:
            s = rx.tolstring(L, idx, &size)
            v = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
        elif t == RX_TBOOLEAN:
            v = rx.toboolean(L, idx) != 0
        if t == RX_TNIL or t == RX_TNUMBER or t == RX_TSTRING or t == RX_TBOOLEAN:
            rx.settop(L, top)
            return v
        self._push_object(self.box)
        rx.pushvalue(L, idx)
        return self._boxed(top)

    cdef object _boxed(self, int top):
        """lupa's object for the value on top of the stack, with the box just below it: the value
        set into the box's array slot (a raw set, no allocation), the stack back at `top`, the
        object read through lupa and the slot cleared again."""
        cdef lua_State *L = self.L
        rx.rawseti(L, -2, 1)
        rx.settop(L, top)
        try:
            return self.box[1]
        finally:
            self._push_object(self.box)
            rx.pushboolean(L, 0)
            rx.rawseti(L, -2, 1)
            rx.settop(L, -2)

    def mp_unpack(self) -> object:
        """cmsgpack.unpack's common case as a C function of this Lua state (`rx_mp_unpack`), as
        the lupa function msgpack_lua.py's front calls: true and the value, or nothing."""
        cdef lua_State *L = self.L
        cdef int top = rx.gettop(L)
        self._push_object(self.box)
        rx.pushcclosure(L, <lua_CFunction>rx_mp_unpack, 0)
        return self._boxed(top)

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
        rx.rawgeti(self.cur, RX_REGISTRYINDEX, (<int *>(<char *><PyObject *>v + self.ref_offset))[0])
        return True

    cdef int _push_value(self, object v) except -1:
        """A Python value as lupa would push it; RET_PUSHED, or RET_STRING with st.buf set for a
        string (pushing it allocates: the C part does it)."""
        cdef lua_State *L = self.cur
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
    cdef int code
    if rx_tstate_now() == st.tstate:
        # Bridge.run's pcall, which holds the GIL (the holder's thread state is the script thread's):
        # the Python part runs as it is, without PyGILState_Ensure and Release around it (~70
        # instructions a call).  A script lupa runs (the debugger's, lupa's own crossing) runs
        # with the GIL released, the holder is then none: the Python part takes the GIL.
        code = (<rx_py_part><void *>_py_call_held)(st, L, raise_errors)
    else:
        code = _py_call(st, L, raise_errors)
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
    """_py_call_held, the GIL taken first."""
    return _py_call_held(st, L, raise_errors)


cdef int _py_call_held(rx_state *st, lua_State *L, bint raise_errors) noexcept:
    """The Python part of redis.call, with lupa's runtime pointed at the calling thread's state
    (a coroutine's, when a script calls from one), as lupa's own crossing points it: the lupa
    calls made below work on the stack of the thread that runs.  The GIL is held."""
    cdef Bridge b = <Bridge>st.bridge
    cdef lua_State **slot = <lua_State **>(<char *><PyObject *>b.runtime + b.state_offset)
    cdef lua_State *saved = slot[0]
    slot[0] = b.cur = L
    try:
        return _py_call_argv(st, b, L, raise_errors)
    finally:
        slot[0] = saved
        b.cur = b.L


cdef int _py_call_argv(rx_state *st, Bridge b, lua_State *L, bint raise_errors) noexcept:
    cdef Engine eng = b.engine
    cdef int n = rx.gettop(L), i, t
    cdef size_t size
    cdef const char *s
    cdef char buf[64]
    # sized once and filled in place (PyList_SET_ITEM takes the reference it is given); a list
    # left partly filled by a bad argument is dropped, and a list frees its empty slots as such
    cdef list argv = PyList_New(n)
    cdef object v
    try:
        for i in range(1, n + 1):
            t = rx.type(L, i)
            if t == RX_TSTRING:
                s = rx.tolstring(L, i, &size)
                if size <= RX_STRING_MAX:
                    v = _short_bytes(b, s, size, i == 1)
                else:
                    v = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
            elif t == RX_TNUMBER:
                v = PyBytes_FromStringAndSize(buf, rx_number_arg(rx.tonumber(L, i), buf, 64))
            else:
                argv = None
                break
            Py_INCREF(v)
            PyList_SET_ITEM(argv, i - 1, v)
        # the arguments are read: the frame is emptied as lupa's crossing empties it (lupa's
        # calls made from Python below read whatever they find on the stack as their results)
        rx.settop(L, 0)
        if argv is None:
            return b._push_value(eng._fail(raise_errors, b"Lua redis lib command arguments must be strings or integers"))
        r = eng._reply_of(raise_errors, argv) if n == 0 else eng._reply_cmd(raise_errors, argv, _command_of(b, eng, argv[0]))
        if type(r) is not bytes:
            return b._push_value(r)  # a refusal's error, when pcall returns it
        t = (<bytes>r)[0]
        if t == 45:  # -: the error of a called command (counted in errorstats already)
            b._hold(_engine_module.error_text((<bytes>r)[:-2]))
            return RET_CMD_ERR
        if t == 42:  # *: rx_push_reply reads the protocol for arrays only (redis.setresp)
            st.resp = eng.client.resp
        b._hold(<bytes>r)
        return RET_REPLY
    except BaseException as e:
        return _raise(b, eng, e)


cdef inline object _command_of(Bridge b, Engine eng, object name):
    """What the dispatch table maps `name` to (None when it lacks it), remembered for the object
    (Bridge.cmd_name)."""
    cdef size_t k = (<size_t><PyObject *>name >> 4) & (RX_NAMES - 1)
    if b.cmd_name[k] == <PyObject *>name:
        return <object>b.cmd_of[k]
    cmd = eng._commands.get(name)
    if cmd is not None:
        Py_INCREF(name)
        Py_INCREF(cmd)
        Py_XDECREF(b.cmd_name[k])
        Py_XDECREF(b.cmd_of[k])
        b.cmd_name[k] = <PyObject *>name
        b.cmd_of[k] = <PyObject *>cmd
    return cmd


cdef inline object _short_bytes(Bridge b, const char *s, size_t size, bint name):
    """The bytes of a short redis.call argument, `size` bytes at s (a Lua string's), from the
    Bridge's cache when they are there (see Bridge.str_at); `name`: the command's name, made the
    command table's key object when it is one (Bridge.name_keys)."""
    cdef size_t h = (<size_t>s >> 4) & (RX_STRINGS - 1)
    cdef PyObject *o = b.str_obj[h]
    if (o != NULL and b.str_at[h] == s and <size_t>PyBytes_GET_SIZE(<object>o) == size
            and memcmp(PyBytes_AS_STRING(<object>o), s, size) == 0):
        return <object>o
    v = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
    if name:
        v = b.name_keys.get(v, v)
    Py_INCREF(v)
    Py_XDECREF(o)
    b.str_obj[h] = <PyObject *>v
    b.str_at[h] = s
    return v


cdef int _py_convert(rx_state *st, lua_State *L, bint raise_errors) noexcept with gil:
    """A reply rx_push_reply leaves to the Python converter (lupa pointed as in _py_call)."""
    cdef Bridge b = <Bridge>st.bridge
    cdef lua_State **slot = <lua_State **>(<char *><PyObject *>b.runtime + b.state_offset)
    cdef lua_State *saved = slot[0]
    slot[0] = b.cur = L
    try:
        return b._push_value(b.engine._to_lua(raise_errors, b.reply))
    except BaseException as e:
        return _raise(b, b.engine, e)
    finally:
        slot[0] = saved
        b.cur = b.L


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


# ---- the call into a script ----------------------------------------------------------------------
cdef int _l_run(lua_State *L) noexcept nogil:
    """Called protected by Bridge.run with the script's function: KEYS and ARGV built here, where
    an allocation error is the run's error (as in lua_env.py's run_eval / run_fcall), then the
    function called (EVAL: no arguments, KEYS and ARGV its globals; FCALL: the two tables)."""
    cdef rx_state *st = <rx_state *>rx.touserdata(L, rx_upvalueindex(1))
    cdef Py_ssize_t i, n = st.nargs, k = st.nkeys
    rx.createtable(L, <int>k, 0)
    for i in range(k):
        rx.pushlstring(L, st.args[i], <size_t>st.lens[i])
        rx.rawseti(L, -2, <int>(i + 1))
    rx.createtable(L, <int>(n - k), 0)
    for i in range(k, n):
        rx.pushlstring(L, st.args[i], <size_t>st.lens[i])
        rx.rawseti(L, -2, <int>(i - k + 1))
    if st.fcall:
        rx.call(L, 2, 1)
    else:
        # raw sets of the names' own strings: what lua_setfield does on env (its metatable has no
        # __newindex), without making the names' strings again (a hash of each, a string table walk)
        rx.rawgeti(L, RX_REGISTRYINDEX, st.env_ref)
        rx.rawgeti(L, RX_REGISTRYINDEX, st.keys_ref)
        rx.pushvalue(L, 2)
        rx.rawset(L, 4)
        rx.rawgeti(L, RX_REGISTRYINDEX, st.argv_ref)
        rx.pushvalue(L, 3)
        rx.rawset(L, 4)
        rx.settop(L, 1)
        rx.call(L, 0, 1)
    # the room Bridge._reply's rx_conv will use once this returns, reserved here where growing the
    # stack (an allocation) may raise; the stack keeps it when the call returns
    st.room = rx.checkstack(L, RX_REPLY_SLOTS) != 0
    return 1


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
    b.name_keys = {name: name for name in engine._commands}
    b.runtime = runtime
    b.st.bridge = <PyObject *>b
    b.st.tstate = rx_tstate_now()
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
    b.state_offset = 0 if L == NULL else _runtime_holds(runtime, L)
    if b.state_offset == 0:
        return None
    if (<unsigned char *>L)[sizeof(void *)] != RX_TTHREAD:  # CommonHeader: next, tt
        return None
    b.L = b.cur = L
    if not _proves(b, runtime, g, f):
        return None
    b.handler = engine.h.handler
    b.box = runtime.table(False)
    env = engine.env
    if type(b.handler) is not b.function_type or type(env) is not b.table_type:
        return None
    b.env = env  # held: its registry reference is st.env_ref
    b.st.env_ref = (<int *>(<char *><PyObject *>env + b.ref_offset))[0]
    cdef int top = rx.gettop(L)
    rx.pushlightuserdata(L, <void *>&b.st)
    rx.pushcclosure(L, <lua_CFunction>_l_run, 1)
    b.run_ref = rx.ref(L, RX_REGISTRYINDEX)
    cdef int k
    for k in range(RX_NKEYS):  # the keys rx_conv reads, as strings it can push without allocating
        rx.pushlstring(L, rx_key_names[k], strlen(rx_key_names[k]))
        b.out.keys[k] = rx.ref(L, RX_REGISTRYINDEX)
    rx.pushlstring(L, "KEYS", 4)
    b.st.keys_ref = rx.ref(L, RX_REGISTRYINDEX)
    rx.pushlstring(L, "ARGV", 4)
    b.st.argv_ref = rx.ref(L, RX_REGISTRYINDEX)
    rx.settop(L, top)
    b.pooled = rx_pool_install(L) != 0
    return b


cdef Py_ssize_t _runtime_holds(object runtime, lua_State *L):
    """The offset of the runtime's lua_State field (its _state), or 0."""
    cdef Py_ssize_t off = sizeof(PyObject), limit = type(runtime).__basicsize__ - sizeof(void *)
    while off <= limit:
        if (<void **>(<char *><PyObject *>runtime + off))[0] == <void *>L:
            return off
        off += sizeof(void *)
    return 0


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
