"""Differential fuzzing of Pub/Sub: three subscribers and a publisher per server, random
(P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE (with and without arguments, repeated names), PUBLISH,
SPUBLISH and PUBSUB introspection, against redis-server 7.0.

After each step every subscriber sends PING with a token and everything it received before the
answer (confirmations, messages, pattern messages) must be what Redis sent, in RESP2 (subscribed
mode) or RESP3 (push frames).  Two tolerances, where Redis's own order is a hash table's: the
confirmations of UNSUBSCRIBE / SUNSUBSCRIBE without arguments (a client's channels are a dict in
7.0; the names are compared as a multiset, the counts in order), and the pattern messages one
client gets for one PUBLISH through several of its patterns (compared as a multiset); PUBSUB
CHANNELS and SHARDCHANNELS are sets.  PUNSUBSCRIBE without arguments is compared exactly: 7.0
keeps a client's patterns in a list, and this test is how that order was found missing.
"""

from __future__ import annotations

import random

import pytest

from tests.support.diff import RawConnection, encode_command, parse

CHANNELS = ["ch1", "ch2", "news.a", "news.b", "hello", "hallo", "h[a]llo", "x"]
PATTERNS = ["news.*", "ch?", "h[ae]llo", "*", "h\\[a\\]llo", "ch[^1]", "nomatch*"]
SYNC = (b"*2\r\n$4\r\npong\r\n$4\r\nSYNC\r\n", b"$4\r\nSYNC\r\n")  # RESP2 subscribed / RESP3
SEEDS = 32
STEPS = 150


def _received(conn: RawConnection) -> list[bytes]:
    conn.send(encode_command(("PING", "SYNC")))
    out = []
    while (frame := conn.read_frame()) not in SYNC:
        out.append(frame)
    return out


def _same(ours: list[bytes], theirs: list[bytes], how: str) -> bool:
    if ours == theirs:
        return True
    if how == "unsubscribe-all":  # [kind, name, count]: names in hash order, counts counting down
        a, b = [parse(f) for f in ours], [parse(f) for f in theirs]
        return (len(a) == len(b) and sorted(repr(x[:2]) for x in a) == sorted(repr(x[:2]) for x in b)
                and [x[2] for x in a] == [x[2] for x in b])
    return how == "publish" and sorted(ours) == sorted(theirs)  # several patterns of one client


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_pubsub_sessions(seed, raxdb, oracle):
    r = random.Random(30_000 + seed)
    resp = 3 if seed % 2 else 2
    subs = [[RawConnection(port) for _ in range(3)] for port in (raxdb.port, oracle.port)]
    pubs = [RawConnection(port) for port in (raxdb.port, oracle.port)]
    log: list[str] = []
    try:
        if resp == 3:
            for side in subs:
                for conn in side:
                    conn.call("HELLO", "3")
        for _ in range(STEPS):
            actor = None
            if r.random() < 0.5:
                actor = r.randrange(3)
                op = r.choice(["SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE"])
                pool = PATTERNS if op.startswith("P") else CHANNELS
                n = r.choice([0, 1, 1, 2, 3]) if "UN" in op else r.choice([1, 1, 2, 3])
                cmd = [op] + [r.choice(pool) for _ in range(n)]
                log.append(f"s{actor}: {' '.join(cmd)}")
                for side in subs:
                    side[actor].send(encode_command(cmd))
            else:
                op = r.choice(["PUBLISH", "PUBLISH", "PUBLISH", "SPUBLISH", "NUMSUB", "NUMPAT", "SHARDNUMSUB",
                               "CHANNELS", "SHARDCHANNELS"])
                if op in ("PUBLISH", "SPUBLISH"):
                    cmd = [op, r.choice(CHANNELS), r.choice(["m1", "m2", ""])]
                elif op in ("NUMSUB", "SHARDNUMSUB"):
                    cmd = ["PUBSUB", op] + [r.choice(CHANNELS) for _ in range(r.randint(0, 3))]
                elif op == "NUMPAT":
                    cmd = ["PUBSUB", op]
                else:
                    cmd = ["PUBSUB", op] + ([r.choice(PATTERNS)] if r.random() < 0.5 else [])
                log.append("publisher: " + " ".join(cmd))
                ours, theirs = (p.call(*cmd) for p in pubs)
                same = sorted(parse(ours)) == sorted(parse(theirs)) if "CHANNELS" in op else ours == theirs
                assert same, f"seed {seed}: {cmd}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
            for i in range(3):
                ours, theirs = _received(subs[0][i]), _received(subs[1][i])
                if actor == i and cmd in (["UNSUBSCRIBE"], ["SUNSUBSCRIBE"]):
                    how = "unsubscribe-all"
                else:
                    how = "publish" if cmd[0] == "PUBLISH" else "exact"
                if not _same(ours, theirs, how):
                    steps = "\n".join("    " + e for e in log[-15:])
                    pytest.fail(f"seed {seed}, RESP{resp}, subscriber s{i}:\n  raxdb: {ours!r}\n"
                                f"  redis: {theirs!r}\n  last steps:\n{steps}")
    finally:
        for conn in [*subs[0], *subs[1], *pubs]:
            conn.close()
