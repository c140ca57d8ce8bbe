"""Install the libraries Redis bundles into an engine's script environment: bit, struct, cjson,
cmsgpack (Python implementations, lib_*.py; cmsgpack.unpack and cjson.encode behind Lua fronts for
their common cases, msgpack_lua.py and cjson_lua.py).  Each becomes a protected table, like Redis's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.scripting import (
    cjson_lua,
    convert,
    lib_bit,
    lib_cjson,
    lib_cmsgpack,
    lib_struct,
    msgpack_lua,
)

if TYPE_CHECKING:
    from raxdb.server.scripting.interfaces import Engine


def install(engine: Engine) -> None:
    lua = engine.lua
    h = engine.h
    where = h.where

    def lua_where() -> str:
        return where().decode(errors="replace")

    mkobj = convert.chunked(h.mkobj, h.addobj)
    wrap_unpack, front_where = msgpack_lua.load(lua)

    def unpack_where() -> str:
        return front_where().decode(errors="replace")

    cmsgpack = lib_cmsgpack.make(lua_where, lua.table_from, mkobj, unpack_where)
    bridge = engine.bridge  # its C decoder of unpack's common case, when built
    cmsgpack[b"unpack"] = wrap_unpack(cmsgpack[b"unpack"], bridge.mp_unpack() if bridge is not None else None)
    wrap_encode, set_fast = cjson_lua.load(lua)
    # both fronts keep one Lua frame between the script and the Python callable: one `where`
    cjson = lib_cjson.make(lua_where, lua.table_from, mkobj, unpack_where, set_fast)
    cjson[b"encode"] = wrap_encode(cjson[b"encode"])
    libs = {
        b"bit": lib_bit.make(lua_where),
        b"struct": lib_struct.make(lua_where),
        b"cjson": cjson,
        b"cmsgpack": cmsgpack,
    }
    for name, members in libs.items():
        t = lua.table()
        for k, v in members.items():
            t[k] = v
        h.install(name, t)
