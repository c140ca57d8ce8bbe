"""Fuzz target: cluster bus messages (server/cluster/wire.py), framed as the bus's Link reads them.

Properties: a stream is cut into messages by the signature and totlen checks of
Link.data_received; each message of our version decodes or raises WireError, nothing else; a
message that decodes re-encodes (wire.encode) to one that decodes to the same message when its
names are plain (the bus ignores a message whose sender name is not a valid node name).
"""

from __future__ import annotations

NAME = "bus"


def setup() -> None:
    from raxdb.server.cluster import bus, wire  # noqa: F401


def one_input(data: bytes) -> None:
    from raxdb.server.cluster import bus, wire
    from raxdb.server.cluster.state import valid_name

    buf = data
    while len(buf) >= 8:
        totlen = int.from_bytes(buf[4:8], "big")
        if buf[:4] != wire.SIG or totlen < wire.HEADER_LEN or totlen > bus.MAX_MESSAGE:
            return  # the link is dropped
        if len(buf) < totlen:
            return  # waits for more
        msg, buf = buf[:totlen], buf[totlen:]
        if int.from_bytes(msg[8:10], "big") != wire.VERSION:
            continue
        try:
            m = wire.decode(msg)
        except wire.WireError:
            continue
        names = [m.myip, m.hostname or "", m.about or ""] + [s for g in m.gossip for s in (g.name, g.ip)]
        if m.type != wire.MODULE and valid_name(m.sender) and all(s.isascii() for s in names):
            again = wire.decode(wire.encode(m))
            assert (again.type, again.sender, again.gossip) == (m.type, m.sender, m.gossip), (m, again)
