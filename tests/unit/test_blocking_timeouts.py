"""Blocking timeouts at their edges, on raxdb and redis-server side by side: never answered before
the deadline (issue #55).

Redis times a blocked client out on its first check after the deadline (checkBlockedClientTimeout:
`timeout < now`, in whole ms), so a reply never comes before the timeout has passed.  Each command
is timed at the client, from before it is sent to after its reply is read: that interval holds the
server's own, so `elapsed >= timeout` is a correctness property that load cannot break (a loaded
host only makes replies later).  No upper bound is asserted: lateness is a benchmark's business
(bench/blocking_timeouts.py).  The replies themselves are compared byte for byte.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.diff import RawConnection, encode_command

COMMANDS = [
    lambda k, t: ("BRPOP", k, t),
    lambda k, t: ("BZPOPMIN", k, t),
    lambda k, t: ("BLMOVE", k, k + ":dst", "LEFT", "RIGHT", t),
    lambda k, t: ("XREAD", "BLOCK", str(round(float(t) * 1000)), "STREAMS", k, "$"),
    lambda k, t: ("BLPOP", k, k + ":other", t),
]


def timed(port: int, commands: list[tuple[str, ...]]) -> list[tuple[float, bytes]]:
    """Each command on a connection of its own, all at once: (seconds at the client, reply)."""
    conns = [RawConnection(port) for _ in commands]
    results: list[tuple[float, bytes]] = [(0.0, b"")] * len(commands)
    start = threading.Barrier(len(commands))

    def run(i: int) -> None:
        data = encode_command(commands[i])
        start.wait()
        t0 = time.perf_counter()
        conns[i].send(data)
        frame = conns[i].read_frame()
        results[i] = (time.perf_counter() - t0, frame)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(commands))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    return results


def on_both(raxdb, oracle, commands: list[tuple[str, ...]]) -> list[list[tuple[float, bytes]]]:
    """`timed` on both servers at the same time (the test takes one timeout, not two)."""
    out: list[list[tuple[float, bytes]]] = [[], []]

    def run(i: int, port: int) -> None:
        out[i] = timed(port, commands)

    threads = [threading.Thread(target=run, args=(i, s.port)) for i, s in enumerate((raxdb, oracle))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def assert_never_early(timeout: float, ours: list[tuple[float, bytes]], theirs: list[tuple[float, bytes]],
                       commands: list[tuple[str, ...]]) -> None:
    for cmd, (our_s, our_reply), (their_s, their_reply) in zip(commands, ours, theirs, strict=True):
        assert our_reply == their_reply, f"{cmd}: raxdb {our_reply!r}, redis {their_reply!r}"
        assert their_s >= timeout, f"{cmd}: redis-server answered after {their_s * 1000:.3f} ms (the oracle)"
        assert our_s >= timeout, f"{cmd}: raxdb answered after {our_s * 1000:.3f} ms, before its timeout"


# 0.25 s lands between two cron ticks (hz 10: every 100 ms); 0.001 is one clock tick of Redis's
@pytest.mark.parametrize("timeout", ["0.001", "0.2", "0.25", "1"])
def test_no_reply_before_the_timeout(raxdb, oracle, timeout):
    commands = [make(f"bto:{timeout}:{i}", timeout) for i, make in enumerate(COMMANDS)]
    ours, theirs = on_both(raxdb, oracle, commands)
    assert_never_early(float(timeout), ours, theirs, commands)


def test_many_clients_at_once_none_early(raxdb, oracle):
    """Fifty clients blocked with the same timeout at the same moment (one loop turn's deadlines)."""
    commands = [COMMANDS[i % 2](f"btm:{i}", "0.2") for i in range(50)]
    ours, theirs = on_both(raxdb, oracle, commands)
    assert_never_early(0.2, ours, theirs, commands)
