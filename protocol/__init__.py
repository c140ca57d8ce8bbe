"""RESP2/RESP3 wire protocol for raxdb: no I/O, no server state.

`reply` turns values into reply bytes for either protocol version; `request` is the exact
(Redis-faithful) request parser: bytes in, argument vectors or a ProtocolError out.  The server's
hot path parses well-formed traffic with hiredis and falls back to `request.RequestParser` for inline
commands, malformed frames and limits, so the two must agree on every well-formed input.
"""

from raxdb.protocol.request import ProtocolError, RequestParser, split_inline_args

__all__ = ["ProtocolError", "RequestParser", "split_inline_args"]
