"""Differential fuzzing: random command sequences (tests/support/fuzzgen.py) sent to raxdb and to
redis-server 7.0, every reply compared.

Each seed is one reproducible session: FLUSHALL, then a few hundred commands drawn from every
family over six shared keys, in RESP2 or RESP3, and with the encoding thresholds either at their
defaults or tiny (3 entries, 4-byte values, 3-entry stream nodes), so that listpack / intset /
hashtable / skiplist conversions and node splits happen within a few commands.  On a mismatch the
sequence is shrunk (commands dropped one by one while the last reply still differs) and the test
fails with the short sequence, ready to become a targeted test.

Replies are compared as bytes, except where Redis's own order is not reproducible: a hashtable
set's or hash's iteration order (compared as multisets; the generator keeps SORT to total orders,
so only an unsorted BY nosort over such a set differs), the replies inside EXEC (multisets), and
TTL and the idle times of XPENDING and XINFO CONSUMERS, which may tick between the two servers.  No command sets a TTL short enough
to run out during a test.
This is how INCRBYFLOAT's embstr results and SORT's tie order were found.  The same sequences run
again with keyspace notifications on, comparing every message each command publishes (which found
the missing "new" events).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from tests.support.diff import RawConnection, parse
from tests.support.fuzzgen import FAMILIES, KEYS, LEX_KEY, Gen

STEPS = 300
SEEDS = 128

SMALL = [("hash-max-listpack-entries", "3"), ("hash-max-listpack-value", "4"), ("set-max-intset-entries", "3"),
         ("zset-max-listpack-entries", "3"), ("zset-max-listpack-value", "4"), ("list-max-listpack-size", "3"),
         ("stream-node-max-entries", "3"), ("stream-node-max-bytes", "60"), ("list-compress-depth", "1")]
DEFAULTS = [("hash-max-listpack-entries", "128"), ("hash-max-listpack-value", "64"),
            ("set-max-intset-entries", "512"), ("zset-max-listpack-entries", "128"),
            ("zset-max-listpack-value", "64"), ("list-max-listpack-size", "-2"), ("stream-node-max-entries", "100"),
            ("stream-node-max-bytes", "4096"), ("list-compress-depth", "0")]
UNORDERED = {"SMEMBERS", "SINTER", "SUNION", "SDIFF", "KEYS", "HGETALL", "HKEYS", "HVALS"}
UNORDERED_SOURCES = (b"$9\r\nhashtable\r\n",)


def _multiset(x):
    if isinstance(x, list):
        return sorted((_multiset(e) for e in x), key=repr)
    if isinstance(x, dict):  # a RESP3 map: its order is the hash's own
        return ("map", sorted(((k, _multiset(v)) for k, v in x.items()), key=repr))
    if isinstance(x, Exception):  # an error inside an array: hiredis makes it an exception object
        return ("error", str(x))
    return x


def _mask_idle(cmd: list[str], reply):
    """The reply with its idle times (which tick between the two servers) blanked: XPENDING's
    extended entries [id, consumer, idle, deliveries] and XINFO CONSUMERS' "idle" fields."""
    if not isinstance(reply, list):
        return reply
    if cmd[0].upper() == "XPENDING" and len(cmd) > 3:
        return [e[:2] + [None] + e[3:] if isinstance(e, list) and len(e) == 4 else e for e in reply]
    if cmd[0].upper() == "XINFO" and cmd[1].upper() == "CONSUMERS":
        out = []
        for c in reply:
            if isinstance(c, dict):
                c = {k: (None if k == b"idle" else v) for k, v in c.items()}
            elif isinstance(c, list):
                c = [None if i % 2 and c[i - 1] == b"idle" else v for i, v in enumerate(c)]
            out.append(c)
        return out
    return reply


def _mask_clock(reply):
    """The reply with every Unix time in ms (an integer past 10**12: XINFO STREAM FULL's delivery
    and seen times) blanked."""
    if isinstance(reply, list):
        return [_mask_clock(e) for e in reply]
    if isinstance(reply, dict):
        return {k: _mask_clock(v) for k, v in reply.items()}
    if isinstance(reply, int) and reply >= 10**12:
        return None
    return reply


def equivalent(cmd: list[str], ours: bytes, theirs: bytes, oracle: RawConnection) -> bool:
    if ours == theirs:
        return True
    name = cmd[0].upper()
    a, b = parse(ours), parse(theirs)
    if name == "EXEC":  # replies of unordered commands inside: compare as multisets
        return _multiset(a) == _multiset(b)
    if name in UNORDERED:
        if isinstance(a, dict) and isinstance(b, dict):
            return a == b
        if name == "HGETALL" and isinstance(a, list) and isinstance(b, list):
            return sorted(zip(a[::2], a[1::2], strict=True)) == sorted(zip(b[::2], b[1::2], strict=True))
        return _multiset(a) == _multiset(b)
    if name == "SORT" and oracle.call("OBJECT", "ENCODING", cmd[1]) in UNORDERED_SOURCES:
        return _multiset(a) == _multiset(b)  # BY nosort over a hashtable set: its own order
    if name == "MEMORY":
        # Compared for streams and strings, whose allocations raxdb follows (listpack nodes, sds
        # growth); other types' figures hang on hash-table history and Redis's hash order.  A key
        # past its deadline is sized until a cron reclaims it, which either server may do first.
        if oracle.call("TYPE", cmd[2]) not in (b"+stream\r\n", b"+string\r\n"):
            return True
        return a is None or b is None
    if name == "XINFO" and "FULL" in cmd:
        return _mask_clock(a) == _mask_clock(b)
    if name in ("XPENDING", "XINFO"):
        return _mask_idle(cmd, a) == _mask_idle(cmd, b)
    if name == "TTL" and isinstance(a, int) and isinstance(b, int):
        return abs(a - b) <= 1
    return False


def _replay(conns: list[RawConnection], cmds: list[list[str]]) -> tuple[bytes, bytes]:
    for c in conns:
        c.call("DISCARD")  # out of a transaction the last replay left open (an error if none)
        c.call("UNWATCH")
        c.call("FLUSHALL")
    last = (b"", b"")
    for cmd in cmds:
        last = (conns[0].call(*cmd), conns[1].call(*cmd))
    return last


def _shrink(conns: list[RawConnection], cmds: list[list[str]], fails=None) -> list[list[str]]:
    """The shortest sequence found by dropping commands one at a time while `fails` (by default:
    the last reply differs) still holds."""
    def last_differs(seq: list[list[str]]) -> bool:
        ours, theirs = _replay(conns, seq)
        return not equivalent(seq[-1], ours, theirs, conns[1])

    fails = fails or last_differs
    i = 0
    while i < len(cmds) - 1:
        trial = cmds[:i] + cmds[i + 1:]
        if fails(trial):
            cmds = trial
        else:
            i += 1
    return cmds


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_command_sequences(seed, raxdb, oracle):
    conns = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    small = seed % 4 >= 2
    try:
        for c in conns:
            if seed % 2:
                c.call("HELLO", "3")
            c.call("FLUSHALL")
            for name, value in SMALL if small else DEFAULTS:
                assert c.call("CONFIG", "SET", name, value) == b"+OK\r\n", name
        gen = Gen(random.Random(seed))
        history: list[list[str]] = []
        for _ in range(STEPS):
            cmd = getattr(gen, gen.r.choice(FAMILIES))()
            history.append(cmd)
            ours, theirs = conns[0].call(*cmd), conns[1].call(*cmd)
            if not equivalent(cmd, ours, theirs, conns[1]):
                short = _shrink(conns, history)
                ours, theirs = _replay(conns, short)
                lines = "\n".join("    " + " ".join(repr(a) for a in c) for c in short)
                pytest.fail(f"seed {seed}, RESP{2 + seed % 2}, small={small}: {len(history)} commands, "
                            f"shrunk to:\n{lines}\n  raxdb: {ours!r}\n  redis: {theirs!r}")
    finally:
        for c in conns:
            c.call("DISCARD")
            for name, value in DEFAULTS:
                c.call("CONFIG", "SET", name, value)
            c.close()


PONG = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"


def keyspace_messages(sub: RawConnection) -> list[bytes]:
    """Every keyspace message published so far: the subscriber's PING is answered after them."""
    sub.send(b"*1\r\n$4\r\nPING\r\n")
    out = []
    while (frame := sub.read_frame()) != PONG:
        out.append(frame)
    return out


def side_channel_fuzz(seed: int, raxdb, oracle, label: str, watchers: list[RawConnection],
                      before_each: Callable[[], None], heard: Callable[[RawConnection], list[bytes]],
                      fresh: Callable[[RawConnection], None] = lambda c: None) -> None:
    """Run a random sequence on both servers and compare, after every command, its reply and what
    each pair of `watchers` (raxdb's, then redis's, alternating) has `heard`; shrink and fail on
    the first difference.  `before_each` runs before every command, `fresh` on each command
    connection before every replay.  Active expiry is off on both servers, so a key whose
    deadline passed expires when a command looks it up, at the same point in both streams, not
    when either server's cron runs."""
    conns = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    pairs = [watchers[i:i + 2] for i in range(0, len(watchers), 2)]

    def first_difference(seq: list[list[str]]) -> int | None:
        for c in conns:
            c.call("DISCARD")
            c.call("UNWATCH")
            c.call("SELECT", "0")
            fresh(c)
        for w in watchers:
            heard(w)
        for i, cmd in enumerate(seq):
            before_each()
            ours, theirs = conns[0].call(*cmd), conns[1].call(*cmd)
            if not equivalent(cmd, ours, theirs, conns[1]):
                return i
            for a, b in pairs:
                if heard(a) != heard(b):
                    return i
        return None

    try:
        for c in conns:
            c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            for name, value in SMALL if seed % 4 >= 2 else DEFAULTS:
                c.call("CONFIG", "SET", name, value)
        gen = Gen(random.Random(seed))
        history = [getattr(gen, gen.r.choice(FAMILIES))() for _ in range(STEPS)]
        at = first_difference(history)
        if at is not None:
            short = _shrink(conns, history[:at + 1], lambda seq: first_difference(seq) is not None)
            lines = "\n".join("    " + " ".join(repr(a) for a in c) for c in short)
            pytest.fail(f"seed {seed}, {label}: differs at command {at}, shrunk to:\n{lines}")
    finally:
        for c in conns:
            c.call("DISCARD")
            c.call("CONFIG", "SET", "notify-keyspace-events", "")
            c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            for name, value in DEFAULTS:
                c.call("CONFIG", "SET", name, value)
        for c in conns + watchers:
            c.close()


@pytest.mark.parametrize("seed", range(32))
def test_random_command_notifications(seed, raxdb, oracle):
    """The same random sequences with keyspace notifications on (KEA, or KEAn for "new" events): a
    PSUBSCRIBEd connection per server must receive the same messages, in the same order, for every
    command."""
    flags = "KEAn" if seed % 2 else "KEA"
    subs = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    for s in subs:
        s.call("PSUBSCRIBE", "__key*__:*")

    def fresh(c: RawConnection) -> None:
        c.call("CONFIG", "SET", "notify-keyspace-events", "")
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "notify-keyspace-events", flags)

    side_channel_fuzz(10_000 + seed, raxdb, oracle, flags, subs, lambda: None, keyspace_messages, fresh)


def pushes(conn: RawConnection) -> list[bytes]:
    """Every invalidation sent to a RESP3 tracking connection so far: its PING is answered after
    them (a BCAST one's are sent at the end of the event-loop iteration of the change, before
    this PING is read)."""
    conn.send(b"*1\r\n$4\r\nPING\r\n")
    out = []
    while (frame := conn.read_frame()) != b"+PONG\r\n":
        out.append(frame)
    return out


@pytest.mark.parametrize("seed", range(32))
def test_random_command_invalidations(seed, raxdb, oracle):
    """The same random sequences with two client-side caching connections per server: a BCAST one
    hears of every key any command changes (Redis's signalModifiedKey), and a default-mode one
    reads every key before each command and is told of each it read that changed.  Both must get
    the same invalidations, in the same order, for every command."""
    bcast = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    readers = [RawConnection(raxdb.port), RawConnection(oracle.port)]
    for t in bcast + readers:
        t.call("HELLO", "3")
        t.call("CLIENT", "TRACKING", "on", *(["BCAST"] if t in bcast else []))
    every_key = ("MGET", *KEYS, LEX_KEY)

    def read_every_key() -> None:
        for t in readers:
            t.call(*every_key)

    side_channel_fuzz(20_000 + seed, raxdb, oracle, "invalidations", bcast + readers, read_every_key, pushes,
                      lambda c: c.call("FLUSHALL"))
