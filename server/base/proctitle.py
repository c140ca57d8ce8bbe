"""The process title `ps` and /proc/<pid>/cmdline show (Redis's redisSetProcTitle).

With set-proc-title yes (the default) the server renames itself once it listens, from
proc-title-template ("{title} {listen-addr} {server-mode}": `raxdb-server *:6379`), and its
forked children take their job's name as {title} (redis-rdb-bgsave, redis-aof-rewrite,
redis-rdb-to-slaves), so tools that look for those names find them.  CONFIG SET
proc-title-template renames the server whatever set-proc-title says, as Redis 7.0 does.

The template language is Redis's sdstemplate: `{name}` is a variable, `{{` a literal brace, any
other text (a lone `}` too) is copied, an unknown variable or an unclosed `{` makes the template
invalid, and so does one that expands to nothing when {title} is empty (validateProcTitleTemplate,
so "{title}" alone is refused).  The result loses its leading and trailing spaces.  `expand` is
that one routine, for the config check and for setting the title alike.

Setting the title uses the setproctitle package (Redis carries its own copy of the same technique:
the argv area is overwritten, the environment moved out of the way).  It is optional (a platform
without a wheel for it and without a C compiler can still serve): without it, titles are computed
and checked but not shown, and the first attempt to show one says so in the log.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG

_set: Callable[[str], None] | None
try:
    from setproctitle import setproctitle as _set
except ImportError:  # optional: without it the title is not shown (`apply` logs it once)
    _set = None
_unshown_logged = False

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server


def _variables(title: str, values: dict[str, str], config_file: str | None) -> dict[str, str]:
    """redisProcTitleGetVariable: each variable's text, from the config's values."""
    port = int(values["port"]) or int(values["tls-port"])
    binds = values["bind"].split()
    return {
        "title": title,
        "listen-addr": f"{binds[0] if binds else '*'}:{port}" if port else f"unixsocket:{values['unixsocket']}",
        "server-mode": "[cluster]" if values.get("cluster-enabled") == "yes" else "",
        "config-file": config_file or "-",
        "port": str(int(values["port"])),
        "tls-port": str(int(values["tls-port"])),
        "unixsocket": values["unixsocket"],
    }


def expand(template: str, title: str, values: dict[str, str], config_file: str | None = None) -> str | None:
    """The template expanded and trimmed of spaces, or None when it is not a valid template."""
    variables = _variables(title, values, config_file)
    out: list[str] = []
    p = 0
    while p < len(template):
        start = template.find("{", p)
        if start < 0:
            out.append(template[p:])
            break
        out.append(template[p:start])
        if start + 1 >= len(template):
            return None  # a '{' ending the template
        if template[start + 1] == "{":
            out.append("{")
            p = start + 2
            continue
        end = template.find("}", start + 1)
        if end < 0:
            return None
        value = variables.get(template[start + 1 : end])
        if value is None:
            return None
        out.append(value)
        p = end + 1
    return "".join(out).strip(" ")


def valid(template: str, values: dict[str, str], config_file: str | None = None) -> bool:
    """validateProcTitleTemplate: it expands, and to something, with an empty {title}."""
    return bool(expand(template, "", values, config_file))


def main_title() -> str:
    """{title} for the server itself: the program as it was started (Redis's exec_argv[0]), the
    raxdb-server script's path for `make run` and the image; started as `python -m raxdb.server`, the
    program's name, as `ps` would otherwise show the package's __main__.py."""
    prog = sys.argv[0]
    return prog if os.path.basename(prog) == "raxdb-server" else "raxdb-server"


def apply(srv: Server, title: str | None = None) -> None:
    """redisSetProcTitle: show the template expanded with `title` (the server's own by default)."""
    cfg = srv.config
    text = expand(cfg.values["proc-title-template"], title if title is not None else main_title(), cfg.values,
                  cfg.config_file)
    if text is None:
        return
    if _set is not None:
        _set(text)
        return
    global _unshown_logged
    if not _unshown_logged:
        _unshown_logged = True
        LOG.notice("setproctitle is not installed: the process title stays as it is")
