"""Histories of client operations under faults, and the checker that reads them after healing (#58).

A history is what the clients saw, nothing the servers say about themselves: each write's key,
value, outcome ("ok": acknowledged; "fail": a definite refusal such as NOREPLICAS, CLUSTERDOWN or
MOVED, so the write must not exist; "unknown": a timeout or a dropped connection, either way is
right) and how many replicas its WAIT counted.  Every write has a key of its own (no write ever
overwrites another), so the final state answers for each write on its own.

The checker's rule: a write acknowledged under the promise in question (its WAIT counted the
replicas the scenario requires) must be in the final state with its value; an acknowledged write
outside the promise may be lost by design (counted, and compared with redis-server's count, never
failed on); a refused write must not appear (a phantom).  `verdict` is "ok" when nothing promised
is lost and nothing refused appears.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"


@dataclass
class Write:
    client: int
    key: str
    value: str
    outcome: str = UNKNOWN
    acks: int = 0          # the replicas WAIT counted (0 without a WAIT, or when it failed)
    need: int = 0          # the replicas the WAIT asked for
    node: str = ""         # where it was sent (host:port)
    error: str = ""
    phase: str = ""        # the schedule's phase when the write was sent ("before", "cut", "healed")


@dataclass
class History:
    writes: list[Write] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, w: Write) -> None:
        with self._lock:
            self.writes.append(w)

    def acked(self) -> list[Write]:
        with self._lock:
            return [w for w in self.writes if w.outcome == OK]


def classify(exc: BaseException) -> tuple[str, str]:
    """(outcome, error) of a write that raised: a server's refusal is definite, anything else
    (a timeout, a connection lost in a partition) leaves the write's fate unknown."""
    import redis

    if isinstance(exc, redis.ResponseError):
        # redis-py strips the code of the errors it has classes for (MOVED, CLUSTERDOWN, ...)
        code = type(exc).__name__ if type(exc) is not redis.ResponseError else str(exc).split(" ", 1)[0]
        return FAIL, code
    return UNKNOWN, type(exc).__name__


@dataclass
class Verdict:
    acked: int
    promised: int
    lost_promised: list[str]
    lost_unpromised: int
    phantoms: list[str]
    refused: int
    unknown: int

    @property
    def ok(self) -> bool:
        return not self.lost_promised and not self.phantoms

    @property
    def verdict(self) -> str:
        return "ok" if self.ok else "LOST" if self.lost_promised else "PHANTOM"

    def row(self) -> dict[str, object]:
        return {"acked": self.acked, "promised": self.promised, "lost": len(self.lost_promised),
                "lost_unpromised": self.lost_unpromised, "phantoms": len(self.phantoms),
                "refused": self.refused, "unknown": self.unknown, "verdict": self.verdict}


def check(history: History, final: Mapping[str, str | None], promised: Callable[[Write], bool]) -> Verdict:
    """`final`: every written key's value after healing (None: absent), read from the nodes that
    own it once they agree; `promised`: is this acknowledged write under the promise?"""
    lost_p: list[str] = []
    lost_u = 0
    phantoms: list[str] = []
    acked = promised_n = refused = unknown = 0
    for w in history.writes:
        there = final.get(w.key) == w.value
        if w.outcome == OK:
            acked += 1
            if promised(w):
                promised_n += 1
                if not there:
                    lost_p.append(f"{w.key}={w.value} (acks {w.acks}, {w.phase})")
            elif not there:
                lost_u += 1
        elif w.outcome == FAIL:
            refused += 1
            if final.get(w.key) is not None:
                phantoms.append(f"{w.key} ({w.error}, {w.phase})")
        else:
            unknown += 1
    return Verdict(acked, promised_n, lost_p, lost_u, phantoms, refused, unknown)


class Clients:
    """`n` client threads, each writing keys of its own ("c<client>:<i>", a unique value each)
    through `op(client, key, value, write)` (which sends the write, fills `write.acks`/`need`, and
    raises what the server answered), until stopped or `limit` writes each; every write recorded.
    `phase` is read at each write (the schedule sets it).  A short pause between writes keeps the
    load modest on a shared machine; it paces, it waits for nothing."""

    def __init__(self, n: int, op: Callable[[int, str, str, Write], None], history: History,
                 limit: int = 20000, tag: str = "") -> None:
        self.op, self.history, self.limit, self.tag = op, history, limit, tag
        self.phase = "before"
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._run, args=(c,), daemon=True, name=f"client-{c}")
                         for c in range(n)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _run(self, client: int) -> None:
        try:
            for i in range(self.limit):
                if self._stop.is_set():
                    return
                w = Write(client, f"{self.tag}c{client}:{i}", f"v{client}.{i}", phase=self.phase)
                try:
                    self.op(client, w.key, w.value, w)
                    w.outcome = OK
                except Exception as e:  # noqa: BLE001 - every answer is part of the history
                    w.outcome, w.error = classify(e)
                self.history.record(w)
                self._stop.wait(0.01)
        except BaseException as e:  # reported by stop()
            self.errors.append(e)

    def halt(self) -> None:
        """Stops the clients (idempotent; what a failed run's cleanup calls)."""
        self._stop.set()
        for t in self._threads:
            if t.ident is not None:
                t.join(60)

    def stop(self) -> None:
        """Stops the clients; fails if one did not stop or broke."""
        self.halt()
        assert not any(t.is_alive() for t in self._threads), "a client did not stop"
        assert not self.errors, self.errors
