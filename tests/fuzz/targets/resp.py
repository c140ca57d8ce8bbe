"""Fuzz target: RESP requests, through the exact parser (protocol/request.py) and the hiredis fast
path the server hands well-formed traffic to (server/net/client.py's gate, hiredis_limits).

Properties: the exact parser raises only ProtocolError; it reads the same commands and the same
error whether the bytes come at once or in two reads split where the input says; and every command
hiredis yields for bytes the server's gate would hand it (a '*' first, only bulk payloads behind
"\\n+" / "\\n="; a non-empty list of bytes, as `_is_argv` asks) is the exact parser's next command.
The input's first byte picks the split point, the rest is the stream.
"""

from __future__ import annotations

from typing import Any

NAME = "resp"
INSTRUMENT = ("raxdb.protocol", "raxdb.server.net.client")  # the modules whose coverage guides the fuzzer
_hiredis: Any = None
_gate: Any = None
_limit: Any = None
_errors: Any = None


def setup() -> None:
    global _hiredis, _gate, _limit, _errors
    import hiredis

    from raxdb.protocol.hiredis_limits import READER_ERRORS, limit_elements
    from raxdb.server.net.client import _only_bulk_payloads

    _hiredis, _gate, _limit, _errors = hiredis, _only_bulk_payloads, limit_elements, READER_ERRORS


def _exact(chunks: list[bytes]) -> tuple[list[list[bytes]], str | None]:
    from raxdb.protocol.request import ProtocolError, RequestParser

    p = RequestParser()
    out: list[list[bytes]] = []
    try:
        for chunk in chunks:
            p.feed(chunk)
            while (argv := p.next_command()) is not None:
                out.append(argv)
    except ProtocolError as exc:
        return out, str(exc)
    return out, None


def _hiredis_commands(stream: bytes) -> list[list[bytes]]:
    reader = _hiredis.Reader()
    _limit(reader)
    reader.feed(stream)
    out: list[list[bytes]] = []
    while True:
        try:
            frame = reader.gets()
        except _errors:  # as the server's fast path: the exact parser takes it from here
            return out
        if type(frame) is not list or not frame or not all(type(a) is bytes for a in frame):
            return out  # the server hands the rest to the exact parser
        out.append(frame)


def one_input(data: bytes) -> None:
    if not data:
        return
    stream = data[1:]
    cut = data[0] * len(stream) // 255
    whole = _exact([stream])
    split = _exact([stream[:cut], stream[cut:]])
    assert whole == split, (whole, split)
    if stream[:1] == b"*" and _gate(stream):
        fast = _hiredis_commands(stream)
        exact = whole[0]
        assert fast == exact[:len(fast)], (fast, exact)
