"""The flags a script declares, as processCommand judges EVAL*, EVALSHA* and FCALL* by them.

Redis's getCommandFlags gives a script command the flags its script declares (a shebang's
`flags=`, a function's register_function flags) instead of the command table's: EVAL of a
`no-writes` script is no write, one without `allow-oom` is refused when out of memory, one
without `allow-stale` is refused on a stale replica.  A script in compatibility mode (an EVAL
body without a shebang, an unknown SHA or function) keeps the table's flags.

Every check that asks this (is-write, may-replicate, deny-OOM, stale) goes through
`script_flags`, so the rule of which commands carry script flags lives here once, as do the
flags' bits and names (register_function's parser and FUNCTION LIST read them) and the shebang's
parser (`parse_shebang`, which the script cache uses as it loads a script).  `script_flags` is on
the dispatch path: for a command that is no script command it costs one set lookup.

Rule: imports only base/ of the server (the client, eviction, replication and the scripting modules
all import it).  The scripting state it reads (the script cache, the function libraries) is
scripting/'s, reached through the attributes it keeps on the server, never by import.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raxdb.server.base.errors import CommandError

# Shebang `flags=` / register_function flags, as bits.
FLAG_NO_WRITES = 1
FLAG_ALLOW_OOM = 2
FLAG_ALLOW_STALE = 4
FLAG_NO_CLUSTER = 8
FLAG_ALLOW_CROSS_SLOT = 16
NO_CLUSTER = "ERR Can not run script on cluster, 'no-cluster' flag is set."  # scriptPrepareForRun
# By name, in the order FUNCTION LIST shows them.
FLAG_NAMES = {b"no-writes": FLAG_NO_WRITES, b"allow-oom": FLAG_ALLOW_OOM, b"allow-stale": FLAG_ALLOW_STALE,
              b"no-cluster": FLAG_NO_CLUSTER, b"allow-cross-slot-keys": FLAG_ALLOW_CROSS_SLOT}

SCRIPT_COMMANDS = frozenset(("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"))


def parse_shebang(body: bytes) -> tuple[int, int, bool]:
    """(flags, offset of the Lua code, has shebang); CommandError with Redis's text if invalid."""
    if not body.startswith(b"#!"):
        return 0, 0, False
    nl = body.find(b"\n")
    if nl < 0:
        raise CommandError("ERR Invalid script shebang")
    parts = body[:nl].split()
    if not parts or parts[0] != b"#!lua":
        engine_name = parts[0] if parts else b"#!"
        raise CommandError(b"ERR Unexpected engine in script shebang: " + engine_name)
    flags = 0
    for opt in parts[1:]:
        if not opt.startswith(b"flags="):
            raise CommandError(b"ERR Unknown lua shebang option: " + opt)
        for name in opt[6:].split(b","):
            if not name:
                continue
            bit = FLAG_NAMES.get(name)
            if bit is None:
                raise CommandError(b"ERR Unexpected flag in script shebang: " + name)
            flags |= bit
    return flags, nl, True


def script_flags(c: Any, cmd: Any, argv: list[bytes]) -> int | None:
    """The flags the script `argv` would run declares, or None when `cmd` is no script command
    or its script runs in compatibility mode: the caller then judges by the command's own flags."""
    name = cmd.fullname
    if name not in SCRIPT_COMMANDS:
        return None
    return declared_flags(c, name, argv)


def sha1hex(data: bytes) -> bytes:
    """A script's SHA1 in lowercase hex: the script cache's key (EVALSHA's argument) and what
    redis.sha1hex() returns."""
    return _sha1(data).hexdigest().encode()


def _first_sha1(data: bytes) -> Any:
    """hashlib.sha1, imported by the first script's hash: hashlib (its OpenSSL constructors, ~5 M
    instructions) is not start-up's to import.  Later calls go to hashlib.sha1 itself."""
    global _sha1
    import hashlib
    _sha1 = hashlib.sha1
    return _sha1(data)


_sha1: Callable[[bytes], Any] = _first_sha1


def declared_flags(c: Any, name: str, argv: list[bytes]) -> int | None:
    """The flags the script or function that EVAL*/EVALSHA*/FCALL* `argv` would run declares, or
    None when it runs in compatibility mode (an EVAL script without a shebang, an unknown SHA or
    function): processCommand then judges the command by the script's flags (evalGetCommandFlags,
    fcallGetCommandFlags) instead of the command's own.  The function libraries and the script
    cache come through the server's hooks (core.py wires them to scripting/, which makes each
    when first used, as the commands that run scripts do)."""
    srv = c.server
    if name.startswith("fcall"):
        fn = srv.function_registry().lookup(argv[1])
        return None if fn is None else fn.flags
    scripts = srv.script_cache_of().scripts
    if name.startswith("evalsha"):
        script = scripts.get(argv[1].lower()) if len(argv[1]) == 40 else None
    else:
        script = scripts.get(sha1hex(argv[1]))
        if script is None:  # not loaded yet: the body's shebang says
            try:
                flags, _, shebang = parse_shebang(argv[1])
            except CommandError:
                return None
            return flags if shebang else None
    if script is None:
        return None
    return script.flags if script.shebang else None
