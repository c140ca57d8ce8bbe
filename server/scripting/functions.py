"""FUNCTION libraries (Redis 7.0): load, call, list, delete, flush, dump and restore.

A library is Lua code starting with `#!lua name=<lib>`; running it once registers functions with
`redis.register_function`.  All libraries share one Lua state (separate from EVAL's).  While a
library loads, its globals are only `redis` with register_function, log and the LOG_* / version
constants; when its functions run they see the full script environment minus KEYS/ARGV (keys and
arguments are the callback's parameters).  Both are views of the same globals proxy, switched by
`use_env`, because the callbacks keep the environment they were created in — as in Redis.

Loading is transactional: the new library replaces nothing until its code ran, registered at least
one function and no function name collides with another library.

DUMP writes Redis's payload format (RDB_OPCODE_FUNCTION2 + library code as an RDB string, RDB
version 10, CRC64-Jones); strings are stored uncompressed, which Redis reads back, and RESTORE also
reads LZF-compressed strings as Redis writes them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from raxdb.protocol.request import split_inline_args
from raxdb.server.base.errors import CommandError
from raxdb.server.base.lazyre import LazyPattern
from raxdb.server.scripting import runner
from raxdb.server.table.scriptflags import (
    FLAG_ALLOW_CROSS_SLOT,
    FLAG_ALLOW_OOM,
    FLAG_NAMES,
    FLAG_NO_CLUSTER,
    FLAG_NO_WRITES,
    NO_CLUSTER,
)

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

_NAME_OK = LazyPattern(rb"[A-Za-z0-9_]+\Z")
NAME_ERROR = "Library names can only contain letters, numbers, or underscores(_) and must be at least one " \
             "character long"
LOAD_TIMEOUT_MS = 500


class Function:
    __slots__ = ("name", "fn", "flags", "description", "library", "no_cluster", "no_writes", "allow_oom",
                 "cross_slot")

    def __init__(self, name: bytes, fn: Any, flags: int, description: bytes | None, library: Library) -> None:
        self.name = name
        self.fn = fn
        self.flags = flags
        self.description = description
        self.library = library
        # What FCALL tests of the flags, settled here, when the library loads (a function's flags
        # never change): each call reads a truth value, not a mask of the flags.
        self.no_cluster = bool(flags & FLAG_NO_CLUSTER)
        self.no_writes = bool(flags & FLAG_NO_WRITES)
        self.allow_oom = bool(flags & FLAG_ALLOW_OOM)
        self.cross_slot = bool(flags & FLAG_ALLOW_CROSS_SLOT)

    def flag_names(self) -> list[bytes]:
        return [n for n, bit in FLAG_NAMES.items() if self.flags & bit]


class Library:
    __slots__ = ("name", "code", "functions")

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name
        self.code = code
        self.functions: dict[bytes, Function] = {}


def _folded_names(lib: Library) -> dict[bytes, bytes]:
    """A library's function names by their lower-case form; of names equal but for case, the first
    registered (the one Redis's case-insensitive dict keeps)."""
    folded: dict[bytes, bytes] = {}
    for fname in lib.functions:
        folded.setdefault(fname.lower(), fname)
    return folded


def parse_metadata(code: bytes) -> tuple[bytes, int]:
    """(library name, offset of the Lua code) from the `#!lua name=...` line, with the checks and
    errors of functionExtractLibMetaData and then functionsCreateWithLibraryCtx, in their order: the
    line is split as sdssplitargs splits (quotes allowed), `name=` matches in any case, the name is
    checked before the engine."""
    if not code.startswith(b"#!"):
        raise CommandError("ERR Missing library metadata")
    nl = code.find(b"\n")
    parts = split_inline_args(code[:nl]) if nl >= 0 else None
    if not parts:
        raise CommandError("ERR Invalid library metadata")
    name = None
    for p in parts[1:]:
        if p[:5].lower() == b"name=":
            if name is not None:
                raise CommandError("ERR Invalid metadata value, name argument was given multiple times")
            name = p[5:]
        else:
            raise CommandError(b"ERR Invalid metadata value given: " + p)
    if name is None:
        raise CommandError("ERR Library name was not given")
    if not _NAME_OK.match(name):
        raise CommandError("ERR " + NAME_ERROR)
    engine_name = parts[0][2:]
    if engine_name.lower() != b"lua":
        raise CommandError(b"ERR Engine '" + engine_name + b"' not found")
    return name, nl


class FunctionsEngine:
    def __init__(self, server: Server) -> None:
        # Lua (lupa, the engine, its conversions) is imported by the first library, not at start-up:
        # a server that never loads a function never loads Lua.
        from raxdb.server.scripting import engine as eng

        self.server = server
        self.engine = eng.Engine(server, b"@user_function", functions=True)
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}  # by lower-cased name
        self._forget()
        self._build_load_env()

    def _forget(self) -> None:
        """Empty `lookup`'s memory of recent names: the registry changed (every change of
        `functions` calls this)."""
        self._recent_name: list[bytes | None] = [None] * 16
        self._recent: list[Function | None] = [None] * 16

    def _build_load_env(self) -> None:
        e = self.engine
        h = e.h
        api = h.strict(h.new_table())
        api[b"register_function"] = self._register_function
        api[b"log"] = e.redis[b"log"]
        for k in (b"LOG_DEBUG", b"LOG_VERBOSE", b"LOG_NOTICE", b"LOG_WARNING", b"REDIS_VERSION",
                  b"REDIS_VERSION_NUM"):
            api[k] = e.redis[k]
        h.mark_functions(api)
        self.load_env = h.strict(h.new_table())
        self.load_env[b"redis"] = h.protect(api)
        self._loading: Library | None = None

    # ---- loading ---------------------------------------------------------------------------------
    def load(self, code: bytes, replace: bool) -> bytes:
        name, start = parse_metadata(code)
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise CommandError(b"ERR Library '" + name + b"' already exists")
        lib = self._run_library(name, code, start)
        self._commit([lib], replace)
        return name

    def _run_library(self, name: bytes, code: bytes, start: int) -> Library:
        from lupa.lua51 import lua_type

        from raxdb.server.scripting import convert
        from raxdb.server.scripting import engine as eng

        e = self.engine
        h = e.h
        f, err = h.compile(code[start:], b"@user_function")
        if f is None:
            raise CommandError(b"ERR Error compiling function: " + convert.clean(eng.lua_tostring(err)))
        lib = Library(name, code)
        self._loading = lib
        h.use_env(self.load_env)
        deadline = [time.monotonic() + LOAD_TIMEOUT_MS / 1000]

        def timeout_hook() -> Any:
            return h.err(b"ERR FUNCTION LOAD timeout") if time.monotonic() > deadline[0] else None

        h.hook_count(timeout_hook, eng.HOOK_INSTRUCTIONS)
        try:
            ok, value = h.run(f)
        finally:
            e.install_hook()
            h.use_env(e.env)
            self._loading = None
        if not ok:
            msg = value[b"err"] if lua_type(value) == "table" else value
            raise CommandError(b"ERR Error registering functions: " + convert.clean(eng.lua_tostring(msg)))
        if not lib.functions:
            raise CommandError("ERR No functions registered")
        return lib

    def _commit(self, libs: list[Library], replace: bool) -> None:
        """Install `libs` atomically: on a function-name collision nothing changes.  Names collide
        regardless of case, as in Redis's server-wide function dict (one library may still register
        'f' and 'F': its own dict is case-sensitive, and FCALL then finds the first)."""
        replaced = {lib.name for lib in libs if lib.name in self.libraries} if replace else set()
        taken: dict[bytes, bytes] = {}
        for folded, fn in self.functions.items():
            if fn.library.name not in replaced:
                taken[folded] = fn.library.name
        for lib in libs:
            for folded, fname in _folded_names(lib).items():
                if folded in taken:
                    raise CommandError(b"ERR Function " + fname + b" already exists")
                taken[folded] = lib.name
        for name in replaced:
            self._drop(name)
        for lib in libs:
            self.libraries[lib.name] = lib
            for folded, fname in _folded_names(lib).items():
                self.functions[folded] = lib.functions[fname]
        self._forget()

    def _drop(self, name: bytes) -> None:
        lib = self.libraries.pop(name)
        for folded in _folded_names(lib):
            self.functions.pop(folded, None)
        self._forget()

    def lookup(self, name: bytes) -> Function | None:
        """The function FCALL `name` runs (names are case-insensitive, as in Redis 7.0).  The
        registry's keys are lower case, so a name found as sent is the one lowered: the name as
        clients mostly send it is looked up without a lowered copy (a method call, a new bytes
        object and its hash).  The last name found for each value of its length plus its last
        byte (low four bits) is remembered, as the script cache remembers shas: an application's
        few functions, called over and over, are found by comparing the name's bytes, not by
        hashing them (FCALL's argument is a new bytes object each time).  Any change of the
        registry forgets them (`_forget`)."""
        n = len(name)
        i = (n + name[n - 1]) & 15 if n else 0
        known = self._recent_name[i]
        if known is not None and known == name:
            return self._recent[i]
        fn = self.functions.get(name)
        if fn is None:
            fn = self.functions.get(name.lower())
        if fn is not None:
            self._recent_name[i] = name
            self._recent[i] = fn
        return fn

    def _register_function(self, *args: Any) -> None:
        from lupa.lua51 import lua_type

        from raxdb.server.scripting import engine as eng

        e = self.engine
        lib = self._loading
        if lib is None:
            e.raise_error(b"redis.register_function can only be called on FUNCTION LOAD command")
        name = callback = description = None
        flags = 0
        if len(args) == 1:
            t = args[0]
            if lua_type(t) != "table":
                e.raise_error(b"calling redis.register_function with a single argument is only applicable to "
                              b"Lua table (representing named arguments).")
            for k, v in t.items():
                if k == b"function_name":
                    if not eng.is_lua_string(v):
                        e.raise_error(b"function_name argument given to redis.register_function must be a string")
                    name = eng.lua_tostring(v)
                elif k == b"callback":
                    if lua_type(v) != "function":
                        e.raise_error(b"callback argument given to redis.register_function must be a function")
                    callback = v
                elif k == b"description":
                    if not eng.is_lua_string(v):
                        e.raise_error(b"description argument given to redis.register_function must be a string")
                    description = eng.lua_tostring(v)
                elif k == b"flags":
                    if lua_type(v) != "table":
                        e.raise_error(b"flags argument to redis.register_function must be a table representing "
                                      b"function flags")
                    for _, fl in v.items():
                        bit = FLAG_NAMES.get(fl) if type(fl) is bytes else None
                        if bit is None:
                            e.raise_error(b"unknown flag given")
                        flags |= bit
                else:
                    e.raise_error(b"unknown argument given to redis.register_function")
            if name is None:
                e.raise_error(b"redis.register_function must get a function name argument")
            if callback is None:
                e.raise_error(b"redis.register_function must get a callback argument")
        elif len(args) == 2:
            name, callback = args
            if not eng.is_lua_string(name):
                e.raise_error(b"first argument to redis.register_function must be a string")
            name = eng.lua_tostring(name)
            if lua_type(callback) != "function":
                e.raise_error(b"second argument to redis.register_function must be a function")
        else:
            e.raise_error(b"wrong number of arguments to redis.register_function")
        if not _NAME_OK.match(name):
            e.raise_error(NAME_ERROR.encode())
        if name in lib.functions:
            e.raise_error(b"Function already exists in the library")
        lib.functions[name] = Function(name, callback, flags, description, lib)

    # ---- the other subcommands --------------------------------------------------------------------
    def delete(self, name: bytes) -> None:
        if name not in self.libraries:
            raise CommandError("ERR Library not found")
        self._drop(name)

    def flush(self) -> None:
        from raxdb.server.scripting import engine as eng

        self.libraries = {}
        self.functions = {}
        self._forget()
        self.engine = eng.Engine(self.server, b"@user_function", functions=True)
        self._build_load_env()

    def call(self, c: Client, argv: list[bytes], ro_command: bool) -> bytes:
        fn = self.lookup(argv[1])
        if fn is None:
            raise CommandError("ERR Function not found")
        numkeys = runner.numkeys(argv, "ERR Bad number of keys provided")
        if fn.no_cluster and self.server.cluster is not None:
            raise CommandError(NO_CLUSTER)
        if ro_command and not fn.no_writes:
            raise CommandError("ERR Can not execute a script with write flag using *_ro command.")
        return self.engine.run(c, fn.fn, fn.name, argv, numkeys, ro_command or fn.no_writes, True, fn.allow_oom,
                               fn.cross_slot)

    # ---- DUMP / RESTORE ----------------------------------------------------------------------------
    def dump(self, compress: bool = True) -> bytes:
        """FUNCTION DUMP: each library as RDB_OPCODE_FUNCTION2 and its code (rdbSaveFunctions)."""
        from raxdb.storage import rdb  # on first use: start-up does not import the RDB format (#56)
        w = rdb.Writer(compress)
        for lib in self.libraries.values():
            w.buf.append(rdb.OP_FUNCTION2)
            w.string(lib.code)
        return rdb.seal(w.buf, rdb.format_of(self.server.config.compat_version))

    def restore(self, payload: bytes, policy: bytes) -> None:
        from raxdb.storage import rdb
        body = rdb.unseal(payload, True, rdb.format_of(self.server.config.compat_version))
        if body is None:
            raise CommandError("ERR DUMP payload version or checksum are wrong")
        codes = []
        r = rdb.Reader(body)
        while r.pos < len(body):
            if r.byte() != rdb.OP_FUNCTION2:
                raise CommandError("ERR given type is not a function")
            try:
                codes.append(r.string())
            except rdb.RDBError:
                raise CommandError("ERR can not read function code from payload") from None
        libs = []
        names = set()
        for code in codes:
            name, start = parse_metadata(code)
            if name in names:
                raise CommandError(b"ERR Library '" + name + b"' already exists")
            names.add(name)
            libs.append(self._run_library(name, code, start))
        if policy == b"flush":
            seen: set[bytes] = set()
            for lib in libs:
                for folded, fname in _folded_names(lib).items():
                    if folded in seen:
                        raise CommandError(b"ERR Function " + fname + b" already exists")
                    seen.add(folded)
            self.libraries, self.functions = {}, {}
            self._forget()
            self._commit(libs, False)
            return
        if policy == b"append":
            for lib in libs:
                if lib.name in self.libraries:
                    raise CommandError(b"ERR Library " + lib.name + b" already exists")
        self._commit(libs, policy == b"replace")


def library_code(server: Server) -> list[bytes]:
    """Every library's code, for a snapshot: none where no engine was ever started (a snapshot's
    child must not start one: a Lua state's allocations on the parent's heap pages copy them)."""
    fe = server.functions_engine
    return [] if fe is None else [lib.code for lib in fe.libraries.values()]


def registry(server: Server) -> FunctionsEngine:
    fe = server.functions_engine  # compiled, a C struct field (functions.pxd types the server)
    if fe is None:
        fe = server.functions_engine = FunctionsEngine(server)
    return fe
