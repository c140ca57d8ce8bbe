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

from raxdb.protocol.reply import SMALL_INTS as _SMALL_INT_REPLIES
from raxdb.server.scripting import engine as _engine_module
from raxdb.server.scripting.luanum import LuaRaise

cdef extern from *:
    """
    #include <dlfcn.h>
    #include <limits.h>
    #include <math.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <stddef.h>
    #include <sys/mman.h>

    /* Lua 5.1's C API, as lupa.lua51 exports it (declared here: no Lua headers are installed). */
    typedef struct lua_State lua_State;
    typedef double lua_Number;
    typedef int (*lua_CFunction)(lua_State *L);
    typedef void *(*rx_Alloc)(void *ud, void *ptr, size_t osize, size_t nsize);
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
        void (*rawget)(lua_State *, int);
        void (*rawset)(lua_State *, int);
        int (*next)(lua_State *, int);
        int (*getmetatable)(lua_State *, int);
        void (*getfield)(lua_State *, int, const char *);
        void (*setfield)(lua_State *, int, const char *);
        int (*error)(lua_State *);
        int (*checkstack)(lua_State *, int);
        int (*toboolean)(lua_State *, int);
        void (*call)(lua_State *, int, int);
        int (*pcall)(lua_State *, int, int, int);
        int (*ref)(lua_State *, int);
        rx_Alloc (*getallocf)(lua_State *, void **);
        void (*setallocf)(lua_State *, rx_Alloc, void *);
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
        RX_SYM(rawget, "lua_rawget") RX_SYM(rawset, "lua_rawset") RX_SYM(next, "lua_next")
        RX_SYM(getmetatable, "lua_getmetatable")
        RX_SYM(getfield, "lua_getfield") RX_SYM(setfield, "lua_setfield")
        RX_SYM(error, "lua_error") RX_SYM(checkstack, "lua_checkstack")
        RX_SYM(toboolean, "lua_toboolean") RX_SYM(call, "lua_call") RX_SYM(pcall, "lua_pcall")
        RX_SYM(ref, "luaL_ref") RX_SYM(getallocf, "lua_getallocf") RX_SYM(setallocf, "lua_setallocf")
        #undef RX_SYM
        return 1;
    }

    /* The Lua state's allocator for its small blocks (strings, tables, their parts, closures: what
       every script call allocates and Lua's collector frees): a free list per 16-byte size class,
       carved from one region reserved at bind, in place of malloc and free, which cost ~150
       instructions a call against ~20 here.  Lua passes every block's size back on realloc and
       free (osize), so a block carries no header; a block outside the region (allocated before
       the pool was installed, larger than RX_POOL_MAX, or after the region ran out) belongs to
       the allocator the state had before, which is called for it.  The pool serves one state,
       which one thread runs at a time (as a lua_State requires), and lives as long as it:
       lua_close's last call frees the main thread's block (allocated before the pool), and the
       pool goes with it.  Lua counts its memory itself (used_memory_lua), whatever allocates. */
    #define RX_POOL_STEP 16
    #define RX_POOL_MAX 512
    #define RX_POOL_REGION ((size_t)64 << 20)
    #define RX_CLASS(n) (((n) + RX_POOL_STEP - 1) / RX_POOL_STEP)
    typedef struct rx_pool {
        char *base, *end, *next;            /* the region, and its first byte never handed out */
        void *free[RX_CLASS(RX_POOL_MAX) + 1];  /* a free list per class (RX_CLASS) */
        rx_Alloc prev;
        void *prev_ud;
        void *main;                          /* the main thread's block */
    } rx_pool;

    static void *rx_pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
        rx_pool *P = (rx_pool *)ud;
        void *q;
        size_t c;
        if (ptr != NULL && ((char *)ptr < P->base || (char *)ptr >= P->end)) {
            q = P->prev(P->prev_ud, ptr, osize, nsize);
            if (nsize == 0 && ptr == P->main) {  /* lua_close is done with the state */
                munmap(P->base, RX_POOL_REGION);
                free(P);
            }
            return q;
        }
        if (ptr != NULL && nsize != 0 && nsize <= RX_POOL_MAX && RX_CLASS(nsize) == RX_CLASS(osize))
            return ptr;  /* a resize within the block's class */
        q = NULL;
        if (nsize != 0 && nsize <= RX_POOL_MAX) {
            c = RX_CLASS(nsize);
            q = P->free[c];
            if (q != NULL) {
                P->free[c] = *(void **)q;
            } else if ((size_t)(P->end - P->next) >= c * RX_POOL_STEP) {
                q = P->next;
                P->next += c * RX_POOL_STEP;
            }
        }
        if (q == NULL && nsize != 0) {
            q = P->prev(P->prev_ud, NULL, 0, nsize);
            if (q == NULL)  /* Lua counts on a shrink never failing: the block stays */
                return ptr != NULL && nsize <= osize ? ptr : NULL;
        }
        if (ptr != NULL) {  /* one of the pool's: moved (its bytes kept) or freed */
            if (q != NULL) memcpy(q, ptr, osize < nsize ? osize : nsize);
            c = RX_CLASS(osize);
            *(void **)ptr = P->free[c];
            P->free[c] = ptr;
        }
        return q;
    }

    /* The pool installed as L's allocator; 0 (nothing changed) when the region cannot be had. */
    static int rx_pool_install(lua_State *L) {
        rx_pool *P = (rx_pool *)calloc(1, sizeof(rx_pool));
        void *r;
        if (P == NULL) return 0;
        r = mmap(NULL, RX_POOL_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
        if (r == MAP_FAILED) { free(P); return 0; }
        P->base = P->next = (char *)r;
        P->end = P->base + RX_POOL_REGION;
        P->prev = rx.getallocf(L, &P->prev_ud);
        P->main = (void *)L;
        rx.setallocf(L, rx_pool_alloc, P);
        return 1;
    }

    /* Redis's luaArgsToRedisArgv: a number argument as "%.17g" (lua_tolstring would lose precision).
       An integral number below 1e17 in magnitude (a count, a score, a timestamp) prints as its
       decimal digits under "%.17g": those are written here without snprintf's float formatting.
       -0.0 is integral but prints "-0": snprintf's. */
    /* n in decimal (a '-' first when negative) written at buf, which has room for 20 bytes; the
       number of bytes written.  redis.call's integral arguments and the reply lines below use it. */
    static int rx_decimal(char *buf, long long n) {
        char tmp[20];
        unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
        int k = 0, len = 0;
        do { tmp[k++] = (char)('0' + u % 10); u /= 10; } while (u);
        if (n < 0) buf[len++] = '-';
        while (k) buf[len++] = tmp[--k];
        return len;
    }

    /* The integer of a RESP line that starts at p (after its ':', '$' or '*'), as strtoll reads it,
       for the lines raxdb's own encoder wrote (an optional '-', then digits): *e is left at the
       first byte after the digits.  strtoll's locale and base handling cost more than the line. */
    static long long rx_line_int(const char *p, char **e) {
        unsigned long long u = 0;
        int neg = *p == '-';
        if (neg) p++;
        while (*p >= '0' && *p <= '9') u = u * 10 + (unsigned long long)(*p++ - '0');
        *e = (char *)p;
        return neg ? (long long)(0ULL - u) : (long long)u;
    }

    static int rx_number_arg(lua_Number n, char *buf, int size) {
        int len;
        if (n > -1e17 && n < 1e17 && n == (lua_Number)(long long)n && !(n == 0 && signbit(n)) && size >= 20) {
            len = rx_decimal(buf, (long long)n);
            buf[len] = 0;
            return len;
        }
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
            rx.pushnumber(L, (lua_Number)rx_line_int(p + 1, &e));
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
            n = rx_line_int(p + 1, &e);
            if (*e != '\\r') return 0;
            if (n < 0) { rx.pushboolean(L, 0); return 1; }
            if (n > 0x7fffffff) return 0;
            top = rx.gettop(L);
            rx.createtable(L, (int)n, 0);
            q = e + 2;
            for (i = 1; i <= n; i++) {
                if (q >= end) goto other;
                if (*q == ':') {
                    m = rx_line_int(q + 1, &e);
                    rx.pushnumber(L, (lua_Number)m);
                    q = e + 2;
                } else if (*q == '$') {
                    m = rx_line_int(q + 1, &e);
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

    /* The error of a command the script called: {err = s, ignore_error_stats_update = true}, as
       lua_env.py's cmd_err builds it. */
    static void rx_push_cmd_err(lua_State *L, const char *s, Py_ssize_t len) {
        rx.createtable(L, 0, 2);
        rx.pushlstring(L, s, (size_t)len);
        rx.setfield(L, -2, "err");
        rx.pushboolean(L, 1);
        rx.setfield(L, -2, "ignore_error_stats_update");
    }

    /* A protocol line of one integer, "<type><n>\\r\\n", written into buf (room for 24 bytes);
       its length.  Digit by digit rather than by snprintf, whose format parsing cost more than
       the line (a script's array reply writes one per element). */
    static int rx_int_line(char *buf, char type, long long n) {
        int len = 1 + rx_decimal(buf + 1, n);
        buf[0] = type;
        buf[len++] = '\\r';
        buf[len++] = '\\n';
        return len;
    }

    /* A script's integer result as reply.integer encodes it (":<n>\\r\\n"); its length. */
    static int rx_integer_reply(long long n, char *buf, int size) {
        return rx_int_line(buf, ':', n);
    }

    /* lupa's number conversion (py_from_lua): an integral value as an integer. */
    static int rx_integral(lua_Number n, long long *out) {
        ptrdiff_t i = (ptrdiff_t)n;
        *out = (long long)i;
        return n == (lua_Number)i;
    }

    /* ---- a script's result as its reply: Redis 7.0's luaReplyToRedisReply as convert.py's
       lua_to_resp implements it, for a script at RESP2 (no redis.setresp(3)): a string, a number
       (truncated; NaN and out of range LLONG_MIN), a boolean (true :1, false the caller's null),
       nil and a function (the caller's null), a table with an ok string, a table with an err
       string at the top, and an array (up to its first nil) of those, nested up to
       RX_REPLY_DEPTH.  Everything else (a RESP3 shape's table, userdata, deeper nesting, an error
       inside an array, which engine.py counts in errorstats, a top-level error whose errorstats
       count needs more than a raw read) gives 0 and is left to convert.py.  Tables are read raw,
       as Redis reads them; no call here allocates in Lua or can raise (the stack room was
       reserved by _l_run). */
    /* A level of nesting holds one stack slot (its table), the deepest level three more: 16 slots
       in all, fewer than the LUA_MINSTACK (20) Lua guarantees a C function on entry, so that
       reserving them in _l_run never grows the stack (which a collection would shrink again). */
    #define RX_REPLY_DEPTH 12
    #define RX_REPLY_SLOTS 16
    enum { RX_KEY_ERR, RX_KEY_OK, RX_KEY_DOUBLE, RX_KEY_BIG_NUMBER, RX_KEY_VERBATIM, RX_KEY_MAP,
           RX_KEY_SET, RX_KEY_IGNORE, RX_NKEYS };
    static const char *const rx_key_names[RX_NKEYS] = {
        "err", "ok", "double", "big_number", "verbatim_string", "map", "set", "ignore_error_stats_update"};

    typedef struct {
        char *p;                 /* the reply so far (malloc'd, kept between runs) */
        size_t len, cap;
        const char *null;        /* the caller's null reply */
        size_t null_len;
        int keys[RX_NKEYS];      /* rx_key_names' strings, registry references */
    } rx_out;

    static int rx_put(rx_out *o, const char *s, size_t n) {
        if (o->cap - o->len < n) {
            size_t cap = o->cap ? o->cap : 256;
            char *p;
            while (cap - o->len < n) {
                if (cap > ((size_t)-1) / 4) return 0;
                cap *= 2;
            }
            p = realloc(o->p, cap);
            if (p == NULL) return 0;
            o->p = p;
            o->cap = cap;
        }
        memcpy(o->p + o->len, s, n);
        o->len += n;
        return 1;
    }

    static int rx_put_head(rx_out *o, char type, long long n) {
        char b[32];
        return rx_put(o, b, (size_t)rx_int_line(b, type, n));
    }

    /* A status or an error: its text with CR and LF as spaces (convert.clean). */
    static int rx_put_line(rx_out *o, char type, const char *s, size_t n) {
        size_t i, start = o->len + 1;
        if (!rx_put(o, &type, 1) || !rx_put(o, s, n) || !rx_put(o, "\\r\\n", 2)) return 0;
        for (i = start; i < start + n; i++)
            if (o->p[i] == '\\r' || o->p[i] == '\\n') o->p[i] = ' ';
        return 1;
    }

    /* convert.py's lua_number_to_int: C's truncation; NaN and out of range LLONG_MIN. */
    static long long rx_reply_int(lua_Number d) {
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return (long long)d;
        return LLONG_MIN;
    }

    /* t[key] pushed, raw (t an absolute index); its type. */
    static int rx_field(lua_State *L, int t, const rx_out *o, int key) {
        rx.rawgeti(L, RX_REGISTRYINDEX, o->keys[key]);
        rx.rawget(L, t);
        return rx.type(L, -1);
    }

    static int rx_conv(lua_State *L, rx_out *o, int idx, int depth);

    static int rx_conv_table(lua_State *L, rx_out *o, int t, int depth) {
        int top = rx.gettop(L), k;
        long long n = 0, i;
        size_t size;
        const char *s;
        if (depth >= RX_REPLY_DEPTH) return 0;
        for (;;) {  /* the array's length: up to the first nil, as Redis reads it */
            rx.rawgeti(L, t, (int)(n + 1));
            k = rx.type(L, -1);
            rx.settop(L, top);
            if (k == RX_TNIL) break;
            if (++n >= 0x7fffffff) return 0;
        }
        /* a status, an error or a RESP3 shape, checked in Redis's order, by raw reads of their
           keys; an empty array part is first asked whether the table has any key at all (a
           lua_next from nil, which cannot raise).  No cheaper test proves a non-empty array has
           no other keys: a lua_next from its last index skips the hash part's nodes before that
           index's when the index itself lives in the hash part. */
        k = 1;
        if (n == 0) {
            rx.pushnil(L);
            k = rx.next(L, t);
            rx.settop(L, top);
        }
        if (k) {
            if (rx_field(L, t, o, RX_KEY_ERR) == RX_TSTRING) {
                s = rx.tolstring(L, -1, &size);  /* held by t */
                /* the error's errorstats count: engine.py's _counted reads
                   ignore_error_stats_update through a metatable; only a plain table at the top
                   whose field is nil or false (counted now) is decided here.  An error inside an
                   array counts too, as Redis counts it: engine.py's, through convert.py. */
                if (depth > 0 || rx.getmetatable(L, t)) { rx.settop(L, top); return 0; }
                k = rx_field(L, t, o, RX_KEY_IGNORE);
                if (k != RX_TNIL && !(k == RX_TBOOLEAN && !rx.toboolean(L, -1))) {
                    rx.settop(L, top);
                    return 0;
                }
                k = rx_put_line(o, '-', s, size);
                rx.settop(L, top);
                return k;
            }
            rx.settop(L, top);
            if (rx_field(L, t, o, RX_KEY_OK) == RX_TSTRING) {
                s = rx.tolstring(L, -1, &size);
                k = rx_put_line(o, '+', s, size);
                rx.settop(L, top);
                return k;
            }
            k = rx_field(L, t, o, RX_KEY_DOUBLE) == RX_TNUMBER
                || rx_field(L, t, o, RX_KEY_BIG_NUMBER) == RX_TSTRING
                || rx_field(L, t, o, RX_KEY_VERBATIM) == RX_TTABLE
                || rx_field(L, t, o, RX_KEY_MAP) == RX_TTABLE
                || rx_field(L, t, o, RX_KEY_SET) == RX_TTABLE;
            rx.settop(L, top);
            if (k) return 0;  /* a RESP3 shape: convert.py's */
        }
        if (!rx_put_head(o, '*', n)) return 0;
        for (i = 1; i <= n; i++) {
            rx.rawgeti(L, t, (int)i);
            k = rx_conv(L, o, top + 1, depth + 1);
            rx.settop(L, top);
            if (!k) return 0;
        }
        return 1;
    }

    /* The value at idx (absolute) appended to o->p as its reply; 0 when it is left to convert.py
       (o->p then holds a part: the caller discards it).  The stack is as it was, either way. */
    static int rx_conv(lua_State *L, rx_out *o, int idx, int depth) {
        size_t size;
        const char *s;
        switch (rx.type(L, idx)) {
        case RX_TSTRING:
            s = rx.tolstring(L, idx, &size);
            return rx_put_head(o, '$', (long long)size) && rx_put(o, s, size) && rx_put(o, "\\r\\n", 2);
        case RX_TNUMBER:
            return rx_put_head(o, ':', rx_reply_int(rx.tonumber(L, idx)));
        case RX_TBOOLEAN:
            if (rx.toboolean(L, idx)) return rx_put(o, ":1\\r\\n", 4);
            return rx_put(o, o->null, o->null_len);
        case RX_TNIL:
        case RX_TFUNCTION:
        case RX_TTHREAD:
            return rx_put(o, o->null, o->null_len);
        case RX_TTABLE:
            return rx_conv_table(L, o, idx, depth);
        }
        return 0;  /* userdata: what lupa makes of it is convert.py's to judge */
    }

    /* ---- cmsgpack.unpack's common case: msgpack_lua.py's Lua decoder, rule for rule, in C.  An
       input of exactly one value made of nil, booleans, integers of up to 32 bits, floats other
       than zeros, subnormals, infinities and NaN, strings, arrays and maps, nested less than
       RX_MP_DEPTH deep, is decoded here; anything else is left to the Python `unpack` (0 returned,
       the stack's partial values dropped by the caller).  Tables are built as lua-cmsgpack builds
       them (an empty new table, one raw set per element, in input order: the same layout, so the
       same `#` and `next` order); a nil map key raises lua_settable's "table index is nil" from
       this C frame, unplaced, as there. */
    #define RX_MP_DEPTH 64
    /* 0xcc..0xdf, the types followed by a big-endian count: its width in bytes (0: not decoded
       here) and what it counts (an unsigned or signed integer's value, a string's, an array's or a
       map's length) */
    static const int RX_MP_WIDTH[20] = {1, 2, 4, 0, 1, 2, 4, 0, 0, 0, 0, 0, 0, 1, 2, 4, 2, 4, 2, 4};
    static const char RX_MP_KIND[21] = "uuu-iii------sssaamm";

    static int rx_mp_value(lua_State *L, const unsigned char **pp, const unsigned char *end, int depth);

    /* A table of n elements (a map: n pairs) whose encoding starts at *pp. */
    static int rx_mp_table(lua_State *L, const unsigned char **pp, const unsigned char *end,
                           unsigned long n, int depth, int map) {
        unsigned long i;
        if (depth >= RX_MP_DEPTH || !rx.checkstack(L, 3)) return 0;
        rx.createtable(L, 0, 0);
        for (i = 1; i <= n; i++) {
            if (map) {
                if (!rx_mp_value(L, pp, end, depth + 1) || !rx_mp_value(L, pp, end, depth + 1)) return 0;
                rx.rawset(L, -3);
            } else {
                if (i > INT_MAX || !rx_mp_value(L, pp, end, depth + 1)) return 0;
                rx.rawseti(L, -2, (int)i);
            }
        }
        return 1;
    }

    /* The value at *pp pushed, *pp moved past it; 0 when it is left to Python. */
    static int rx_mp_value(lua_State *L, const unsigned char **pp, const unsigned char *end, int depth) {
        const unsigned char *p = *pp;
        unsigned int b;
        unsigned long n = 0;
        unsigned long long bits = 0;
        int k = 0, i, kind = 0;
        double d;
        float f;
        unsigned int bits32;
        if (p >= end) return 0;
        b = *p++;
        if (b <= 0x7f) { rx.pushnumber(L, (lua_Number)b); *pp = p; return 1; }
        if (b >= 0xe0) { rx.pushnumber(L, (lua_Number)((int)b - 256)); *pp = p; return 1; }
        if (b >= 0xa0 && b <= 0xbf) { n = b - 0xa0; kind = 's'; }
        else if (b >= 0x90 && b <= 0x9f) { n = b - 0x90; kind = 'a'; }
        else if (b >= 0x80 && b <= 0x8f) { n = b - 0x80; kind = 'm'; }
        else {
            switch (b) {
            case 0xc0: rx.pushnil(L); *pp = p; return 1;
            case 0xc2: rx.pushboolean(L, 0); *pp = p; return 1;
            case 0xc3: rx.pushboolean(L, 1); *pp = p; return 1;
            case 0xcb:  /* float64: normal numbers only */
                if (end - p < 8) return 0;
                for (i = 0; i < 8; i++) bits = (bits << 8) | p[i];
                if (((bits >> 52) & 0x7ff) == 0 || ((bits >> 52) & 0x7ff) == 0x7ff) return 0;
                memcpy(&d, &bits, 8);
                rx.pushnumber(L, (lua_Number)d);
                *pp = p + 8;
                return 1;
            case 0xca:  /* float32, likewise */
                if (end - p < 4) return 0;
                bits32 = ((unsigned int)p[0] << 24) | ((unsigned int)p[1] << 16)
                         | ((unsigned int)p[2] << 8) | p[3];
                if (((bits32 >> 23) & 0xff) == 0 || ((bits32 >> 23) & 0xff) == 0xff) return 0;
                memcpy(&f, &bits32, 4);
                rx.pushnumber(L, (lua_Number)f);
                *pp = p + 4;
                return 1;
            default:  /* a count of 1, 2 or 4 bytes follows; else 64-bit integers, ext and bin types, 0xc1 */
                if (b < 0xcc || b > 0xdf || RX_MP_WIDTH[b - 0xcc] == 0) return 0;
                k = RX_MP_WIDTH[b - 0xcc];
                kind = RX_MP_KIND[b - 0xcc];
            }
            if (end - p < k) return 0;
            for (i = 0; i < k; i++) n = (n << 8) | p[i];
            p += k;
            if (kind == 'u') { rx.pushnumber(L, (lua_Number)n); *pp = p; return 1; }
            if (kind == 'i') {
                long long v = (long long)n;
                if (v >= (1LL << (8 * k - 1))) v -= 1LL << (8 * k);
                rx.pushnumber(L, (lua_Number)v);
                *pp = p;
                return 1;
            }
        }
        if (kind == 's') {
            if ((unsigned long)(end - p) < n) return 0;
            rx.pushlstring(L, (const char *)p, (size_t)n);
            *pp = p + n;
            return 1;
        }
        *pp = p;
        return rx_mp_table(L, pp, end, n, depth, kind == 'm');
    }

    /* The lua_CFunction: for a string argument decoded whole, true and its value; else nothing
       (the Lua front then calls the Python unpack, which decodes, or raises, from the start). */
    static int rx_mp_unpack(lua_State *L) {
        size_t len;
        const unsigned char *p, *end;
        int top = rx.gettop(L);
        if (top < 1 || rx.type(L, 1) != RX_TSTRING) return 0;
        p = (const unsigned char *)rx.tolstring(L, 1, &len);  /* held by the argument */
        end = p + len;
        rx.pushboolean(L, 1);
        if (!rx_mp_value(L, &p, end, 0) || p != end) {
            rx.settop(L, top);
            return 0;
        }
        return 2;
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
    bint room            # _l_run reserved the stack room rx_conv may use (RX_REPLY_SLOTS)


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

    def __dealloc__(self):
        cdef int i
        for i in range(RX_STRINGS):
            Py_XDECREF(self.str_obj[i])
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
    """The Python part of redis.call, with lupa's runtime pointed at the calling thread's state
    (a coroutine's, when a script calls from one), as lupa's own crossing points it: the lupa
    calls made below work on the stack of the thread that runs."""
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
        r = eng._reply_of(raise_errors, argv)
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
        rx.rawgeti(L, RX_REGISTRYINDEX, st.env_ref)
        rx.pushvalue(L, 2)
        rx.setfield(L, -2, "KEYS")
        rx.pushvalue(L, 3)
        rx.setfield(L, -2, "ARGV")
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
