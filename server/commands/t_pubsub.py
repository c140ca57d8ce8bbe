"""Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

Each (un)subscription is confirmed by its own frame — an array in RESP2, a push in RESP3 — so a
command naming several channels returns several frames in one reply.  The counts in those frames are
Redis 7.0's: channels plus patterns for SUBSCRIBE/PSUBSCRIBE and their opposites, shard channels
alone for SSUBSCRIBE/SUNSUBSCRIBE.  The state and the delivery live in server/events/pubsub.py; what a
RESP2 subscriber may still send is the dispatcher's check.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import subcommand_syntax
from raxdb.server.events import propagate, pubsub
from raxdb.server.table.registry import command
from raxdb.storage.glob import compile_glob

_bulk = R.bulk
_integer = R.integer


def _confirm(c, frames: bytes) -> bytes:
    """(Un)subscribe confirmations are sent as pushes (Redis's CLIENT_PUSHING), so CLIENT REPLY OFF
    or SKIP does not hold them back, in RESP2 as in RESP3: they then go out beside the reply path."""
    if c.reply_mode == "on":
        return frames
    c.write(frames)
    return b""


def _subscribe(c, argv, kind: str, word: bytes, count) -> bytes:
    out = []
    for name in argv[1:]:
        pubsub.subscribe(c, kind, name)
        out.append(pubsub.frame(c, word, name, count(c)))
    c.update_plain()
    return _confirm(c, b"".join(out))


def _unsubscribe(c, argv, kind: str, word: bytes, mine: dict[bytes, None], count) -> bytes:
    names = argv[1:] if len(argv) > 1 else list(mine)
    if not names:
        return _confirm(c, pubsub.frame(c, word, None, count(c)))
    out = []
    for name in names:
        pubsub.unsubscribe(c, kind, name)
        out.append(pubsub.frame(c, word, name, count(c)))
    c.update_plain()
    return _confirm(c, b"".join(out))


def _shard_count(c) -> int:
    return len(c.shard_channels)


def subscribe(c, argv):
    return _subscribe(c, argv, "channel", b"subscribe", pubsub.subscription_count)


command("subscribe")(subscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def psubscribe(c, argv):
    return _subscribe(c, argv, "pattern", b"psubscribe", pubsub.subscription_count)


command("psubscribe")(psubscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def ssubscribe(c, argv):
    return _subscribe(c, argv, "shard", b"ssubscribe", _shard_count)


command("ssubscribe")(ssubscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def unsubscribe(c, argv):
    return _unsubscribe(c, argv, "channel", b"unsubscribe", c.channels, pubsub.subscription_count)


command("unsubscribe")(unsubscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def punsubscribe(c, argv):
    return _unsubscribe(c, argv, "pattern", b"punsubscribe", c.patterns, pubsub.subscription_count)


command("punsubscribe")(punsubscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def sunsubscribe(c, argv):
    return _unsubscribe(c, argv, "shard", b"sunsubscribe", c.shard_channels, _shard_count)


command("sunsubscribe")(sunsubscribe)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def _publish(c, argv, shard: bool) -> bytes:
    """A replica's subscribers get it too (not the AOF); in cluster mode every node's do (the
    shard's nodes' for SPUBLISH), through the cluster bus instead of the replication stream, as
    in Redis 7.0 (server/cluster/pubsub.py).  The reply counts this node's receivers."""
    srv = c.server
    n = (pubsub.spublish if shard else pubsub.publish)(srv, argv[1], argv[2])
    if srv.cluster is None:
        propagate.force(c, repl_only=True)
    else:
        srv.cluster.publish(argv[1], argv[2], shard)
    return _integer(n)


def publish(c, argv):
    return _publish(c, argv, False)


command("publish")(publish)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def spublish(c, argv):
    return _publish(c, argv, True)


command("spublish")(spublish)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


# ---- PUBSUB -----------------------------------------------------------------------------------

def _matching(c, argv, table) -> bytes:
    if len(argv) > 3:
        raise subcommand_syntax(argv)
    if len(argv) == 3:
        match = compile_glob(argv[2])
        names = [n for n in table if match(n)]
    else:
        names = list(table)
    return R.bulk_array(names)


def _numsub(argv, table) -> bytes:
    out = []
    for name in argv[2:]:
        subs = table.get(name)
        out.append(_bulk(name))
        out.append(_integer(len(subs) if subs else 0))
    return R.array(out)


def pubsub_channels(c, argv):
    return _matching(c, argv, pubsub.registry(c.server).channels)


command("pubsub|channels")(pubsub_channels)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def pubsub_shardchannels(c, argv):
    return _matching(c, argv, pubsub.registry(c.server).shard)


command("pubsub|shardchannels")(pubsub_shardchannels)  # not a decorator: a cpdef function (t_pubsub.pxd)


def pubsub_numsub(c, argv):
    return _numsub(argv, pubsub.registry(c.server).channels)


command("pubsub|numsub")(pubsub_numsub)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


def pubsub_shardnumsub(c, argv):
    return _numsub(argv, pubsub.registry(c.server).shard)


command("pubsub|shardnumsub")(pubsub_shardnumsub)  # not a decorator: a cpdef function (t_pubsub.pxd)


def pubsub_numpat(c, argv):
    return _integer(len(pubsub.registry(c.server).patterns))


command("pubsub|numpat")(pubsub_numpat)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)


_HELP = [
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
]
_HELP_REPLY = R.array([R.status(line) for line in _HELP])


def pubsub_help(c, argv):
    return _HELP_REPLY


command("pubsub|help")(pubsub_help)  # not a decorator: compiled, a cpdef function (t_pubsub.pxd)
