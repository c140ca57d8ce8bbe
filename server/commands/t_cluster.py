"""What a standalone redis-server 7.0 answers for cluster and module commands.

raxdb runs as Redis does with cluster-enabled no and no modules loaded.  CLUSTER (every
subcommand), ASKING, READONLY and READWRITE therefore answer "This instance has cluster support
disabled" after the usual arity, unknown-subcommand and script checks, and MODULE LIST is empty,
so cluster-aware clients and tools that probe for modules see a standalone server rather than
unknown commands.  Loading a module fails as a missing library does in Redis (the log line is
admin/modules.py's, which start-up's loadmodule logs too); MODULE LOAD, LOADEX and UNLOAD are
guarded by enable-module-command first, as there.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.admin.modules import log_load_failure
from raxdb.server.base.errors import CommandError
from raxdb.server.commands.t_config import help_reply
from raxdb.server.security.protected import protected_allowed, protected_denied
from raxdb.server.table.registry import TABLE, command

_DISABLED = "ERR This instance has cluster support disabled"


def _cluster_disabled(c, argv):
    raise CommandError(_DISABLED)


for _name in ("asking", "readonly", "readwrite"):
    command(_name)(_cluster_disabled)
for _sub in TABLE.meta["cluster"].subcommands:
    command(_sub)(_cluster_disabled)


_MODULE_HELP = [
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
]


@command("module|help")
def module_help(c, argv):
    return help_reply("MODULE", _MODULE_HELP)


@command("module|list")
def module_list(c, argv):
    return R.EMPTY_ARRAY


def _guard(c) -> None:
    if not protected_allowed(c, "enable-module-command"):
        raise protected_denied("MODULE", "enable-module-command")


@command("module|load")
def module_load(c, argv):
    _guard(c)
    log_load_failure(argv[2].decode(errors="replace"))
    raise CommandError("ERR Error loading the extension. Please check the server logs.")


command("module|loadex")(module_load)


@command("module|unload")
def module_unload(c, argv):
    _guard(c)
    raise CommandError("ERR Error unloading module: no such module with that name")
