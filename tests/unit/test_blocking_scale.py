"""Blocking at scale, proven small: 1,000 clients blocked on 100 keys, raxdb against redis-server.

The properties bench/blocking_bench.py measures at 10,000 clients, without its timing: every
client is served exactly once, each key's waiters first-block-first-serve, and raxdb's outcome is
redis-server's, client by client.  The expected outcome also comes from a small model (a list and
a FIFO of waiters per key, waiters served after each push command until the list or the FIFO is
empty), checked against redis-server first, so the test states what Redis does rather than only
that the two servers agree.

Waiter j of key i blocks in round j; a round is sent only when the server reports every earlier
waiter blocked (INFO clients blocked_clients), so the order on each key is known.  On half of the
keys the odd-ranked waiters use BRPOP, so who is served in which order decides which end each pops.
The pushes vary per key (i % 4):
  0. one RPUSH of 10 elements: all 10 waiters served by one command;
  1. 10 one-element pushes, RPUSH and LPUSH alternating, pipelined: served after each command;
  2. one RPUSH of 15: all served, 5 elements left in the list;
  3. RPUSH of 4 (6 waiters stay blocked, counted), then, in a second phase, LPUSH of 6.
A PING barrier on every connection at the end shows no client had a second reply pending.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import pytest

from bench.blocking_bench import (
    Conn,
    Tally,
    await_blocked,
    await_disconnected,
    barrier,
    block_in_rounds,
    blocked_clients,
    clients_field,
    connect,
)
from tests.support.diff import encode_command

KEYS = 100
PER_KEY = 10
PHASES = 2


def key(i: int) -> bytes:
    return b"scale:%d" % i


def elem(i: int, n: int) -> bytes:
    return b"v%d.%d" % (i, n)


def pops_right(i: int, j: int) -> bool:
    return (i // 4) % 2 == 1 and j % 2 == 1


def waiter_command(i: int, j: int) -> tuple[Any, ...]:
    return ("BRPOP" if pops_right(i, j) else "BLPOP", key(i), 0)


def pushes(i: int, phase: int) -> list[tuple[Any, ...]]:
    """The push commands for key i in a phase (0 or 1)."""
    group = i % 4
    if phase == 1:
        return [("LPUSH", key(i), *(elem(i, n) for n in range(4, 10)))] if group == 3 else []
    if group == 0:
        return [("RPUSH", key(i), *(elem(i, n) for n in range(10)))]
    if group == 1:
        return [("LPUSH" if n % 2 else "RPUSH", key(i), elem(i, n)) for n in range(10)]
    if group == 2:
        return [("RPUSH", key(i), *(elem(i, n) for n in range(15)))]
    return [("RPUSH", key(i), *(elem(i, n) for n in range(4)))]


def model() -> dict[str, Any]:
    """What Redis 7 does: a push command adds all its elements, then the key's waiters are served
    in the order they blocked, one element each, until the list or the waiters run out."""
    lists = {i: deque() for i in range(KEYS)}
    queues = {i: deque(range(PER_KEY)) for i in range(KEYS)}
    replies: dict[tuple[int, int], list[Any]] = {}
    push_replies: list[int] = []
    blocked_after: list[int] = []
    for phase in range(PHASES):
        for i in range(KEYS):
            lst, queue = lists[i], queues[i]
            for cmd, k, *elements in pushes(i, phase):
                if cmd == "RPUSH":
                    lst.extend(elements)
                else:
                    lst.extendleft(elements)
                push_replies.append(len(lst))
                while queue and lst:
                    j = queue.popleft()
                    replies[(i, j)] = [[k, lst.pop() if pops_right(i, j) else lst.popleft()]]
        blocked_after.append(sum(map(len, queues.values())))
    return {
        "replies": {(i, j): replies.get((i, j), []) for i in range(KEYS) for j in range(PER_KEY)},
        "push replies": push_replies,
        "blocked after each phase": blocked_after,
        "extra replies before the barrier": 0,
        "lists left": {key(i): list(lst) for i, lst in lists.items() if lst},
    }


async def outcome(port: int, protocol: int) -> dict[str, Any]:
    """Run the scenario on one server and return what happened, in model()'s shape."""
    admin, pusher = await connect(port, 2, protocol=protocol)
    waiters: list[Conn] = []
    try:
        await admin.call("FLUSHALL")
        await await_blocked(admin, 0)  # earlier tests' blocked clients are gone
        connected_before = await clients_field(admin, "connected_clients")
        tally = Tally()
        waiters = await connect(port, KEYS * PER_KEY, tally, protocol)

        def waiter(i: int, j: int) -> Conn:
            return waiters[i * PER_KEY + j]

        await block_in_rounds(admin, ([(waiter(i, j), encode_command(waiter_command(i, j))) for i in range(KEYS)]
                                      for j in range(PER_KEY)))
        blocked_after: list[int] = []
        blocked = KEYS * PER_KEY
        for phase in range(PHASES):
            commands = [cmd for i in range(KEYS) for cmd in pushes(i, phase)]
            last = len(pusher.replies) + len(commands) - 1
            base = tally.count
            pusher.send(b"".join(map(encode_command, commands)))
            await pusher.reply(last)
            # Serving is done when the pushes' replies are: whoever is not blocked now was served,
            # and its reply is on the way.
            now_blocked = await blocked_clients(admin)
            await tally.reach(base + blocked - now_blocked, f"replies to the clients served in phase {phase}")
            blocked = now_blocked
            blocked_after.append(blocked)
        replies = {(i, j): waiter(i, j).take()[0] for i in range(KEYS) for j in range(PER_KEY)}
        extra = await barrier(waiters, tally)
        lists = {}
        for i in range(KEYS):
            items = await admin.call("LRANGE", key(i), 0, -1)
            if items:
                lists[key(i)] = items
        # leave the shared server as found: later tests count its clients (CLIENT LIST, maxclients)
        await await_disconnected(admin, waiters, connected_before)
        return {
            "replies": replies,
            "push replies": pusher.take()[0],
            "blocked after each phase": blocked_after,
            "extra replies before the barrier": extra,
            "lists left": lists,
        }
    finally:
        for c in [admin, pusher, *waiters]:
            c.close()


def assert_same(got: dict[str, Any], want: dict[str, Any], got_name: str, want_name: str) -> None:
    """Compare outcomes part by part, naming the first few clients that differ."""
    for part, expected in want.items():
        actual = got[part]
        if part == "replies":
            wrong = [f"waiter {j} of {key(i)!r}: {got_name} {actual[(i, j)]!r}, {want_name} {expected[(i, j)]!r}"
                     for (i, j) in expected if actual[(i, j)] != expected[(i, j)]]
            assert not wrong, f"{len(wrong)} clients differ, e.g.\n  " + "\n  ".join(wrong[:5])
        else:
            assert actual == expected, f"{part}: {got_name} {actual!r}\n{want_name} {expected!r}"


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_thousand_waiters_served_once_in_block_order(raxdb, oracle, protocol):
    expected = model()
    # the model's own sanity: every client is served exactly once, and some keys keep elements
    assert all(len(r) == 1 for r in expected["replies"].values())
    assert expected["blocked after each phase"] == [KEYS // 4 * 6, 0]
    assert len(expected["lists left"]) == KEYS // 4

    theirs = asyncio.run(outcome(oracle.port, protocol))
    assert_same(theirs, expected, "redis", "model")
    ours = asyncio.run(outcome(raxdb.port, protocol))
    assert_same(ours, theirs, "raxdb", "redis")
