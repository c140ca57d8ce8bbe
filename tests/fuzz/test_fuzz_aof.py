"""Differential fuzzing of propagation: random command sequences (tests/support/fuzzgen.py) sent to raxdb
and redis-server 7.0, both appending to an AOF, comparing after every command its reply and the
operations each server appended (tests/support/aofdiff.py).

Each seed is one reproducible session over the generator's shared keys: FLUSHALL, then STEPS
commands from every family but streams (their propagation, XADD's IDs and XREADGROUP's XCLAIMs, is
tested with the stream commands), plus `extras` here, the writes whose propagation is a rewrite
the generator does not reach (absolute deadlines, GEOADD and the GEO stores, the HyperLogLog
commands, RESTORE), with the encoding thresholds at their defaults or tiny, as tests/fuzz/test_fuzz.py
runs them.  Deadlines a relative TTL became are masked (the servers read the clock apart);
everything else, the rewritten commands, their spelling, SELECTs and MULTI/EXEC wraps, must be
the same bytes.  Active expiry is off and no TTL runs out during a run: the keys that expire are
set past their deadline (SET ... EXAT 1), so lazy expiry happens at the same command on both.

Left out, because their outcome is random in Redis and not only in raxdb: SPOP, SRANDMEMBER,
HRANDFIELD, ZRANDMEMBER and RANDOMKEY (the generator never emits them; SPOP's propagation is
tested in tests/unit/test_propagation_keys.py on what each server drew).  A mismatch is shrunk (commands
dropped one at a time while some command still differs) and reported as the short sequence.
"""

from __future__ import annotations

import random

import pytest

from tests.fuzz.test_fuzz import DEFAULTS, SMALL, _shrink, equivalent
from tests.support.aofdiff import AofDiff, mask
from tests.support.fuzzgen import FAMILIES, Gen

STEPS = 250
SEEDS = 64
AOF_FAMILIES = [f for f in FAMILIES if f != "streams"] + ["extras"]


class AofGen(Gen):
    def extras(self) -> list:
        r, k = self.r, self.key
        c = r.choice(["SETEXAT", "GETEXAT", "PEXPIRE", "GEOADD", "PFADD", "PFCOUNT", "PFMERGE", "SETGET",
                      "RESTORE", "GEOSTORE", "PFDEBUG"])
        if c == "GEOSTORE":
            if r.random() < 0.5:
                return ["GEOSEARCHSTORE", k(), k(), "FROMLONLAT", "15", "37", "BYRADIUS", r.choice(["10", "500"]),
                        "km"] + r.sample(["STOREDIST", "ASC", "COUNT 1"], r.randint(0, 2))
            return ["GEORADIUS", k(), "15", "37", r.choice(["10", "500"]), "km", r.choice(["STORE", "STOREDIST"]), k()]
        if c == "PFDEBUG":
            return ["PFDEBUG", r.choice(["GETREG", "TODENSE", "ENCODING"]), k()]
        if c == "SETEXAT":
            return ["SET", k(), self.val(), r.choice(["EXAT", "PXAT"]), r.choice(["4102444800", "1", "0"])]
        if c == "GETEXAT":
            return ["GETEX", k(), r.choice(["EXAT", "PXAT"]), r.choice(["4102444800", "1", "-1"])]
        if c == "PEXPIRE":
            a = ["PEXPIRE", k(), r.choice(["100000", "0", "-5", "x"])]
            if r.random() < 0.4:
                a.append(r.choice(["NX", "XX", "GT", "LT"]))
            return a
        if c == "GEOADD":
            a = ["GEOADD", k()] + r.sample(["NX", "XX", "CH"], r.choice([0, 0, 1]))
            for _ in range(r.randint(1, 2)):
                a += [r.choice(["13.361389", "15.087269", "200", "-73.9"]), r.choice(["38.115556", "40.7", "90"]),
                      r.choice(["a", "b", "c"])]
            return a
        if c == "PFADD":
            return ["PFADD", k()] + [r.choice("abcdef") for _ in range(r.randint(0, 3))]
        if c == "PFCOUNT":
            return ["PFCOUNT"] + [k() for _ in range(r.randint(1, 2))]
        if c == "PFMERGE":
            return ["PFMERGE", k()] + [k() for _ in range(r.randint(0, 2))]
        if c == "SETGET":
            return ["SET", k(), self.val(), "GET"] + r.choice([[], ["EX", "100"], ["KEEPTTL"], ["get"]])
        # RESTORE of a payload dumped from a list ["a", "b"] (the same bytes on both servers)
        ttl = r.choice([["0"], ["100000"], ["4102444800000", "ABSTTL"], ["1", "ABSTTL"]])
        return ["RESTORE", k(), ttl[0], _PAYLOAD, *ttl[1:]] + (["REPLACE"] if r.random() < 0.6 else [])


# DUMP of RPUSH x a b in Redis 7.0 (RDB version 10, a listpack quicklist)
_PAYLOAD = b"\x12\x01\x02\r\r\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\n\x00h\xeb\n\x89\x13A\xbb\xb1"


def _short(ops: list[list[bytes]]) -> str:
    return "\n".join("      " + " ".join(repr(a if len(a) < 60 else a[:60] + b"...") for a in op) for op in ops)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_sequences_append_the_same(seed, aof_pair):
    d = AofDiff(*aof_pair)
    conns = d.conns
    last: list = []

    def first_difference(seq: list[list[str]]) -> int | None:
        for c in conns:
            c.call("DISCARD")
            c.call("UNWATCH")
            c.call("SELECT", "0")
            c.call("FLUSHALL")
        d.ops()
        for i, cmd in enumerate(seq):
            ours, theirs = d.run(*cmd)
            a, b = (mask(ops) for ops in d.ops())
            last[:] = [ours, theirs, a, b]
            if not equivalent(cmd, ours, theirs, conns[1]) or a != b:
                return i
        return None

    try:
        for c in conns:
            c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            for name, value in SMALL if seed % 2 else DEFAULTS:
                assert c.call("CONFIG", "SET", name, value) == b"+OK\r\n", name
        gen = AofGen(random.Random(seed))
        history = [getattr(gen, gen.r.choice(AOF_FAMILIES))() for _ in range(STEPS)]
        at = first_difference(history)
        if at is not None:
            short = _shrink(conns, history[:at + 1], lambda seq: first_difference(seq) is not None)
            short = short[:first_difference(short) + 1]  # type: ignore[operator]
            ours, theirs, a, b = last
            lines = "\n".join("    " + " ".join(repr(x) for x in c) for c in short)
            pytest.fail(f"seed {seed}: differs at command {at}, shrunk to:\n{lines}\n"
                        f"  raxdb replied {ours!r}, appended:\n{_short(a)}\n"
                        f"  redis replied {theirs!r}, appended:\n{_short(b)}")
    finally:
        for c in conns:
            c.call("DISCARD")
            c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            for name, value in DEFAULTS:
                c.call("CONFIG", "SET", name, value)
        d.close()
