"""Differential fuzzing of blocked clients: random blocking commands on three connections and
random writes on a fourth, against raxdb and redis-server 7.0 side by side.

Which waiter a write serves, with what, and who stays blocked depends on everything the blocking
machinery does: which writes signal a key (only creation, XADD, a stream going away, XGROUP
DESTROY, SWAPDB, FLUSH*), the order keys become ready, first-block-first-serve, type checks at
serve time, BLMOVE chains, transactions.  Targeted tests cover the cases someone thought of; this
covers their combinations.

Each step either sends a blocking command on an idle blocker or runs one writer command; then an
observer connection lists the clients (CLIENT LIST) on both servers: the sets of blocked clients
must be equal, and every client that was blocked and no longer is has its reply read from both
servers and compared.  A blocking command's own fate is learnt the same way: the observer polls
until the server has run it (the client's last command is no longer the CLIENT SETNAME sent just
before), then sees whether it blocked.  Blocked clients use RESP3 on odd seeds, and the third one
works in database 1 (SWAPDB and MOVE bring keys to it).  On every third seed keyspace
notifications are on, and the messages each step publishes (a served pop's among them) are
compared too.

Left out, because Redis's answer is not reproducible: SWAPDB while a client waits on several keys
(Redis signals the swapped keys in its dict's hash order, which decides the key it is served from)
and timeouts that can expire (every timeout is 0 or 1000 s).
"""

from __future__ import annotations

import random

import pytest

from tests.fuzz.test_fuzz import DEFAULTS, SMALL, equivalent, keyspace_messages
from tests.support.diff import RawConnection, encode_command
from tests.support.fuzzgen import Gen

BLOCKERS = 3
STEPS = 150
SEEDS = 64


def _client_list(conn: RawConnection) -> dict[str, dict[str, str]]:
    """CLIENT LIST's fields of the blockers (named b0, b1, ...), by name."""
    raw = conn.call("CLIENT", "LIST")
    out = {}
    for line in raw.split(b"\r\n", 1)[1].decode().splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields.get("name", "").startswith("b"):
            out[fields["name"]] = fields
    return out


def _waited_keys(cmd: list[str]) -> set[str]:
    name = cmd[0]
    if name in ("BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"):
        return set(cmd[1:-1])
    if name in ("BLMOVE", "BRPOPLPUSH"):
        return {cmd[1]}
    if name in ("BLMPOP", "BZMPOP"):
        return set(cmd[3:3 + int(cmd[2])])
    rest = cmd[cmd.index("STREAMS") + 1:]
    return set(rest[: len(rest) // 2])


class Side:
    """One server's connections: the writer, the observer and the blockers."""

    def __init__(self, port: int, resp: int, notify: bool) -> None:
        self.writer = RawConnection(port)
        self.observer = RawConnection(port)
        self.subscriber = None
        if notify:  # active expiry off: a key past its deadline expires when looked up, on both
            self.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            self.writer.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            self.subscriber = RawConnection(port)
            self.subscriber.call("PSUBSCRIBE", "__key*__:*")
        self.blockers = [RawConnection(port) for _ in range(BLOCKERS)]
        for i, b in enumerate(self.blockers):
            b.call("CLIENT", "SETNAME", f"b{i}")
            if resp == 3:
                b.call("HELLO", "3")
            if i == 2:
                b.call("SELECT", "1")
        self.writer.call("HELLO", str(resp))

    def start_blocking(self, i: int, cmd: list[str]) -> bool:
        """Send `cmd` on blocker i; whether it blocked, once the server has run it."""
        name = f"b{i}"
        self.blockers[i].call("CLIENT", "SETNAME", name)
        self.blockers[i].send(encode_command(cmd))
        while (fields := _client_list(self.observer)[name])["cmd"] == "client|setname":
            pass
        return "b" in fields["flags"]

    def blocked(self) -> set[str]:
        return {name for name, f in _client_list(self.observer).items() if "b" in f["flags"]}

    def messages(self) -> list[bytes]:
        return [] if self.subscriber is None else keyspace_messages(self.subscriber)

    def close(self) -> None:
        if self.subscriber is not None:
            self.writer.call("CONFIG", "SET", "notify-keyspace-events", "")
            self.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            self.subscriber.close()
        for c in [self.writer, self.observer, *self.blockers]:
            c.close()


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_blocking_sessions(seed, raxdb, oracle):
    resp = 3 if seed % 2 else 2
    sides = [Side(raxdb.port, resp, seed % 3 == 0), Side(oracle.port, resp, seed % 3 == 0)]
    log: list[str] = []

    def fail(what: str) -> None:
        lines = "\n".join("    " + e for e in log[-25:])
        pytest.fail(f"seed {seed}, RESP{resp}: {what}\n  last steps:\n{lines}")

    try:
        for s in sides:
            s.writer.call("FLUSHALL")
            for name, value in SMALL if seed % 4 >= 2 else DEFAULTS:
                s.writer.call("CONFIG", "SET", name, value)
        gen = Gen(random.Random(20_000 + seed))
        blocked: dict[str, set[str]] = {}  # blocker name -> the keys it waits on
        for _ in range(STEPS):
            idle = [i for i in range(BLOCKERS) if f"b{i}" not in blocked]
            if idle and gen.r.random() < 0.3:
                i = gen.r.choice(idle)
                cmd = gen.blocking()
                log.append(f"b{i}: {' '.join(cmd)}")
                did_block = [s.start_blocking(i, cmd) for s in sides]
                if did_block[0] != did_block[1]:
                    fail(f"b{i} blocked on raxdb: {did_block[0]}, on redis: {did_block[1]}")
                if did_block[0]:
                    blocked[f"b{i}"] = _waited_keys(cmd)
                else:
                    ours, theirs = (s.blockers[i].read_frame() for s in sides)
                    if not equivalent(cmd, ours, theirs, sides[1].writer):
                        fail(f"b{i} answered at once\n  raxdb: {ours!r}\n  redis: {theirs!r}")
                continue
            cmd = gen.waking()
            if cmd[0] == "SWAPDB" and any(len(keys) > 1 for keys in blocked.values()):
                cmd = ["PING"]
            if blocked and gen.r.random() < 0.05:
                target = gen.r.choice(sorted(blocked))
                how = gen.r.choice([[], ["TIMEOUT"], ["ERROR"]])
                log.append(f"writer: CLIENT UNBLOCK <{target}> {' '.join(how)}")
                cmd = ["CLIENT", "UNBLOCK"]
                replies = [s.writer.call(*cmd, _client_list(s.observer)[target]["id"], *how) for s in sides]
            else:
                log.append("writer: " + " ".join(cmd))
                replies = [s.writer.call(*cmd) for s in sides]
            if not equivalent(cmd, replies[0], replies[1], sides[1].writer):
                fail(f"writer reply\n  raxdb: {replies[0]!r}\n  redis: {replies[1]!r}")
            now = [s.blocked() for s in sides]
            if now[0] != now[1]:
                fail(f"blocked clients: raxdb {sorted(now[0])}, redis {sorted(now[1])}")
            for name in sorted(set(blocked) - now[0]):
                i = int(name[1:])
                ours, theirs = (s.blockers[i].read_frame() for s in sides)
                if ours != theirs:
                    fail(f"{name} served\n  raxdb: {ours!r}\n  redis: {theirs!r}")
                del blocked[name]
            ours, theirs = (s.messages() for s in sides)
            if ours != theirs:
                fail(f"keyspace messages\n  raxdb: {ours!r}\n  redis: {theirs!r}")
    finally:
        for s in sides:
            s.close()
        for port in (raxdb.port, oracle.port):
            admin = RawConnection(port)
            admin.call("DISCARD")
            for name, value in DEFAULTS:
                admin.call("CONFIG", "SET", name, value)
            admin.close()
