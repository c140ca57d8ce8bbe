"""Propagation: what a command changed, as the commands that replay it (Redis's also_propagate).

The append-only file (and, later, replicas) must receive every change to the dataset in a form
that replays to the same result: not the command as the client sent it, but its effect.  Redis
7.0 does this once, in the commands themselves, and this module is raxdb's copy of that design:

- While something consumes propagation (`srv.also_propagate` is a list; None otherwise, and then
  nothing here costs anything), `Client.call` notes `srv.dirty` before a command and, when it
  moved, appends `(dbid, argv)` to the list (`note`): the client's own argv, or the one the
  command put in `c.prop_argv` (`rewrite`: SET ... EX becomes SET ... PXAT, INCRBYFLOAT a SET,
  a blocking pop a plain pop), unless the command called `prevent` (EVAL: its effects are what
  travel).  `also` appends more operations as the command runs (a lazily expired key's DEL,
  XREADGROUP's XCLAIMs).  `force` propagates a command that left `dirty` alone.
- The client's fast loop (`_run_fast` in server/net/client.py) does the same without `Client.call`: it counts as
  one level of nesting for its whole batch (so a script's calls do not flush on their own), carries
  `dirty` from one command's end to the next one's start (nothing between two commands of the
  loop changes the dataset; `execute()` and serving blocked clients run outside that level and
  start it afresh), and ends each command with `done`.  Its check costs nothing when nothing
  consumes propagation: it sits in the branch that memory accounting already takes.
- Operations accumulate across nested calls (EXEC's queued commands, a script's redis.call) and
  go out together when the outermost call ends (`flush`, Redis's propagatePendingCommands): more
  than one are wrapped in MULTI/EXEC, so a transaction, a script, or a command together with the
  DEL of the key it found expired, replays atomically; `no_multi` leaves the wrap out (the
  active expire cycle and eviction, as Redis does, and commands that may touch arbitrary keys).
- A consumer is any object with `feed(dbid, argv, data=None)` (`data`: argv encoded, which
  `flush` does once for all of them) and `replica_stream` in
  `srv.propagation_targets` (server/persistence/aof.py's AOF, server/replication/state.py's stream): the op list
  exists exactly while that list is not empty (`sync`).  An op whose argv is a `ReplOnly` goes to
  the replication stream alone (Redis's PROPAGATE_REPL target: PUBLISH and SPUBLISH force their
  propagation so that a replica's subscribers get the message, but replaying the AOF must not
  publish it again), one whose argv is an `AofOnly` to the AOF alone; a script's commands go where
  its redis.set_repl flags send them (`Client.prop_targets`, Redis's call flags).  Such an op is
  queued only while a consumer of its kind exists, and then counts towards the MULTI/EXEC wrap,
  which goes to both, as in Redis.

Rewriting is the command's business because only the command knows what it did: the ID XADD
picked, the members SPOP drew, the absolute deadline EXPIRE meant.  Commands build a rewritten
argv only when `srv.also_propagate is not None`, so an unpropagated server never pays for it.
The rewrites several commands share are here (`rewrite_set_pxat`, `rewrite_pexpireat`,
`rewrite_deletion`, `rewrite_count_pop`), so each form is spelled once, as Redis's shared objects
spell it.

Deletions nobody asked for travel as DEL, or UNLINK when the lazyfree-lazy-* option of their
kind is on (`deletion`): a key found past its deadline (Server._on_expired: queued with the
command that found it, so MULTI/EXEC wraps the two when the command also wrote), the active
expire cycle's and an eviction pass's (`flush_alone`: each on its own, flushed when the pass ends,
before the command that made room for itself runs).  None of them moves `dirty`, as in Redis: a
command that found its key expired and changed nothing propagates the DEL alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hiredis import pack_command as _pack

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, propagate.pxd cimports it from reply.pxd (a C call)
    from raxdb.protocol.reply import bulk_aggregate

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server

MULTI = [b"MULTI"]
EXEC = [b"EXEC"]


class ReplOnly(list):
    """An argv for the replication stream only (a target without `replica_stream` skips it)."""

    __slots__ = ()


class AofOnly(list):
    """An argv for the AOF only (a target with `replica_stream` skips it): a script's command
    under redis.set_repl(redis.REPL_AOF)."""

    __slots__ = ()


# Propagation targets, Redis's PROPAGATE_AOF and PROPAGATE_REPL: `Client.prop_targets` holds the
# call flags a command's own argv may go to (both, but for a script's commands under set_repl).
TO_AOF, TO_REPL = 1, 2
TO_BOTH = TO_AOF | TO_REPL
REPL_ONLY = 2  # `Client.prop_force` for forceCommandPropagation(c, PROPAGATE_REPL); True is both


def _takes(t: Any, argv: list[bytes]) -> bool:
    """Does propagation target `t` (the AOF, or a replication stream) take this op?"""
    cls = type(argv)
    if cls is ReplOnly:
        return t.replica_stream
    if cls is AofOnly:
        return not t.replica_stream
    return True


def _append(srv: Server, dbid: int, argv: list[bytes], target: int) -> None:
    """alsoPropagate with a target: an op for only one kind of consumer is queued only while one
    consumes it (shouldPropagate), and then counts towards the MULTI/EXEC wrap, as in Redis."""
    if target == TO_BOTH:
        srv.also_propagate.append((dbid, argv))  # type: ignore[union-attr]
        return
    stream = target == TO_REPL
    if any(t.replica_stream == stream for t in srv.propagation_targets):
        srv.also_propagate.append((dbid, ReplOnly(argv) if stream else AofOnly(argv)))  # type: ignore[union-attr]


def attach(srv: Server) -> None:
    srv.also_propagate = None
    srv.propagation_targets = []
    srv.prop_depth = 0  # nesting of Client.call while propagating; ops go out when it returns to 0
    srv.propagate_no_multi = False


def sync(srv: Server) -> None:
    """Turn the op list on or off as consumers come and go (a client's fast loop looks at it
    when a batch starts and after every command it hands to `execute()`)."""
    on = bool(srv.propagation_targets)
    if on != (srv.also_propagate is not None):
        srv.also_propagate = [] if on else None


def note(srv: Server, c: Client, cmd: Any, argv: list[bytes], dirty: int) -> None:
    """call()'s step after a command: append it (or the argv it rewrote to) when it changed the
    dataset (`dirty` grew since `dirty` was read) or forced propagation, unless it prevented it.
    EXEC itself never: its commands appended themselves, and the flush wraps them."""
    ops = srv.also_propagate
    # `dirty` only counts when it grew: SAVE, SHUTDOWN and DEBUG RELOAD lower it (call()'s
    # "if (dirty < 0) dirty = 0"), and must not replay on replicas or from the AOF
    if ((srv.dirty > dirty or c.prop_force) and not c.prop_prevent and cmd.fullname != "exec"
            and ops is not None):
        if c.prop_force is REPL_ONLY and srv.dirty <= dirty:
            target = TO_REPL & c.prop_targets
        elif c.prop_targets == TO_BOTH:  # the common case
            ops.append((c.dbid, c.prop_argv or argv))
            return
        else:
            target = c.prop_targets  # a script's call flags (redis.set_repl)
        if target:
            _append(srv, c.dbid, c.prop_argv or argv, target)


def done(srv: Server, c: Client, cmd: Any, argv: list[bytes], dirty: int) -> int:
    """A command the fast loop ran at the top level (server/net/client.py's `_run_fast`) is over:
    `note` it, clear the client's rewrite and flags for the next one, and flush, as the
    outermost `Client.call` does.  Returns `srv.dirty`, the next command's starting point."""
    note(srv, c, cmd, argv, dirty)
    c.prop_argv = None
    c.prop_prevent = c.prop_force = False
    flush(srv, cmd)
    return srv.dirty


# The three marks below are set only while propagating: nothing clears them otherwise, and a mark
# left by a command run before propagation started (a replica attaching, the AOF turned on) would
# stand for the client's next command (GEOADD's ZADD form replayed in place of a later SET).

def rewrite(c: Client, argv: list[bytes]) -> None:
    """rewriteClientCommandVector: propagate `argv` in place of the command the client sent."""
    if c.server.also_propagate is not None:
        c.prop_argv = argv


def prevent(c: Client) -> None:
    """preventCommandPropagation: the command itself is not propagated (what it `also`
    propagated still is)."""
    if c.server.also_propagate is not None:
        c.prop_prevent = True


def force(c: Client, repl_only: bool = False) -> None:
    """forceCommandPropagation: propagate the command even though `dirty` did not move; to the
    replication stream alone with `repl_only` (PROPAGATE_REPL)."""
    if c.server.also_propagate is not None:
        c.prop_force = REPL_ONLY if repl_only and c.prop_force is not True else True


def also(srv: Server, dbid: int, argv: list[bytes]) -> None:
    """alsoPropagate: one more operation, in order with the command's own."""
    ops = srv.also_propagate
    if ops is not None:
        ops.append((dbid, argv))


# ---- rewrites several commands share --------------------------------------------------------------
# Each builds its argv only while propagating (`srv.also_propagate is not None`): the callers are
# not on the fast path, and an unpropagated server skips them at the price of one test.

def deletion(srv: Server, option: str) -> bytes:
    """The name a deletion travels under: UNLINK when the lazyfree-lazy-* `option` for its kind
    (user-del, expire, eviction) is on, as Redis's shared.unlink / shared.del choice."""
    return b"UNLINK" if srv.config.values[option] == "yes" else b"DEL"


def deleted(srv: Server, dbid: int, key: bytes, option: str) -> None:
    """propagateDeletion: a key nobody's command deleted (expired, evicted) travels as DEL, or
    UNLINK under the lazyfree-lazy-* `option` of its kind, in order with the running ops."""
    ops = srv.also_propagate
    if ops is not None:
        ops.append((dbid, [deletion(srv, option), key]))


def rewrite_deletion(c: Client, key: bytes, option: str = "lazyfree-lazy-user-del") -> None:
    """A command that deleted `key` (GETDEL, GETEX or EXPIRE past its deadline, SPOP of the whole
    set) is replayed as DEL or UNLINK of it."""
    if c.server.also_propagate is not None:
        c.prop_argv = [deletion(c.server, option), key]


def rewrite_expire_deletion(c: Client, key: bytes) -> None:
    """A deadline already past deleted `key` (EXPIRE family, GETEX): DEL, or UNLINK under
    lazyfree-lazy-expire."""
    rewrite_deletion(c, key, "lazyfree-lazy-expire")


def rewrite_set_pxat(c: Client, key: bytes, value: bytes, when: int) -> None:
    """SET with EX/PX/EXAT/PXAT, SETEX, PSETEX: SET key value PXAT <absolute ms>, so that a
    replay later does not push the deadline on."""
    if c.server.also_propagate is not None:
        c.prop_argv = [b"SET", key, value, b"PXAT", b"%d" % when]


def rewrite_pexpireat(c: Client, argv: list[bytes], when: int) -> None:
    """EXPIRE, PEXPIRE, EXPIREAT: PEXPIREAT key <absolute ms>, the NX/XX/GT/LT flags kept
    (Redis rewrites arguments 0 and 2 only)."""
    if c.server.also_propagate is not None:
        c.prop_argv = [b"PEXPIREAT", argv[1], b"%d" % when, *argv[3:]]


def rewrite_count_pop(c: Client, name: bytes, key: bytes, popped: int) -> None:
    """LMPOP, ZMPOP (and their blocking forms served at once): the pop they made, as
    LPOP/RPOP/ZPOPMIN/ZPOPMAX key <how many it took>."""
    if c.server.also_propagate is not None:
        c.prop_argv = [name, key, b"%d" % popped]


def rewrite_geoadd(c: Client, head: list[bytes], scores: list[float], members: list[bytes]) -> None:
    """GEOADD: the ZADD it amounts to, `zadd key [NX|XX] [CH] score member ...` (`head` is the key
    and the options as sent) with each geohash score as an integer, as Redis rewrites it.  Built
    only when something consumes propagation."""
    if c.server.also_propagate is not None:
        argv = [b"zadd", *head]
        for k, member in enumerate(members):
            argv += (b"%d" % scores[k], member)
        c.prop_argv = argv


# Arguments of this many bytes or more are copied by hiredis's encoder (memcpy) rather than by
# reply.py's byte loop, which is quicker for the few-byte keys and values most writes carry.
_BYTE_LOOP_MAX = 512


def encode_command(argv: list[bytes]) -> bytes:
    """The propagated form of a command, a multibulk of bulk strings (what the AOF and
    replicas receive: catAppendOnlyGenericCommand)."""
    if cython.compiled:
        # sized in one pass and written in a second into one new bytes object (reply.py's
        # bulk_aggregate, as a reply's array is): hiredis's pack_command formats each length
        # with sprintf and copies every argument twice
        out = bulk_aggregate(42, argv, -1, _BYTE_LOOP_MAX)
        if out is not None:
            return out
    try:
        return _pack(tuple(argv))  # type: ignore[arg-type]  # hiredis's stub types a 1-tuple
    except TypeError:  # a bytearray or memoryview some command rewrote its argv with
        parts = [b"*%d\r\n" % len(argv)]
        for a in argv:
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(parts)


_MULTI_DATA = encode_command(MULTI)
_EXEC_DATA = encode_command(EXEC)


def flush(srv: Server, current: Any = None) -> None:
    """propagatePendingCommands: hand the accumulated operations to every consumer, wrapped in
    MULTI/EXEC when there are several (unless `no_multi`, or the running command `current` may
    touch arbitrary keys, as RANDOMKEY and SCAN expiring keys do).  Each op is encoded once, on
    its first taker, and every consumer gets the same bytes (`feed(dbid, argv, data)`)."""
    ops = srv.also_propagate
    if not ops:
        return
    srv.also_propagate = []
    targets = srv.propagation_targets
    if len(ops) == 1:  # a write of its own, the common case: nothing to wrap
        dbid, argv = ops[0]
        data = None
        for t in targets:
            if type(argv) is list or _takes(t, argv):
                if data is None:
                    data = encode_command(argv)
                t.feed(dbid, argv, data)
        return
    wrap = not srv.propagate_no_multi and not (current is not None and current.touches_arbitrary_keys)
    encoded: list[Any] = [None] * len(ops)
    for t in targets:
        if wrap:
            t.feed(ops[0][0], MULTI, _MULTI_DATA)
        i = 0
        for dbid, argv in ops:
            if type(argv) is list or _takes(t, argv):
                data = encoded[i]
                if data is None:
                    data = encoded[i] = encode_command(argv)
                t.feed(dbid, argv, data)
            i += 1
        if wrap:
            t.feed(ops[-1][0], EXEC, _EXEC_DATA)


def flush_alone(srv: Server) -> None:
    """Flush the DELs of the active expire cycle or an eviction pass, each op on its own (Redis
    sets propagate_no_multi around both).  Both run only between commands (the cron, eviction
    before a command or from its timer; a busy script polls its clients without the loop), so
    what is pending is theirs, even inside a fast-loop batch, whose nesting level holds no op
    between its commands."""
    if srv.also_propagate:
        srv.propagate_no_multi = True
        flush(srv)
        srv.propagate_no_multi = False
