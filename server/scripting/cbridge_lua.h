/* cbridge_lua.h: the C half of server/scripting/cbridge.pyx, the scripting engine's crossing into Lua.
 *
 * What it is: Lua 5.1's C API as lupa's extension module exports it, resolved at run time with
 * dlsym (no Lua headers are installed: the few types and constants it needs are declared here),
 * and the C functions that run on a Lua stack: redis.call / redis.pcall's argument reading, the
 * push of a command's RESP reply as Lua values, the Lua state's small-block allocator pool,
 * number formatting as Redis's Lua does it, and cmsgpack's decoder.
 *
 * Rule: only what must be C lives here: code that touches a lua_State.  What needs Python objects
 * stays in cbridge.pyx, which declares these functions in its `cdef extern from "cbridge_lua.h"`
 * block (the two lists must agree: a function used there and not defined here fails to compile).
 * Compiled only inside cbridge's extension (setup.py adds this folder to its include path); every
 * function is static.
 *
 * Invariants: nothing here raises a Python exception or takes the GIL's objects; a Lua error is
 * raised with rx.error only where the Lua API allows it (inside a C function Lua called).
 */
#ifndef RAXDB_CBRIDGE_LUA_H
#define RAXDB_CBRIDGE_LUA_H

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
        q = memchr(p, '\r', len);
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
        if (*e != '\r') return 0;
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

/* A protocol line of one integer, "<type><n>\r\n", written into buf (room for 24 bytes);
   its length.  Digit by digit rather than by snprintf, whose format parsing cost more than
   the line (a script's array reply writes one per element). */
static int rx_int_line(char *buf, char type, long long n) {
    int len = 1 + rx_decimal(buf + 1, n);
    buf[0] = type;
    buf[len++] = '\r';
    buf[len++] = '\n';
    return len;
}

/* A script's integer result as reply.integer encodes it (":<n>\r\n"); its length. */
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
    if (!rx_put(o, &type, 1) || !rx_put(o, s, n) || !rx_put(o, "\r\n", 2)) return 0;
    for (i = start; i < start + n; i++)
        if (o->p[i] == '\r' || o->p[i] == '\n') o->p[i] = ' ';
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
        return rx_put_head(o, '$', (long long)size) && rx_put(o, s, size) && rx_put(o, "\r\n", 2);
    case RX_TNUMBER:
        return rx_put_head(o, ':', rx_reply_int(rx.tonumber(L, idx)));
    case RX_TBOOLEAN:
        if (rx.toboolean(L, idx)) return rx_put(o, ":1\r\n", 4);
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

#endif /* RAXDB_CBRIDGE_LUA_H */
