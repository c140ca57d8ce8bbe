"""Fuzz target: nodes.conf (server/cluster/nodesconf.py's parse; the file is read as text, as
server/cluster/manager.py opens it).

Properties: only ConfigFileError; a state that parses renders to text that parses and renders the
same, but for the ping and pong times and the nodes' order (the file the node writes back at once).
"""

from __future__ import annotations

NAME = "nodesconf"
INSTRUMENT = ("raxdb.server.cluster.nodesconf", "raxdb.server.cluster.state")  # the modules whose coverage guides the fuzzer


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
    out = _timeless(nodesconf.render(st))
    again = _timeless(nodesconf.render(nodesconf.parse(out)))
    assert again == out, (out, again)


def _timeless(text: str) -> str:
    """The text's lines in order, with each node's ping-sent and pong-received times as 0 or 1: a
    node read with a non-zero one gets the current time (as Redis does), which moves between two
    renders; and the nodes come in the order they were first named, which a render changes (a
    master named before its own line), as Redis's dict order does."""
    lines = []
    for line in text.splitlines():
        argv = line.split(" ")
        if argv[0] != "vars" and len(argv) >= 8:
            argv[4:6] = ["0" if a == "0" else "1" for a in argv[4:6]]
        lines.append(" ".join(argv))
    return "\n".join(sorted(lines))
