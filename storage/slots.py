"""Redis Cluster's hash slots: the slot of a key, and a per-slot index of a database's keys.

What it is.  `key_hash_slot` is Redis's keyHashSlot: CRC16 (the XMODEM variant of Redis's crc16.c:
polynomial 0x1021, initial value 0, no reflection, no final xor) of the key, or of its hash tag
(the bytes between the first `{` and the first `}` after it, when there is at least one), modulo
16384.  `binascii.crc_hqx(data, 0)` is exactly that CRC, computed in C.  `keys_slot` is the one
slot a command's keys hash to (cluster mode's fast loop asks it for every command).  `SlotIndex` keeps, for a
database in cluster mode, the keys of each slot (CLUSTER COUNTKEYSINSLOT, GETKEYSINSLOT, the
count of keys in slots a node gives up), fed by the database's insert and remove.

Rule: pure code, no server imports; the database calls `add`/`discard` only when an index is
installed (cluster mode), so a standalone server pays one `is None` test per key created or removed.

Invariants: `count(s)` is the number of keys of slot `s` in the database; `keys(s, n)` gives the
first n of them newest first (an overwritten key keeps its place), as Redis's GETKEYSINSLOT does.
"""

from __future__ import annotations

from array import array
from binascii import crc_hqx

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

SLOTS = 16384


def crc16(data: bytes) -> int:
    """Redis's crc16 (CRC-16/XMODEM)."""
    return crc_hqx(data, 0)


# The compiled key_hash_slot's table: the CRC of each byte value alone (crc16.c's crc16tab).
_TABLE = array("H", [crc_hqx(bytes((b,)), 0) for b in range(256)])


def key_hash_slot(key: bytes) -> int:
    """Redis's keyHashSlot: the slot of `key`, by its hash tag when it has a non-empty one."""
    if cython.compiled:
        # every command on a key asks this in cluster mode (the fast loop's check, the slot index
        # of a created key): the tag's search and the CRC as C loops over the bytes, one table
        # load a byte, where binascii's call and bytes.find cost ~1,300 instructions a key
        p = key
        n = len(key)
        start = 0
        end = n
        i = 0
        while i < n:
            if p[i] == 123:  # {
                j = i + 1
                while j < n and p[j] != 125:  # }
                    j += 1
                if j < n and j > i + 1:
                    start = i + 1
                    end = j
                break
            i += 1
        t = _TABLE.data.as_ushorts
        crc = 0
        for i in range(start, end):
            crc = ((crc << 8) & 0xFFFF) ^ t[((crc >> 8) ^ p[i]) & 0xFF]
        return crc & 0x3FFF
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            return crc_hqx(key[s + 1:e], 0) & 0x3FFF
    return crc_hqx(key, 0) & 0x3FFF


def keys_slot(argv: list[bytes], positions: tuple[int, ...]) -> int:
    """The slot the keys at `positions` of `argv` all hash to; -1 for no key, -2 when two of them
    hash to different slots."""
    slot = -1
    for p in positions:
        this = key_hash_slot(argv[p])
        if slot == -1:
            slot = this
        elif this != slot:
            return -2
    return slot


class SlotIndex:
    """The keys of a database by slot: a dict per non-empty slot (an ordered set)."""

    __slots__ = ("by_slot",)

    def __init__(self) -> None:
        self.by_slot: dict[int, dict[bytes, None]] = {}

    def add(self, key: bytes) -> None:
        s = key_hash_slot(key)
        keys = self.by_slot.get(s)
        if keys is None:
            keys = self.by_slot[s] = {}
        keys[key] = None

    def discard(self, key: bytes) -> None:
        s = key_hash_slot(key)
        keys = self.by_slot.get(s)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del self.by_slot[s]

    def clear(self) -> None:
        self.by_slot.clear()

    def rebuild(self, keys: list[bytes]) -> None:
        """The index of a database whose contents were swapped in (a diskless load's swapdb)."""
        self.by_slot.clear()
        for k in keys:
            self.add(k)

    def count(self, slot: int) -> int:
        keys = self.by_slot.get(slot)
        return 0 if keys is None else len(keys)

    def keys(self, slot: int, limit: int) -> list[bytes]:
        keys = self.by_slot.get(slot)
        if not keys:
            return []
        out: list[bytes] = []
        for k in reversed(keys):  # newest first, as Redis's slot lists (slotToKeyAddEntry adds at the head)
            if len(out) >= limit:
                break
            out.append(k)
        return out
