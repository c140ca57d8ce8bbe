"""A SCAN-stable slot index over the members of one big container (hash table encodings).

Python dicts and sets cannot be iterated from a saved position, and a position in their iteration
order shifts when earlier members are deleted, which would make *SCAN skip members that were
present the whole time.  This index gives each member a slot that it keeps for as long as it
exists (deleted slots become holes that later members reuse), so a cursor is a slot number:
members present for the whole iteration are returned at least once, as Redis guarantees, with
O(1) work per slot visited and no per-cursor state.  It also gives O(1) random choice of a member
(HRANDFIELD and friends) while holes are a minority.

It is built lazily by the container on the first SCAN or random pick and kept up to date from then
on (`add` / `discard` on every membership change), so containers that are never scanned pay
nothing.  (storage/hashscan.py solves the same cursor problem for sets and sorted sets with
Redis's reverse-binary walk over a virtual table rebuilt after each mutation; this index is kept
incrementally, which suits big hashes scanned while being written and gives random picks.)
"""

from __future__ import annotations

import random
from collections.abc import Iterable


class SlotIndex:
    __slots__ = ("slots", "slot_of", "free")

    def __init__(self, members: Iterable[bytes]) -> None:
        self.slots: list[bytes | None] = list(members)
        self.slot_of: dict[bytes, int] = {m: i for i, m in enumerate(self.slots)}
        self.free: list[int] = []

    def add(self, member: bytes) -> None:
        """Record a member that was not present before."""
        if self.free:
            i = self.free.pop()
            self.slots[i] = member
        else:
            i = len(self.slots)
            self.slots.append(member)
        self.slot_of[member] = i

    def discard(self, member: bytes) -> None:
        i = self.slot_of.pop(member, None)
        if i is not None:
            self.slots[i] = None
            self.free.append(i)
            if len(self.free) > 64 and len(self.free) * 2 > len(self.slots):
                self._shrink_tail()

    def _shrink_tail(self) -> None:
        """Drop trailing holes (no live member moves, so cursors stay valid)."""
        slots = self.slots
        while slots and slots[-1] is None:
            slots.pop()
        n = len(slots)
        self.free = [i for i in self.free if i < n]

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Members in at least `count` slots from `cursor`: (next cursor or 0, members)."""
        slots = self.slots
        n = len(slots)
        if cursor >= n:
            return 0, []
        end = min(n, cursor + max(count, 1))
        return (0 if end >= n else end), [m for m in slots[cursor:end] if m is not None]

    def random_member(self) -> bytes:
        """A uniformly random live member (the container must not be empty)."""
        slots = self.slots
        n = len(slots)
        if len(self.slot_of) * 4 < n:
            return random.choice(list(self.slot_of))
        rand = random.randrange
        while True:
            m = slots[rand(n)]
            if m is not None:
                return m
