"""CONFIG GET / SET / RESETSTAT / REWRITE / HELP (Redis's config.c command side).

The semantics live in `server.config` (validation, atomic multi-set, rewrite); this module only
maps them to replies.  CONFIG GET replies with a map (an array of pairs in RESP2) whose order Redis
leaves to its hash table, so clients never rely on it.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError
from raxdb.server.config.options import ConfigError, LoadingDenied
from raxdb.server.security.protected import is_local
from raxdb.server.table.registry import command


def help_reply(container: str, lines: list[str]) -> bytes:
    """Redis's addReplyHelp: a header line, the subcommand lines, and the HELP entry."""
    rows = [f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *lines,
            "HELP", "    Prints this help."]
    return R.array([R.status(r) for r in rows])


_HELP = [
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
]


@command("config|help")
def config_help(c, argv):
    return help_reply("CONFIG", _HELP)


@command("config|get")
def config_get(c, argv):
    pairs = c.server.config.matching(argv[2:])
    flat = []
    for name, value in pairs:
        flat.append(R.bulk(name))
        flat.append(R.bulk(value))
    return c.enc.map(flat)


@command("config|set")
def config_set(c, argv):
    if len(argv) % 2:
        raise CommandError("ERR syntax error")
    pairs = [(argv[i], argv[i + 1]) for i in range(2, len(argv), 2)]
    try:
        c.server.config.set_many(pairs, local=is_local(c))
    except LoadingDenied as exc:
        raise CommandError(str(exc)) from None
    except ConfigError as exc:
        raise CommandError("ERR " + str(exc)) from None
    return R.OK


@command("config|resetstat")
def config_resetstat(c, argv):
    c.server.reset_stats()
    return R.OK


@command("config|rewrite")
def config_rewrite(c, argv):
    try:
        c.server.config.rewrite()
    except ConfigError as exc:
        raise CommandError("ERR " + str(exc)) from None
    return R.OK
