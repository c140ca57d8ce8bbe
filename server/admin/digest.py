"""DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis's SHA1 digests of the dataset and of values.

The same bytes go into the same mixes as Redis's debug.c (xorObjectDigest, computeDatasetDigest),
so a digest taken from raxdb equals the one redis-server gives for the same data, and tools (and
Redis's own test suite) can compare datasets across the two.  Order-free members (sets, hashes,
sorted sets, keys of a database) are XORed; ordered ones (list elements, stream entries) are mixed
(digest = SHA1(digest XOR SHA1(bytes))).  Values are hashed in their string form: integers in
decimal, sorted-set scores as "%.17g", stream IDs as "ms.seq".
"""

from __future__ import annotations

import hashlib
from typing import Any

from raxdb.server.events.keyaccess import is_string
from raxdb.storage.keyspace import Database
from raxdb.storage.set_type import as_set

_ZERO = bytes(20)
# Redis's object type codes (OBJ_STRING, OBJ_LIST, ...), which start every value's digest.
_TYPE_CODE = {"string": 0, "list": 1, "set": 2, "zset": 3, "hash": 4, "stream": 6}


def _xor(digest: bytearray, data: bytes) -> None:
    h = hashlib.sha1(data).digest()
    for i in range(20):
        digest[i] ^= h[i]


def _mix(digest: bytearray, data: bytes) -> None:
    _xor(digest, data)
    digest[:] = hashlib.sha1(digest).digest()


def value_digest(db: Database, key: bytes, value: Any, digest: bytearray) -> None:
    """xorObjectDigest: mix `value` (stored under `key` in `db`) into `digest`."""
    if is_string(value):
        _mix(digest, _TYPE_CODE["string"].to_bytes(4, "big"))
        _mix(digest, bytes(value))
    else:
        kind = value.type_name
        _mix(digest, _TYPE_CODE[kind].to_bytes(4, "big"))
        if kind == "list":
            for element in value:
                _mix(digest, element)
        elif kind == "set":
            for member in as_set(value):  # type: ignore[union-attr]  # a set: as_set gives one
                _xor(digest, member)
        elif kind == "zset":
            for score, member in value:
                element = bytearray(_ZERO)
                _mix(element, member)
                _mix(element, b"%.17g" % score)
                _xor(digest, bytes(element))
        elif kind == "hash":
            for field, val in value.items():
                element = bytearray(_ZERO)
                _mix(element, field)
                _mix(element, val)
                _xor(digest, bytes(element))
        elif kind == "stream":
            for eid, fields, values in value.entries():
                _mix(digest, b"%d.%d" % (eid >> 64, eid & 0xFFFFFFFFFFFFFFFF))
                for field, val in zip(fields, values, strict=True):
                    _mix(digest, field)
                    _mix(digest, val)
    if key in db.expires:
        _xor(digest, b"!!expire!!")


def digest_values(db: Database, keys: list[bytes]) -> list[str]:
    """DEBUG DIGEST-VALUE: each key's value digest in hex (zeros for a missing key; a key past its
    deadline but not yet reclaimed still counts, as Redis reads the dict directly)."""
    out = []
    for key in keys:
        digest = bytearray(_ZERO)
        value = db.stored(key)
        if value is not None:
            value_digest(db, key, value, digest)
        out.append(digest.hex())
    return out


def dataset_digest(dbs: list[Database]) -> str:
    """DEBUG DIGEST: every database's id mixed in, then its key/value digests XORed."""
    final = bytearray(_ZERO)
    for db in dbs:
        if not db:
            continue
        _mix(final, db.id.to_bytes(4, "big"))
        for key in db.key_list():
            digest = bytearray(_ZERO)
            _mix(digest, key)
            value_digest(db, key, db.stored(key), digest)
            _xor(final, bytes(digest))
    return final.hex()
