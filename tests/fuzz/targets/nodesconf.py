"""Fuzz target: nodes.conf (server/cluster/nodesconf.py's parse; the file is read as text, as
server/cluster/manager.py opens it).

Properties: only ConfigFileError; a state that parses renders to text that parses and renders the
same (the file the node writes back at once).
"""

from __future__ import annotations

NAME = "nodesconf"


def setup() -> None:
    from raxdb.server.cluster import nodesconf  # noqa: F401


def one_input(data: bytes) -> None:
    from raxdb.server.cluster import nodesconf

    try:
        text = data.decode()
    except UnicodeDecodeError:
        return  # open() in text mode refuses it before the parser sees it
    try:
        st = nodesconf.parse(text)
    except nodesconf.ConfigFileError:
        return
    out = nodesconf.render(st)
    assert nodesconf.render(nodesconf.parse(out)) == out, out
