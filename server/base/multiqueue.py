"""MULTI's queue (a client's `multi` while it is in MULTI, `exec_queue` while EXEC runs it).

Rule: the queue is one flat list, each queued command two items in a row, its command record and
then its argv (`[cmd, argv, cmd, argv, ...]`), not a (command, argv) pair each: queueing a command
is then two appends, and EXEC's end frees no pair objects (a pair was ~100 instructions a queued
command to make and free).  Who appends to it is the dispatcher (server/net/client.py, execute()
and the fast loop) and the AOF loader; EXEC (server/commands/t_multi.py) walks it by index.
Everyone else reads it through `queued` and `queued_count`.

Invariant: the list's length is even; item 2*i is a command record, item 2*i + 1 its argv.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def queued(queue: list[Any]) -> Iterator[tuple[Any, list[bytes]]]:
    """The queued commands as (command, argv) pairs, in order."""
    return zip(queue[0::2], queue[1::2], strict=True)


def queued_count(queue: list[Any]) -> int:
    """How many commands are queued."""
    return len(queue) // 2
