"""Fuzz target: cluster bus messages (server/cluster/wire.py), framed as the bus's Link reads them.

Properties: a stream is cut into messages by the signature and totlen checks of
Link.data_received; each message of our version decodes or raises WireError, nothing else; a
message that decodes re-encodes (wire.encode) to one that decodes to the same message when its
names are plain (the bus ignores a message whose sender name is not a valid node name; a FAIL
about a name that is not one is never sent).
"""

from __future__ import annotations

NAME = "bus"
INSTRUMENT = ("raxdb.server.cluster.wire",)  # the modules whose coverage guides the fuzzer


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
        plain = valid_name(m.sender) and all(s.isascii() for s in names)
        if plain and m.type != wire.MODULE and (m.type != wire.FAIL or valid_name(m.about)):
            again = wire.decode(wire.encode(m))
            # (a gossip ip of 46 bytes, no NUL, is cut to 45 by encode: the field holds a C string)
            seen = [(g.name, g.ping_sent, g.port, g.flags) for g in m.gossip]
            back = [(g.name, g.ping_sent, g.port, g.flags) for g in again.gossip]
            assert (again.type, again.sender, back) == (m.type, m.sender, seen), (m.type, back, seen)
