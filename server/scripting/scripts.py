"""EVAL scripts: the script cache (sha1 -> compiled chunk), shebang flags, and running them.

A script body is compiled once and cached under the hex sha1 of its text, as Redis does; EVALSHA
and SCRIPT EXISTS look it up case-insensitively.  A body starting with `#!lua` declares flags
(`#!lua flags=no-writes,allow-oom`, read by table/scriptflags.py's parse_shebang, which the
dispatcher's checks of a script's flags share); the shebang line is not Lua, so the chunk compiled
starts at its newline, which keeps line numbers in error messages equal to Redis's.  Scripts without a
shebang run in Redis's compatibility mode (no flags, writes allowed).  SCRIPT FLUSH drops the cache
and starts a fresh Lua state, as Redis does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raxdb.server.base.errors import MASTERDOWN, CommandError
from raxdb.server.table.scriptflags import (
    FLAG_ALLOW_CROSS_SLOT,
    FLAG_ALLOW_OOM,
    FLAG_NO_CLUSTER,
    FLAG_NO_WRITES,
    NO_CLUSTER,
    parse_shebang,
    sha1hex,
)

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."


class Script:
    __slots__ = ("body", "fn", "flags", "shebang", "no_cluster", "no_writes", "allow_oom", "cross_slot")

    def __init__(self, body: bytes, fn: Any, flags: int, shebang: bool) -> None:
        self.body = body
        self.fn = fn
        self.flags = flags
        self.shebang = shebang
        # What a run tests of the flags, settled here, when the script is cached (its flags never
        # change): each EVALSHA reads a truth value, not a mask of the flags.  A script without a
        # shebang (compatibility mode) declares none, and may touch keys of any slot.
        self.no_cluster = bool(shebang and flags & FLAG_NO_CLUSTER)
        self.no_writes = bool(shebang and flags & FLAG_NO_WRITES)
        self.allow_oom = bool(flags & FLAG_ALLOW_OOM)
        self.cross_slot = not shebang or bool(flags & FLAG_ALLOW_CROSS_SLOT)


class ScriptCache:
    def __init__(self, server: Server) -> None:
        # Lua (lupa and the engine) is imported here, by the first script, not at start-up
        from raxdb.server.scripting.engine import Engine

        self.server = server
        self.engine = Engine(server, b"@user_script")
        self.scripts: dict[bytes, Script] = {}
        self._forget()

    def _forget(self) -> None:
        """Empty `find`'s memory of recent lookups (the cache is new)."""
        self._recent_sha: list[bytes | None] = [None] * 16
        self._recent: list[Script | None] = [None] * 16

    def find(self, sha: bytes) -> Script | None:
        """The script cached under `sha` (40 bytes, as EVALSHA checked), or None.  The last one
        found for each value of the sha's first byte's low four bits is remembered: a job queue's
        few scripts, run over and over, are found by comparing their 40 bytes, not by hashing
        them (EVALSHA's argument is a new bytes object each time)."""
        i = sha[0] & 15
        known = self._recent_sha[i]
        if known is not None and known == sha:
            return self._recent[i]
        script = self.scripts.get(sha)
        if script is not None:
            self._recent_sha[i] = sha
            self._recent[i] = script
        return script

    def load(self, body: bytes) -> tuple[bytes, Script]:
        sha = sha1hex(body)
        script = self.scripts.get(sha)
        if script is None:
            flags, start, shebang = parse_shebang(body)
            fn = self.engine.compile(body[start:] if start else body)
            script = self.scripts[sha] = Script(body, fn, flags, shebang)
        return sha, script

    def flush(self) -> None:
        from raxdb.server.scripting.engine import Engine

        self.scripts = {}
        self._forget()
        self.engine = Engine(self.server, b"@user_script")

    def run(self, c: Client, sha: bytes, script: Script, argv: list[bytes], numkeys: int, ro_command: bool) -> bytes:
        srv = self.server
        if script.no_cluster and srv.cluster is not None:
            raise CommandError(NO_CLUSTER)
        if ro_command and script.shebang and not script.no_writes:
            raise CommandError("ERR Can not execute a script with write flag using *_ro command.")
        if not script.shebang and srv.replica_gate and srv.repl.link.serving_stale():
            # scriptPrepareForRun's compatibility-mode check (a script with a shebang was judged
            # by its flags before it got here)

            raise CommandError(MASTERDOWN)
        return self.engine.run(c, script.fn, sha, argv, numkeys, ro_command or script.no_writes, False,
                               script.allow_oom, script.cross_slot)


def cache(server: Server) -> ScriptCache:
    sc = server.script_cache  # compiled, a C struct field (scripts.pxd types the server)
    if sc is None:
        sc = server.script_cache = ScriptCache(server)
    return sc
