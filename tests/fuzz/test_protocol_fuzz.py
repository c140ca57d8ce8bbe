"""Differential protocol fuzzing: random byte streams of valid multibulk commands, inline commands
(with Redis's quoting and escapes, good and broken) and malformed frames, each sent whole to raxdb
and to redis-server 7.0 on a fresh connection; the write side is then shut, and everything the
server sends until it closes must be byte-identical.

Left out of the pool, and documented in server/net/client.py: frames that announce more than the
stream holds (a huge bulk length, a nested array, a cut command).  Redis rejects some of those as
soon as the header line is complete, raxdb when the command completes, so whether an error or
nothing comes back before the close depends on the bytes behind them.  This fuzz found the NUL
and CR/LF handling of client bytes in error texts.

The same streams, with commands of many arguments among them, are also run by a client in process
cut into reads: in two at every byte boundary, one byte a read, and in random segments; each must
answer exactly what the whole stream in one read does (a read that ends inside a command is held
and walked on by the next: server/net/client.py's tail).
"""

from __future__ import annotations

import random
import socket

import pytest

from tests.unit.test_protocol_walk import in_process  # noqa: F401  (the fixture: a client in process)

SEEDS = 1000
WORDS = [b"PING", b"ECHO", b"GET", b"SET", b"k", b"v", b"", b"a b", b"\x00", b"\xff", b"ping", b"DEL", b"EXISTS",
         b"INCR", b"x" * 70, b"a\x00b", b"\r\n", b"OBJECT", b"XINFO", b"+inf", b"=x"]
INLINE_WORDS = [b"PING", b"ECHO", b"SET", b"GET", b"k", b"v", b"hallo", b"EXISTS"]
QUOTED = [b"a\\x41b", b"\\n\\t", b"\\x4", b"\\xZZ", b'a\\"b', b"\\", b"\\x00", b"\\r\\n"]
BROKEN = [b'"unbalanced', b"'unbalanced", b'"a"b', b"'a'b", b'""', b"''", b"'it\\'s'", b"'a b'"]
MALFORMED = [
    b"*-1\r\n", b"*0\r\n", b"*abc\r\n", b"*1\r\n$-1\r\n", b"*1\r\n$abc\r\n", b"*1\r\n$-5\r\n", b"*1048577\r\n",
    b"*2147483648\r\n", b"*1\r\n$4\r\nPINGxx", b"$3\r\nGET\r\n", b"*1\r\n$0\r\n\r\n", b"*\r\n", b"*1\r\n$\r\n",
    b"*01\r\n$4\r\nPING\r\n", b"*1\r\n$04\r\nPING\r\n", b"*+1\r\n$4\r\nPING\r\n", b"*1\r\n$+4\r\nPING\r\n",
    b"* 1\r\n", b"*1 \r\n$4\r\nPING\r\n", b"\r\n", b"\n", b"*1\n$4\r\nPING\r\n", b"*1\r\n$4\nPING\r\n", b"*-5\r\n",
    b"*2\r\n$3\r\nGET\r\n:1\r\n", b"*1\r\n+PING\r\n", b"*1\r\n\r\n", b"*1\r\n\xc8\r\n", b"*1\r\n_\r\n",
]


def _frame(r: random.Random) -> bytes:
    c = r.random()
    if c < 0.4:
        args = [r.choice(WORDS) for _ in range(r.randint(1, 4))]
        return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    if c < 0.75:
        parts = []
        for _ in range(r.randint(0, 4)):
            q = r.random()
            if q < 0.15:
                parts.append(b'"' + r.choice(QUOTED + INLINE_WORDS) + b'"')
            elif q < 0.22:
                parts.append(r.choice(BROKEN))
            else:
                parts.append(r.choice(INLINE_WORDS))
        sep = r.choice([b" ", b"  ", b"\t"])
        return r.choice([b"", b" "]) + sep.join(parts) + r.choice([b"\r\n", b"\n"])
    return r.choice(MALFORMED)


def _long_command(r: random.Random) -> bytes:
    """A command of many arguments (RPUSH of 20 to 200, some empty, some of frame-like bytes)."""
    args = [b"RPUSH", b"l", *(r.choice(WORDS) for _ in range(r.randint(20, 200)))]
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def _session(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_byte_streams(seed, raxdb, oracle):
    r = random.Random(seed)
    payload = b"".join(_frame(r) for _ in range(r.randint(1, 6)))
    ours, theirs = _session(raxdb.port, payload), _session(oracle.port, payload)
    assert ours == theirs, f"payload {payload!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"


@pytest.mark.parametrize("seed", range(0, SEEDS, 20))
def test_streams_cut_into_reads_answer_as_whole(seed, in_process):  # noqa: F811
    r = random.Random(seed)
    payload = b"".join(_long_command(r) if r.random() < 0.3 else _frame(r) for _ in range(r.randint(1, 6)))
    whole = in_process([payload])
    for i in range(1, len(payload)):
        assert in_process([payload[:i], payload[i:]]) == whole, (payload, i)
    assert in_process([payload[i:i + 1] for i in range(len(payload))]) == whole, payload
    cuts = sorted(r.sample(range(1, len(payload)), min(len(payload) - 1, len(payload) // 8)))
    pieces = [payload[a:b] for a, b in zip([0, *cuts], [*cuts, len(payload)], strict=True)]
    assert in_process(pieces) == whole, (payload, cuts)
