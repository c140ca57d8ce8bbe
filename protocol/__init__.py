"""RESP2/RESP3 wire protocol for raxdb: no I/O, no server state.

`reply` turns values into reply bytes for either protocol version; `request` is the exact
(Redis-faithful) request parser: bytes in, argument vectors or a ProtocolError out; `multibulk`
walks a read's whole common-case commands into argument vectors and stops at anything else.  The
server's hot path takes a read's whole commands with `multibulk`, parses the rest of well-formed
traffic with hiredis and falls back to `request.RequestParser` for inline commands, malformed frames
and limits, so the three must agree on every well-formed input.
"""

from raxdb.protocol.request import ProtocolError, RequestParser, split_inline_args

__all__ = ["ProtocolError", "RequestParser", "split_inline_args"]
