"""One logical database: keys, their values, their expiry, and a SCAN-stable slot index.

Values: strings are `bytes` (Redis's int/embstr/raw encodings are inferred from content),
`EmbStr` (bytes Redis holds embstr although they read as an integer) or `bytearray` (a string that
was modified in place by APPEND/SETRANGE/SETBIT: Redis's `raw`).  Every other type is an object
with a `type_name` attribute.

Expiry: a key's absolute deadline in ms is in its record (`Entry.expire`, NO_TTL when it has none,
so a lookup's test is one comparison), and each key with a deadline also holds a position in
`ttl_keys`, an array of keys with holes reused like the SCAN slots (`Entry.tslot`, -1 without
one).  `expires` is a read-only mapping view (key -> deadline) over them for the callers that ask
(TTL, INFO's expires=, persistence, eviction); `nexpires` is its length, what the hot paths test.
Keys expire lazily (a lookup with the cached command time past the deadline deletes them) and
actively: the cron walks `ttl_keys` from a cursor in steps of 20 keys, as Redis's
activeExpireCycle samples the expires dict, deleting those past their deadline, and goes on while
more than a tenth of a step had expired (Redis's ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE).  A key
with a deadline thus costs one array slot beyond the key itself.

SCAN: `slots` is an append-mostly array in which each key keeps its position for as long as it
exists; deleted positions become holes reused by later keys.  A SCAN cursor is a slot position, so a
key present for the whole iteration is returned at least once, as Redis guarantees, with O(1) work
per visited slot and no per-cursor server state.  When the database becomes empty the array
restarts compact (no key can then be present for a whole iteration in progress).

Records: `data` maps key -> `Entry`, the key's record: its value, the time in ms of its last
touching lookup or write (OBJECT IDLETIME, LRU eviction) and its position in `slots`.  This is
Redis's robj header (type, encoding, lru) cut down to what Python does not already know, with the
dictEntry's place in the table beside it: one object per key, read by every lookup anyway, so
touching a key is one store on a record already in hand, and deleting one finds its slot there.
Compiled (keyspace.pxd), the times and slots are C integers and the record is outside the cycle
collector (no value refers back to its record); interpreted, it is a GC-tracked object per key,
which a full collection traverses, and server/main.py's thresholds keep those rare.
`get` (every lookup that touches, GET and the keyaccess helpers included) and `set`/`add` stamp the
entry; `peek` is the lookup that does not touch (Redis's LOOKUP_NOTOUCH: TYPE, TTL, EXISTS,
OBJECT).  `replace` swaps the value and keeps the stamp.  `set`/`add` read the time from `clock`,
which the server points at itself (t_keys.attach) so they use the cached command time.  Only this
module and the inlined fast paths of the type commands (server/commands/t_string.py and others)
see entries; every other caller gets values.

LFU (OBJECT FREQ under an LFU maxmemory-policy): `set_lfu(True)` swaps the database's class to
`LFUDatabase`, whose lookups also keep Redis's logarithmic access counter with decay in `freq`, so
the common (non-LFU) path pays nothing for it; the inlined fast paths test `lfu` and step aside.
As in Redis, the lookup counts an access and an overwrite keeps the counter (dbOverwrite), so a
writer counts once for each lookup Redis's makes (GETSET twice: its read, then setKey's).

Hooks: `watched` (key -> watchers, for WATCH) and the `*_hook` callables are consulted only when
non-empty or installed, so the bookkeeping costs nothing when unused.  Every key comes into being
through `set`, `set_pairs` or `add` (Redis's dbAdd), which is where `new_hook` fires.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from raxdb.storage.alloc import sds_grown_room, sds_new_room
from raxdb.storage.stream import Stream

try:  # compiled, the decorators below are Cython's; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython: they do nothing
    from types import SimpleNamespace

    cython = SimpleNamespace(cclass=lambda cls: cls, no_gc=lambda cls: cls)


class RawStr(bytearray):
    """A string modified in place (APPEND, SETRANGE, SETBIT, ...): Redis's raw encoding, an sds
    string that grows greedily.  `size` is its allocation (what MEMORY USAGE counts) and `cap` what
    it holds before the next growth, following sdsnewlen when it is made from a value and
    sdsMakeRoomFor when it grows, so MEMORY USAGE reports the room Redis keeps for appends."""

    __slots__ = ("size", "cap")

    @classmethod
    def of(cls, value: bytes | bytearray) -> RawStr:
        """`value` as a raw sds.  A short string (embstr or int in Redis) or a built one (bytearray:
        SETRANGE's or BITOP's sdsnewlen) is a fresh sdsnewlen of its length; a longer `bytes` is
        the client's argument Redis stored itself, after tryObjectEncoding trimmed its spare room
        away when that was more than a tenth of its length."""
        s = cls(value)
        n = len(value)
        s.size, s.cap = sds_new_room(n)
        if n > 44 and value.__class__ is bytes and s.cap - n > n // 10:
            s.cap = n
        return s

    def make_room(self, addlen: int) -> None:
        """Room for `addlen` more bytes (sdsMakeRoomFor); call before growing the string."""
        if self.cap - len(self) < addlen:
            self.size, self.cap = sds_grown_room(len(self), addlen)


class EmbStr(bytes):
    """A string value that Redis keeps embstr-encoded whatever its content: INCRBYFLOAT builds its
    result with createStringObjectFromLongDouble, which never tries the int encoding, so "3" stays
    embstr there while SET's "3" becomes int.  Only such values carry the class; the hot paths test
    `__class__ is bytes` and send it to their general branch, which treats it as any string."""

    __slots__ = ()


class WallClock:
    """The default clock of a Database; the server installs itself (its cached `now_ms`) instead."""

    __slots__ = ()

    @property
    def now_ms(self) -> int:
        return int(time.time() * 1000)


INT64_MAX = (1 << 63) - 1
NO_TTL = INT64_MAX  # Entry.expire of a key without a deadline: never <= the time
ACTIVE_EXPIRE_STEP = 20  # keys visited per step (Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP)


@cython.no_gc  # compiled: no cycle-collector header (keyspace.pxd)
@cython.cclass
class Entry:
    """A key's record: its value, the time (ms) of its last access, its position in the SCAN slot
    array, its deadline (ms, NO_TTL if none) and its position in `ttl_keys` (-1 if none); see the
    module essay."""

    __slots__ = ("value", "atime", "slot", "tslot", "expire")

    def __init__(self, value: Any, atime: int, slot: int) -> None:
        self.value = value
        self.atime = atime
        self.slot = slot
        self.tslot = -1
        self.expire = NO_TTL


class Expires:
    """The keys with a deadline and their deadlines, as a read-only mapping (Redis's db->expires,
    seen from outside the keyspace)."""

    __slots__ = ("db",)

    def __init__(self, db: Database) -> None:
        self.db = db

    def __len__(self) -> int:
        return self.db.nexpires

    def __bool__(self) -> bool:
        return self.db.nexpires > 0

    def get(self, key: bytes, default: int | None = None) -> int | None:
        e = self.db.data.get(key)
        return default if e is None or e.tslot < 0 else e.expire

    def __contains__(self, key: object) -> bool:
        e = self.db.data.get(key)  # type: ignore[call-overload]
        return e is not None and e.tslot >= 0

    def __iter__(self) -> Iterator[bytes]:
        return (k for k in self.db.ttl_keys if k is not None)

    def keys(self) -> Iterator[bytes]:
        return iter(self)

    def items(self) -> Iterator[tuple[bytes, int]]:
        data = self.db.data
        return ((k, data[k].expire) for k in self.db.ttl_keys if k is not None)

    def values(self) -> Iterator[int]:
        data = self.db.data
        return (data[k].expire for k in self.db.ttl_keys if k is not None)


class Database:
    __slots__ = ("id", "data", "expires", "nexpires", "ttl_keys", "_ttl_free", "_ttl_cursor", "slots", "_free", "watched", "blocking",
                 "freq", "lfu", "clock", "signals", "expired_hook", "stat_expired",
                 "ready_hook", "new_hook", "sizes", "mem", "expire_paused", "loading")

    def __init__(self, dbid: int) -> None:
        self.id = dbid
        self.data: dict[bytes, Entry] = {}
        self.expires = Expires(self)
        self.nexpires = 0
        self.ttl_keys: list[bytes | None] = []
        self._ttl_free: list[int] = []
        self._ttl_cursor = 0
        self.slots: list[bytes | None] = []
        self._free: list[int] = []
        self.watched: dict[bytes, list[Any]] = {}
        self.blocking: dict[bytes, Any] = {}
        self.freq: dict[bytes, int] = {}  # key -> (minutes << 8) | LFU counter, in LFU mode only
        # LFU mode (set_lfu), which the inlined fast paths test to step aside: `freq` is empty at
        # first after the switch, while the keys already there must start counting at once
        self.lfu = False
        self.clock: Any = WallClock()  # anything with `now_ms`; the server installs itself
        # Must a change of one of this db's keys be signalled (Redis's signalModifiedKey)?  True
        # while clients WATCH keys here or client tracking is on; the server sets it, and the
        # writers test it before they signal, so that a db nobody listens to pays one test.
        self.signals = False
        # expired_hook(db, key): keyspace notification + replication of the DEL, installed by the server.
        self.expired_hook: Callable[[Database, bytes], None] | None = None
        # ready_hook(db, key, value): Redis's signalKeyAsReady, for a key that clients block on
        # (`blocking` has it) and that was created with `value` (dbAdd), or that held the stream
        # `value` and was deleted or overwritten (a blocked XREADGROUP must then fail);
        # installed by the server.
        self.ready_hook: Callable[[Database, bytes, Any], None] | None = None
        # new_hook(db, key): a key was created (the "new" keyspace event, Redis's dbAdd); installed
        # by the server only while notify-keyspace-events has 'n'.
        self.new_hook: Callable[[Database, bytes], None] | None = None
        self.stat_expired = 0
        # While clients are paused (CLIENT PAUSE) the dataset stays as it is: a key past its
        # deadline reads as missing but is not deleted (expireIfNeeded's pause check).
        self.expire_paused = False
        # While the server loads its data (an RDB, the AOF replayed), nothing expires: a key past
        # its deadline is alive, and a deadline already past is set rather than deleting the key
        # (Redis's keyIsExpired and checkAlreadyExpired during loading).  A replayed command must
        # see what the command saw when it was logged, or what it moved elsewhere is lost; keys
        # still past their deadline expire once loading ends.
        self.loading = False
        # Memory accounting (server/memory/evict.py, only while maxmemory is set; None otherwise): key ->
        # the bytes last counted for it, and their sum.  A deleted key leaves here at once; the
        # server re-counts the keys a command touched after it runs.
        self.sizes: dict[bytes, int] | None = None
        self.mem = 0

    # ---- lookups -------------------------------------------------------------------------------
    def get(self, key: bytes, now_ms: int) -> Any:
        """The live value of `key` or None, expiring it first if its deadline has passed; a hit
        counts as an access (OBJECT IDLETIME)."""
        e = self.data.get(key)
        if e is None:
            return None
        if e.expire <= now_ms and e.tslot >= 0 and not self.loading:
            self._expire(key)
            return None
        e.atime = now_ms
        return e.value

    def peek(self, key: bytes, now_ms: int) -> Any:
        """Like `get` but not an access (Redis's LOOKUP_NOTOUCH)."""
        e = self.data.get(key)
        if e is None:
            return None
        if e.expire <= now_ms and e.tslot >= 0 and not self.loading:
            self._expire(key)
            return None
        return e.value

    def stored(self, key: bytes) -> Any:
        """The value as stored, even past its deadline and without touching it (a bare dictFind:
        MEMORY USAGE sizes a key that has expired but was not yet reclaimed, as Redis does)."""
        e = self.data.get(key)
        return None if e is None else e.value

    def record_id(self, key: bytes) -> int:
        """A number naming the key's record while the key exists (DEBUG OBJECT's address of a value
        that is not shared): INCR rewrites a counter in that record as Redis rewrites the robj in
        place, so the number stays put where the bytes object does not."""
        return id(self.data[key])

    def exists(self, key: bytes, now_ms: int) -> bool:
        return self.peek(key, now_ms) is not None

    def access_ms(self, key: bytes) -> int | None:
        """The time of the key's last access, or None if there is no such key."""
        e = self.data.get(key)
        return None if e is None else e.atime

    def idle_ms(self, key: bytes, now_ms: int) -> int:
        """Milliseconds since the key's last access (0 for a missing key)."""
        e = self.data.get(key)
        return 0 if e is None else max(0, now_ms - e.atime)

    def ttl_ms(self, key: bytes) -> int | None:
        """The key's deadline in ms, or None if it has none (or does not exist)."""
        e = self.data.get(key)
        return None if e is None or e.tslot < 0 else e.expire

    def records(self) -> Iterator[tuple[bytes, Any, int | None]]:
        """(key, value, deadline or None) for every key, expired or not, from a snapshot of the
        keys (what a dump writes)."""
        return ((k, e.value, None if e.tslot < 0 else e.expire) for k, e in list(self.data.items()))

    def __len__(self) -> int:
        return len(self.data)

    # ---- writes --------------------------------------------------------------------------------
    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Create or overwrite `key`; an overwrite drops the TTL unless keep_ttl (SET's semantics)."""
        e = self.data.get(key)
        if e is None:
            self.data[key] = Entry(value, self.clock.now_ms, self._add_slot(key))
            if self.blocking or self.new_hook is not None:
                self._created(key, value)
            return
        if not keep_ttl and e.tslot >= 0:
            self._drop_ttl(e)
        if self.blocking and key in self.blocking and self.ready_hook is not None and e.value.__class__ is Stream:
            # Overwriting a stream wakes its waiters (a blocked XREADGROUP then fails), as Redis's
            # dbOverwrite does; overwriting any other type wakes no one, even when the new value
            # is what they wait for (ZUNIONSTORE over a set leaves BZPOPMIN blocked in 7.0).
            self.ready_hook(self, key, e.value)
        e.value = value
        e.atime = self.clock.now_ms

    def set_pairs(self, args: list[bytes], start: int) -> None:
        """`set` for each key, value pair of args[start:] (MSET), in one call: per-pair method
        calls were most of MSET's cost."""
        data = self.data
        now = self.clock.now_ms
        if self.nexpires or self.blocking or self.lfu or self.new_hook:
            for i in range(start, len(args), 2):
                self.set(args[i], args[i + 1])
            return
        for i in range(start, len(args), 2):
            key = args[i]
            e = data.get(key)
            if e is None:
                data[key] = Entry(args[i + 1], now, self._add_slot(key))
            else:
                e.value = args[i + 1]
                e.atime = now

    def add(self, key: bytes, value: Any) -> None:
        """Create `key`, which must not exist."""
        self.data[key] = Entry(value, self.clock.now_ms, self._add_slot(key))
        if self.blocking or self.new_hook is not None:
            self._created(key, value)

    def _created(self, key: bytes, value: Any) -> None:
        """Redis's dbAdd side effects: waiters on the key are signalled (only here and for a stream
        that goes away: a push onto an existing list wakes no one) and the "new" event fires."""
        if self.blocking and key in self.blocking and self.ready_hook is not None:
            self.ready_hook(self, key, value)
        if self.new_hook is not None:
            self.new_hook(self, key)

    def replace(self, key: bytes, value: Any) -> None:
        """Swap the value object of an existing key in place, keeping its TTL and access time."""
        self.data[key].value = value

    def delete(self, key: bytes) -> bool:
        data = self.data
        e = data.pop(key, None)
        if e is None:
            return False
        if self.blocking and key in self.blocking and self.ready_hook is not None and e.value.__class__ is Stream:
            self.ready_hook(self, key, e.value)  # dbGenericDelete: a blocked XREADGROUP must fail
        if e.tslot >= 0:
            self._drop_ttl(e)
        if self.freq:
            self.freq.pop(key, None)
        sizes = self.sizes
        if sizes is not None:
            self.mem -= sizes.pop(key, 0)
        if data:
            slot = e.slot
            self.slots[slot] = None
            self._free.append(slot)
        else:
            # Empty: no key can be mid-iteration, so the slot array restarts compact.
            self.slots = []
            self._free = []
        return True

    def pop(self, key: bytes) -> Any:
        e = self.data.get(key)
        if e is None:
            return None
        self.delete(key)
        return e.value

    def set_expire(self, key: bytes, when_ms: int) -> None:
        """Give the existing `key` the deadline `when_ms` (ms)."""
        e = self.data[key]
        if e.tslot < 0:
            if self._ttl_free:
                e.tslot = self._ttl_free.pop()
                self.ttl_keys[e.tslot] = key
            else:
                e.tslot = len(self.ttl_keys)
                self.ttl_keys.append(key)
            self.nexpires += 1
        e.expire = when_ms

    def _drop_ttl(self, e: Entry) -> None:
        """Forget the deadline of the record `e`, which has one."""
        slot = e.tslot
        e.tslot = -1
        e.expire = NO_TTL
        self.nexpires -= 1
        if self.nexpires:
            self.ttl_keys[slot] = None
            self._ttl_free.append(slot)
        else:  # none left: the array restarts compact
            self.ttl_keys = []
            self._ttl_free = []
            self._ttl_cursor = 0

    def persist(self, key: bytes) -> bool:
        """Remove the key's deadline; False if it had none."""
        e = self.data.get(key)
        if e is None or e.tslot < 0:
            return False
        self._drop_ttl(e)
        return True

    def flush(self) -> int:
        n = len(self.data)
        self.data = {}
        self.nexpires = 0
        self.ttl_keys = []
        self._ttl_free = []
        self._ttl_cursor = 0
        self.slots = []
        self._free = []
        self.freq = {}
        if self.sizes is not None:
            self.sizes = {}
            self.mem = 0
        return n

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keyspaces; hooks, watchers and blocked clients stay with the db number."""
        for name in ("data", "nexpires", "ttl_keys", "_ttl_free", "_ttl_cursor", "slots", "_free", "freq", "sizes",
                     "mem"):
            a, b = getattr(self, name), getattr(other, name)
            setattr(self, name, b)
            setattr(other, name, a)

    # ---- expiry --------------------------------------------------------------------------------
    def _expire(self, key: bytes) -> None:
        if self.expire_paused:
            return  # logically expired (the caller treats it as gone), deleted after the pause
        self.delete(key)
        self.stat_expired += 1
        if self.expired_hook is not None:
            self.expired_hook(self, key)

    def expire_if_needed(self, key: bytes, now_ms: int) -> bool:
        e = self.data.get(key)
        if e is not None and e.expire <= now_ms and e.tslot >= 0 and not self.loading:
            self._expire(key)
            return True
        return False

    def already_expired(self, when_ms: int, now_ms: int) -> bool:
        """checkAlreadyExpired: does a deadline given to EXPIRE, GETEX or RESTORE delete the key
        at once?  Not while loading (see `loading`)."""
        return when_ms <= now_ms and not self.loading

    def active_expire(self, now_ms: int, budget: int) -> int:
        """Delete up to `budget` keys whose deadline has passed, walking `ttl_keys` on from where
        the last call stopped, in steps of ACTIVE_EXPIRE_STEP keys, until a step finds at most a
        tenth of its keys expired or the walk has gone round once.  Returns how many were
        deleted."""
        if self.loading or self.expire_paused:
            return 0
        data = self.data
        pos = self._ttl_cursor
        walked = 0
        done = 0
        while done < budget and self.nexpires:
            keys = self.ttl_keys  # anew each step: the array restarts when its last key goes
            n = len(keys)
            sampled = expired = 0
            while sampled < ACTIVE_EXPIRE_STEP and walked < n and done < budget:
                if pos >= n:
                    pos = 0
                key = keys[pos]
                pos += 1
                walked += 1
                if key is None:
                    continue
                sampled += 1
                if data[key].expire <= now_ms:
                    self._expire(key)
                    expired += 1
                    done += 1
                    if not self.nexpires:
                        break
            if expired * 10 <= sampled or walked >= n:
                break
        self._ttl_cursor = pos if self.nexpires else 0
        return done

    # ---- iteration -----------------------------------------------------------------------------
    def _add_slot(self, key: bytes) -> int:
        """A free position of the slot array, now holding `key` (the new Entry keeps it)."""
        if self._free:
            slot = self._free.pop()
            self.slots[slot] = key
        else:
            slot = len(self.slots)
            self.slots.append(key)
        return slot

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Keys from slot `cursor` on: about `count` of them, visiting at most 10 * count slots
        (Redis's bound on empty buckets per call).  Returns (next cursor or 0 when done, keys).

        Any cursor is accepted: one past the end finishes the iteration."""
        slots = self.slots
        n = len(slots)
        count = max(count, 1)
        keys: list[bytes] = []
        limit = min(n, cursor + 10 * count)
        pos = cursor
        while pos < limit and len(keys) < count:
            end = min(limit, pos + count - len(keys))
            keys.extend([k for k in slots[pos:end] if k is not None])
            pos = end
        return (0 if pos >= n else pos), keys

    def random_key(self) -> bytes | None:
        """A random key (not uniform, like Redis's): probes the slot array, which is at least a
        quarter full unless many keys were deleted; then falls back to a linear pick."""
        if not self.data:
            return None
        slots = self.slots
        n = len(slots)
        rand = random.randrange
        for _ in range(64 if len(self.data) * 4 < n else 1 << 30):
            k = slots[rand(n)]
            if k is not None:
                return k
        return random.choice(list(self.data))

    def sample_keys(self, count: int, volatile: bool) -> list[bytes]:
        """Up to `count` random keys, with a TTL only if `volatile` (Redis's dictGetSomeKeys on the
        main or the expires dict, for eviction): not uniform and possibly repeated, as there."""
        rand = random.randrange
        out: list[bytes] = []
        if volatile:
            if not self.nexpires:
                return out
            keys = self.ttl_keys
            n = len(keys)
            for _ in range(count * 4):
                key = keys[rand(n)]
                if key is not None:
                    out.append(key)
                    if len(out) == count:
                        break
            if not out:  # mostly holes: draw from the live keys
                live = [k for k in keys if k is not None]
                out = random.choices(live, k=min(count, len(live)))
            return out
        if self.data:
            out = [self.random_key() for _ in range(count)]  # type: ignore[misc]
        return out

    def keys(self) -> Iterator[bytes]:
        return iter(self.data)

    # ---- LFU -----------------------------------------------------------------------------------
    def set_lfu(self, enabled: bool) -> None:
        """Start or stop keeping LFU counters (maxmemory-policy *-lfu).  Keys that exist when it
        starts have counter 0 until accessed, as data needs time to adjust in Redis too."""
        self.lfu = enabled
        if enabled and self.__class__ is Database:
            self.__class__ = LFUDatabase
        elif not enabled and self.__class__ is LFUDatabase:
            self.__class__ = Database
            self.freq = {}

    def lfu_counter(self, key: bytes, now_ms: int) -> int:
        """The decayed LFU counter (OBJECT FREQ)."""
        packed = self.freq.get(key)
        if packed is None:
            return 0
        return _lfu_decayed(packed, now_ms // 60000)


# lfu-log-factor and lfu-decay-time, kept current by the server's config hooks.
LFU_PARAMS = {"log_factor": 10, "decay_time": 1}
LFU_INIT_VAL = 5


def _lfu_decayed(packed: int, minutes: int) -> int:
    counter = packed & 255
    decay_time = LFU_PARAMS["decay_time"]
    if decay_time > 0:
        elapsed = (minutes - (packed >> 8)) & 0xFFFF  # Redis keeps a 16-bit minutes clock
        periods = elapsed // decay_time
        if periods:
            counter = 0 if periods > counter else counter - periods
    return counter


def _lfu_incremented(counter: int) -> int:
    if counter >= 255:
        return 255
    base = counter - LFU_INIT_VAL
    if base < 0:
        base = 0
    if random.random() < 1.0 / (base * LFU_PARAMS["log_factor"] + 1):
        counter += 1
    return counter


class LFUDatabase(Database):
    """A Database that also counts accesses the LFU way (see `Database.set_lfu`)."""

    __slots__ = ()

    def _lfu_touch(self, key: bytes, now_ms: int) -> None:
        minutes = (now_ms // 60000) & 0xFFFF
        packed = self.freq.get(key)
        counter = 0 if packed is None else _lfu_decayed(packed, minutes)
        self.freq[key] = (minutes << 8) | _lfu_incremented(counter)

    def get(self, key: bytes, now_ms: int) -> Any:
        v = Database.get(self, key, now_ms)
        if v is not None:
            self._lfu_touch(key, now_ms)
        return v

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """An overwrite keeps the key's counter, as dbOverwrite keeps the old object's LFU field:
        the access is counted by the lookup every writer makes first (setKey's lookupKeyWrite)."""
        existed = key in self.data
        Database.set(self, key, value, keep_ttl)
        if not existed:
            self.freq[key] = (((self.clock.now_ms // 60000) & 0xFFFF) << 8) | LFU_INIT_VAL

    def add(self, key: bytes, value: Any) -> None:
        Database.add(self, key, value)
        self.freq[key] = (((self.clock.now_ms // 60000) & 0xFFFF) << 8) | LFU_INIT_VAL
