"""The flags a script declares, as processCommand judges EVAL*, EVALSHA* and FCALL* by them.

Redis's getCommandFlags gives a script command the flags its script declares (a shebang's
`flags=`, a function's register_function flags) instead of the command table's: EVAL of a
`no-writes` script is no write, one without `allow-oom` is refused when out of memory, one
without `allow-stale` is refused on a stale replica.  A script in compatibility mode (an EVAL
body without a shebang, an unknown SHA or function) keeps the table's flags.

Every check that asks this (is-write, may-replicate, deny-OOM, stale) goes through
`script_flags`, so the rule of which commands carry script flags lives here once, as do the
flags' bits and names (a shebang's and register_function's parsers, FUNCTION LIST).  This module
imports nothing of the server at load time: the client, eviction and the scripting modules all
import it, and the script engine imports eviction.
"""
from __future__ import annotations

from typing import Any

# Shebang `flags=` / register_function flags, as bits.
FLAG_NO_WRITES = 1
FLAG_ALLOW_OOM = 2
FLAG_ALLOW_STALE = 4
FLAG_NO_CLUSTER = 8
FLAG_ALLOW_CROSS_SLOT = 16
# By name, in the order FUNCTION LIST shows them.
FLAG_NAMES = {b"no-writes": FLAG_NO_WRITES, b"allow-oom": FLAG_ALLOW_OOM, b"allow-stale": FLAG_ALLOW_STALE,
              b"no-cluster": FLAG_NO_CLUSTER, b"allow-cross-slot-keys": FLAG_ALLOW_CROSS_SLOT}

SCRIPT_COMMANDS = frozenset(("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"))


def script_flags(c: Any, cmd: Any, argv: list[bytes]) -> int | None:
    """The flags the script `argv` would run declares, or None when `cmd` is no script command
    or its script runs in compatibility mode: the caller then judges by the command's own flags."""
    name = cmd.fullname
    if name not in SCRIPT_COMMANDS:
        return None
    from raxdb.server.commands.t_scripting import declared_flags  # the command modules import the client

    return declared_flags(c, name, argv)
