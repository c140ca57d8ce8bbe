"""Client output buffer limits (Redis's checkClientOutputBufferLimits and
closeClientOnOutputBufferLimitReached), per client class: normal, slave for a replica, or pubsub
for a client with any subscription.  `client-output-buffer-limit <class> <hard> <soft> <secs>`.

What counts is the output a client has not taken yet: queued for the end-of-iteration flush plus
what its transport still holds, laid out as Redis's reply list (server/conn/replylist.py); for a replica, as in Redis 7, its share of
the replication buffer it shares with the backlog (from the block holding the first byte it still
needs to the last block), checked whenever a block is added, and its hard limit is never below
the backlog's size.  Past the hard limit, or past the soft
limit for longer than its seconds, the client is logged as Redis logs it and dropped at once, its
unsent output discarded, so a client that does not read costs about its class's hard limit.

When it is checked: after a Pub/Sub delivery that leaves the subscriber's unsent output beyond its
reply buffer (a subscriber that stopped reading; `check_delivery`: Redis checks as output goes to
the reply list, never while it fits in the buffer, and so skips the common case); after each
command of a client whose class has a limit (`watched`: Client.obuf_reached counts the replies
of the read event not yet queued), so that, as in Redis, nothing it pipelined after the command
that passed the limit runs; before an end-of-iteration flush writes more than the reply buffer
holds (a reply over the hard limit is never sent: Redis closes the client as it adds the reply,
before any write); and when a flush leaves the transport over its high-water mark (64 KiB;
`write_paused`).  A watched client leaves the fast loop (Client.plain): with the default limits
that is a pub/sub client, whose own commands are few, never a normal one, so the common path pays
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG
from raxdb.server.conn import replylist

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client


def is_replica(c: Client) -> bool:
    """A replica's link (it sent SYNC / PSYNC, or REPLCONF's listening-port: replication/master.py
    sets `c.replica` and flags it)."""
    r = c.replica
    return r is not None and r.flagged


def client_class(c: Client) -> str:
    """getClientType: this server's link to its master (replication/replica.py), a replica
    (replication/master.py), pubsub, or normal."""
    if c.is_master:
        return "master"
    if is_replica(c):
        return "slave"
    return "pubsub" if (c.channels or c.patterns or c.shard_channels) else "normal"


def watched(c: Client) -> bool:
    """Whether `c`'s own commands are checked one by one (Client.obuf_reached): a normal or pub/sub
    client whose class has a limit.  Such a client leaves the fast loop (Client.update_plain), so
    the default configuration, with no limit for normal clients, costs commands nothing."""
    cls = client_class(c)
    if cls != "normal" and cls != "pubsub":
        return False
    hard, soft, _ = c.server.config.cobl.get(cls, (0, 0, 0))
    return bool(hard or soft)


def check(c: Client, used: int = -1) -> bool:
    """Drop `c` if its unsent output (`used`: its output_used, with the replies of the read event
    not yet queued, Client.obuf_reached; -1 to take output_used) is over its class's limits; True
    if it was dropped."""
    if c.closed or c.transport is None:
        return False
    srv = c.server
    cls = client_class(c)
    hard, soft, soft_secs = srv.config.cobl.get(cls, (0, 0, 0))
    if not (hard or soft):
        return False
    if used < 0:
        used = output_used(c)
    if cls == "slave" and hard:
        # a replica's hard limit below the backlog's size would drop a replica that a partial
        # resync just let in: Redis takes the backlog's size instead
        hard = max(hard, srv.repl.backlog.size if srv.repl.backlog is not None else 0)
    if hard and used >= hard:
        _drop(c)
        return True
    if soft and used >= soft:
        if not c.obuf_soft_since:
            c.obuf_soft_since = srv.now_ms or 1  # the first time: the clock starts
        elif srv.now_ms - c.obuf_soft_since > soft_secs * 1000:
            _drop(c)
            return True
    else:
        c.obuf_soft_since = 0
    return False


def check_delivery(c: Client) -> bool:
    """`check` after out-of-band output (a Pub/Sub message): a subscriber whose unsent output still
    fits in its reply buffer, with no soft-limit clock running and no reply list held from before
    (Client.replies), is under every limit (output_used counts nothing below the buffer), so only
    the others are checked.  Per message and per
    subscriber: a PUBLISH to 100 subscribers spent 40% of its time in full checks.

    What the transport holds is asked once per flush (`c.out_held`; the flush forgets it): the
    transport is given output only by the flush (Client.flush_output) and otherwise only drains, so
    until the next flush the first answer bounds it, and a test passed with the bound passes with
    the transport's own figure.  (A TLS connection's read may add a record of its own, a key
    update: a few dozen bytes, and the flush checks again before it writes past the buffer.)"""
    t = c.transport
    if t is not None and not c.obuf_soft_since and c.replica is None and c.replies is None:
        held = c.out_held
        if held < 0:
            held = c.out_held = t.get_write_buffer_size()
        if c.tot_net_out - c.out_mark + held <= c.rb_size:
            return False
    return check(c)


def output_used(c: Client) -> int:
    """getClientOutputBufferMemoryUsage: a replica's share of the replication buffer it shares
    with the backlog (server/replication/state.py); for any other client its reply list's omem
    (server/conn/replylist.py)."""
    if is_replica(c):
        return c.server.repl.master.output_share(c.replica)
    return replylist.figures(c)[2]


def _drop(c: Client) -> None:
    LOG.warning(f"Client id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={c.name.decode(errors='replace')} "
                "scheduled to be closed ASAP for overcoming of output buffer limits.")
    c.abort()  # drop what is buffered: that is the point of the limit
