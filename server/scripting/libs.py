"""Install the libraries Redis bundles into an engine's script environment: bit, struct, cjson,
cmsgpack (Python implementations, lib_*.py).  Each becomes a protected table, like Redis's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.scripting import convert, lib_bit, lib_cjson, lib_cmsgpack, lib_struct

if TYPE_CHECKING:
    from raxdb.server.scripting.interfaces import Engine


def install(engine: Engine) -> None:
    lua = engine.lua
    h = engine.h
    where = h.where

    def lua_where() -> str:
        return where().decode(errors="replace")

    mkobj = convert.chunked(h.mkobj, h.addobj)
    libs = {
        b"bit": lib_bit.make(lua_where),
        b"struct": lib_struct.make(lua_where),
        b"cjson": lib_cjson.make(lua_where, lua.table_from, mkobj),
        b"cmsgpack": lib_cmsgpack.make(lua_where, lua.table_from, mkobj),
    }
    for name, members in libs.items():
        t = lua.table()
        for k, v in members.items():
            t[k] = v
        h.install(name, t)
