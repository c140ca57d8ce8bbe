"""Pub/Sub state and delivery: who is subscribed to what, PUBLISH fan-out, slow-subscriber limits.

The registry (`server.pubsub`, a `Registry`) maps each channel, pattern and shard channel to the
clients subscribed to it, in subscription order (dicts used as ordered sets), mirroring the
per-client ordered sets `c.channels`, `c.patterns`, `c.shard_channels` that the dispatcher reads.  Both sides
change together in `subscribe`/`unsubscribe`, and a client's entries go when it disconnects or sends
RESET.

In cluster mode the registry also indexes the shard channels by hash slot (`by_slot`, set by
server/cluster/pubsub.py; None otherwise), as Redis's slots_to_channels does, so that a node that
loses a slot finds that slot's channels without scanning them all.

Delivery queues each message for the subscriber's end-of-iteration flush, one write per subscriber
per loop iteration however many messages reach it, as Redis's beforeSleep writes.  A message is
encoded once per protocol (RESP2 arrays and RESP3 push frames differ only in the first byte) and
the per-subscriber loop is the client layer's (`Server.fan_out`, compiled in server/net/client.py).

Slow subscribers: after each delivery the subscriber's unsent output is checked against
client-output-buffer-limit for the pubsub class (server/conn/obuf.py), so a subscriber that does not
read costs at most about the hard limit in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.server.conn import lifecycle
from raxdb.storage.glob import compile_glob
from raxdb.storage.slots import key_hash_slot

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server

_bulk = R.bulk
_MESSAGE = b"$7\r\nmessage\r\n"
_PMESSAGE = b"$8\r\npmessage\r\n"
_SMESSAGE = b"$8\r\nsmessage\r\n"


class Registry:
    __slots__ = ("channels", "patterns", "matchers", "shard", "by_slot")

    def __init__(self) -> None:
        self.channels: dict[bytes, dict[Client, None]] = {}
        self.patterns: dict[bytes, dict[Client, None]] = {}
        self.matchers: dict[bytes, object] = {}  # pattern -> compiled glob
        self.shard: dict[bytes, dict[Client, None]] = {}
        self.by_slot: dict[int, dict[bytes, None]] | None = None  # cluster mode: slot -> its shard channels


def attach(server: Server) -> None:
    if getattr(server, "pubsub", None) is None:
        server.pubsub = Registry()


def registry(server: Server) -> Registry:
    reg = getattr(server, "pubsub", None)
    if reg is None:
        reg = server.pubsub = Registry()
    return reg


# ---- subscriptions ----------------------------------------------------------------------------
# kind: "channel" | "pattern" | "shard"; each returns whether the subscription set changed.

def _tables(c: Client, kind: str) -> tuple[dict[bytes, None], dict[bytes, dict[Client, None]]]:
    reg = registry(c.server)
    if kind == "channel":
        return c.channels, reg.channels
    if kind == "pattern":
        return c.patterns, reg.patterns
    return c.shard_channels, reg.shard


def subscribe(c: Client, kind: str, name: bytes) -> bool:
    mine, table = _tables(c, kind)
    if name in mine:
        return False
    mine[name] = None
    subs = table.get(name)
    if subs is None:
        subs = table[name] = {}
        reg = registry(c.server)
        if kind == "pattern":
            reg.matchers[name] = compile_glob(name)
        elif kind == "shard" and reg.by_slot is not None:
            reg.by_slot.setdefault(key_hash_slot(name), {})[name] = None
    subs[c] = None
    return True


def unsubscribe(c: Client, kind: str, name: bytes) -> bool:
    mine, table = _tables(c, kind)
    if name not in mine:
        return False
    del mine[name]
    subs = table.get(name)
    if subs is not None:
        subs.pop(c, None)
        if not subs:
            del table[name]
            reg = registry(c.server)
            if kind == "pattern":
                reg.matchers.pop(name, None)
            elif kind == "shard" and reg.by_slot is not None:
                _unindex(reg.by_slot, name)
    return True


def _unindex(by_slot: dict[int, dict[bytes, None]], name: bytes) -> None:
    slot = key_hash_slot(name)
    names = by_slot.get(slot)
    if names is not None:
        names.pop(name, None)
        if not names:
            del by_slot[slot]


def unsubscribe_all(c: Client) -> None:
    """Silently drop every subscription (disconnect, RESET)."""
    for kind, mine in (("channel", c.channels), ("pattern", c.patterns), ("shard", c.shard_channels)):
        for name in list(mine):
            unsubscribe(c, kind, name)


def frame(c: Client, kind: bytes, name: bytes | None, count: int) -> bytes:
    """A (un)subscription's confirmation: [kind, name, count], an array in RESP2, a push in RESP3."""
    return c.enc.push_header(3) + _bulk(kind) + (c.enc.null if name is None else _bulk(name)) + R.integer(count)


def subscription_count(c: Client) -> int:
    """What (P)SUBSCRIBE / (P)UNSUBSCRIBE replies count: channels plus patterns."""
    return len(c.channels) + len(c.patterns)


# ---- delivery ---------------------------------------------------------------------------------

def publish(server: Server, channel: bytes, message: bytes) -> int:
    """PUBLISH: deliver to channel and pattern subscribers; the number of deliveries."""
    reg = registry(server)
    n = 0
    subs = reg.channels.get(channel)
    if subs:
        tail = _bulk(channel) + _bulk(message)
        _fan_out(server, subs, b"3\r\n" + _MESSAGE + tail)
        n += len(subs)
    if reg.patterns:
        matchers = reg.matchers
        for pattern, psubs in list(reg.patterns.items()):
            if matchers[pattern](channel):  # type: ignore[operator]
                _fan_out(server, psubs, b"4\r\n" + _PMESSAGE + _bulk(pattern) + _bulk(channel) + _bulk(message))
                n += len(psubs)
    return n


def spublish(server: Server, channel: bytes, message: bytes) -> int:
    reg = registry(server)
    subs = reg.shard.get(channel)
    if not subs:
        return 0
    _fan_out(server, subs, b"3\r\n" + _SMESSAGE + _bulk(channel) + _bulk(message))
    return len(subs)


def has_subscribers(server: Server) -> bool:
    reg = getattr(server, "pubsub", None)
    return reg is not None and bool(reg.channels or reg.patterns)


def _fan_out(server: Server, subs: dict[Client, None], body: bytes) -> None:
    """`body` is a frame without its type byte: '*' for RESP2 subscribers, '>' for RESP3.  Each
    subscriber's copy is queued and its output buffer limits checked (server/conn/obuf.py) by the
    client layer's compiled loop (Server.fan_out)."""
    server.fan_out(subs, body)


# ---- introspection (PUBSUB, INFO, CLIENT LIST) ------------------------------------------------

def counts(server: Server) -> tuple[int, int, int]:
    """(channels, patterns, shard channels) with at least one subscriber: INFO pubsub_* fields."""
    reg = getattr(server, "pubsub", None)
    if reg is None:
        return 0, 0, 0
    return len(reg.channels), len(reg.patterns), len(reg.shard)


def _forget(c: Client) -> None:
    if c.channels or c.patterns or c.shard_channels:
        unsubscribe_all(c)


lifecycle.DISCONNECT_HOOKS.append(_forget)
lifecycle.RESET_HOOKS.append(_forget)
