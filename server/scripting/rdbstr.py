"""The pieces of Redis's RDB format that FUNCTION DUMP / RESTORE payloads use.

Payload = body + RDB version (2 bytes, little endian; 10 for Redis 7.0) + CRC64 of everything before
it (8 bytes, little endian; the Jones polynomial, reflected, as Redis's crc64).  Strings are
length-prefixed with RDB's length encoding; on reading, the integer and LZF-compressed string
encodings are accepted too.
"""

from __future__ import annotations

OPCODE_FUNCTION2 = 245
RDB_VERSION = 10

_POLY = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 bit-reversed


def _table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _table()


def crc64(data: bytes, crc: int = 0) -> int:
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def encode_length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def encode_string(s: bytes) -> bytes:
    return encode_length(len(s)) + s


def _decode_length(buf: bytes, pos: int) -> tuple[int, bool, int]:
    """(value, is_special_encoding, next position)."""
    if pos >= len(buf):
        raise ValueError("truncated")
    b = buf[pos]
    kind = b >> 6
    if kind == 0:
        return b & 0x3F, False, pos + 1
    if kind == 1:
        if pos + 1 >= len(buf):
            raise ValueError("truncated")
        return ((b & 0x3F) << 8) | buf[pos + 1], False, pos + 2
    if kind == 2:
        if b == 0x80:
            return int.from_bytes(_take(buf, pos + 1, 4), "big"), False, pos + 5
        if b == 0x81:
            return int.from_bytes(_take(buf, pos + 1, 8), "big"), False, pos + 9
        raise ValueError("bad length")
    return b & 0x3F, True, pos + 1


def _take(buf: bytes, pos: int, n: int) -> bytes:
    if pos + n > len(buf):
        raise ValueError("truncated")
    return buf[pos:pos + n]


def decode_string(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, special, pos = _decode_length(buf, pos)
    if not special:
        return _take(buf, pos, n), pos + n
    if n in (0, 1, 2):
        size = 1 << n
        v = int.from_bytes(_take(buf, pos, size), "little", signed=True)
        return str(v).encode(), pos + size
    if n == 3:
        clen, _, pos = _decode_length(buf, pos)
        ulen, _, pos = _decode_length(buf, pos)
        data = lzf_decompress(_take(buf, pos, clen), ulen)
        return data, pos + clen
    raise ValueError("unknown string encoding")


def lzf_decompress(data: bytes, expected: int) -> bytes:
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            run = ctrl + 1
            if i + run > n:
                raise ValueError("truncated literal")
            out += data[i:i + run]
            i += run
            continue
        length = ctrl >> 5
        if length == 7:
            if i >= n:
                raise ValueError("truncated")
            length += data[i]
            i += 1
        if i >= n:
            raise ValueError("truncated")
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1 - data[i]
        i += 1
        if ref < 0:
            raise ValueError("bad back reference")
        for _ in range(length + 2):
            out.append(out[ref])
            ref += 1
    if len(out) != expected:
        raise ValueError("length mismatch")
    return bytes(out)


def seal(body: bytes) -> bytes:
    data = body + RDB_VERSION.to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


def unseal(payload: bytes) -> bytes | None:
    """The body of a payload, or None if its version or checksum is wrong."""
    if len(payload) < 10:
        return None
    version = int.from_bytes(payload[-10:-8], "little")
    if version > RDB_VERSION:
        return None
    if crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        return None
    return payload[:-10]
