"""Modules: raxdb loads none, and says so as Redis says a module failed to load.

A `loadmodule` directive stops start-up after initServer (moduleLoadFromQueue: server/core.py) and
MODULE LOAD / LOADEX fail (commands/t_cluster.py), each with the line Redis logs when dlopen fails
(`log_load_failure`), so a configuration written for modules fails loudly instead of running
without them.

Rule: imports only the layers below it (replication and everything under it).
"""

from __future__ import annotations

from raxdb.server.base.log import LOG


def log_load_failure(path: str) -> None:
    """moduleLoad's dlopen failure line: raxdb loads no module."""
    LOG.warning(f"Module {path} failed to load: raxdb does not load modules")
