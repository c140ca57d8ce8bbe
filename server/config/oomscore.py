"""oom-score-adj: the process's Linux OOM-killer score as Redis's setOOMScoreAdj sets it.

`oom-score-adj-values` holds three scores, for a master, a replica and a forked child (BGSAVE, AOF
rewrite).  With `oom-score-adj` relative (or yes) the score written to /proc/self/oom_score_adj is
the class's value plus the score the process had when raxdb first took control; with absolute,
the value itself; either is clamped to -1000..1000.  Turning it off writes the saved score back.
It is applied at start-up, on every change of either option (a failure refuses the CONFIG SET,
which rolls back), when the role changes (REPLICAOF), and in a forked child before it works.

The saved score is module state, as Redis keeps it in statics: it belongs to the process, and a
forked child inherits it with the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG
from raxdb.server.config.options import ConfigError

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

MASTER, REPLICA, CHILD = 0, 1, 2  # CONFIG_OOM_MASTER, CONFIG_OOM_REPLICA, CONFIG_OOM_BGCHILD
_PATH = "/proc/self/oom_score_adj"
_base: int | None = None  # the score before raxdb changed it; None while raxdb has not


def apply(srv: Server, process_class: int | None = None) -> bool:
    """Set the score for `process_class` (by default the server's role); False if /proc refused
    it (logged as Redis logs it)."""
    global _base
    values = srv.config.values
    mode = values["oom-score-adj"]
    if mode != "no":
        if _base is None:
            try:
                with open(_PATH) as f:
                    _base = int(f.read().split()[0])
            except (OSError, ValueError, IndexError) as exc:
                LOG.warning(f"Unable to read oom_score_adj: {getattr(exc, 'strerror', None) or exc}")
                return False
        if process_class is None:
            process_class = MASTER if srv.repl.masterhost is None else REPLICA
        val = int(values["oom-score-adj-values"].split()[process_class])
        if mode in ("yes", "relative"):
            val += _base
        val = max(-1000, min(1000, val))
    elif _base is not None:
        val, _base = _base, None
    else:
        return True
    try:
        with open(_PATH, "w") as f:
            f.write(f"{val}\n")
    except OSError as exc:
        LOG.warning(f"Unable to write oom_score_adj: {exc.strerror}")
        return False
    return True


def attach(srv: Server) -> None:
    """Apply either option's change as Redis's updateOOMScoreAdj does."""
    def changed(_value: str) -> None:
        if not apply(srv):
            raise ConfigError("Failed to set current oom_score_adj. Check server logs.")

    for name in ("oom-score-adj", "oom-score-adj-values"):
        srv.config.on_change.setdefault(name, []).append(changed)
