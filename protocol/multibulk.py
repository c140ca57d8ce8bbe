"""The request path's own walk over a read's whole multibulk commands: bytes in, argv lists out.

What it is: `MultibulkWalk(buf).next()` returns the argv of the next *complete* command of `buf`
written `*N\\r\\n$L\\r\\n<L bytes>\\r\\n...` (each argument a bytes object sliced from `buf`), or None
at the first thing that is not one, leaving `pos` at that command's first byte.  The server's fast
loop (server/net/client.py's `_run_fast`) runs what it returns and hands everything from `pos` on
to its parsers as before: hiredis for a partial tail, the exact parser (protocol/request.py) for
inline commands, malformed frames and limits, so every error stays Redis's.  It parses nothing
hiredis would not: no reply object of hiredis's is built, and nothing is copied but the
arguments themselves.

Rule: the common case only, refused rather than judged.  A command is taken only when every
count and length is plain decimal as Redis's string2ll reads it (digits, no sign, no leading
zero, at most 18 of them), its count is 1 to hiredis's MAX_ELEMENTS, each argument is shorter
than BIG_ARG (a big argument's query buffer is the exact parser's: server/conn/clientbufs.py)
and all of its bytes are in `buf`.  Anything else stops the walk, so its judgement stays where it was.  Like Redis
and hiredis, the two bytes after a bulk's data are skipped unread.  No I/O, no server state.

Invariant: `pos` is always a command boundary of `buf` (its start, or the end of a command
returned): what `next` returned before it is exactly the commands of `buf[:pos]`.
"""

from __future__ import annotations

from raxdb.protocol.hiredis_limits import MAX_ELEMENTS
from raxdb.protocol.request import BIG_ARG

# The limits as module constants of their own: compiled, C integers (multibulk.pxd), where the
# imported names are a dictionary lookup and a boxed compare per argument.  A longer count is the
# exact parser's (hiredis's limit too, which allocates nothing ahead of the data); a big
# argument's query buffer is the exact parser's too (server/conn/clientbufs.py).
_MAX_ARGS = MAX_ELEMENTS
_BIG_ARG = BIG_ARG


class MultibulkWalk:
    """A walk over `buf` from `pos` (see the module docstring); one per read event."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def next(self) -> list[bytes] | None:
        """The next complete command's argv, `pos` moved past it; None, `pos` unmoved, at
        anything else (the end of `buf`, a partial command, a frame that is not the common case).
        Two passes: the headers are checked first, so that a partial or refused command costs no
        objects; then the arguments are sliced out."""
        s = self.buf
        end = self.end
        p = self.pos
        left = -1  # bulks still to come; -1 before the count
        count = 0
        while True:
            if p >= end or s[p] != (42 if left < 0 else 36):  # '*' first, then '$'
                return None
            q = p + 1
            value = 0
            while q < end and 48 <= s[q] <= 57:
                if q - p > 18:  # a 19th digit: not the common case (and no overflow of `value`)
                    return None
                value = value * 10 + (s[q] - 48)
                q += 1
            # the line's end must be here: "\r\n" right after one or more digits, no leading zero
            if q + 1 >= end or q == p + 1 or s[q] != 13 or s[q + 1] != 10 or (q > p + 2 and s[p + 1] == 48):
                return None
            p = q + 2
            if left < 0:
                if value < 1 or value > _MAX_ARGS:  # *0 and huge counts: the other parsers'
                    return None
                left = count = value
            else:
                if value >= _BIG_ARG:
                    return None
                p += value + 2
                if p > end:
                    return None
                left -= 1
                if left == 0:
                    break
        stop = p
        argv = [b""] * count
        p = self.pos
        while s[p] != 13:  # the count's line, checked above
            p += 1
        p += 2
        for i in range(count):
            q = p + 1
            value = 0
            while s[q] != 13:
                value = value * 10 + (s[q] - 48)
                q += 1
            q += 2
            argv[i] = s[q : q + value]
            p = q + value + 2
        self.pos = stop
        return argv
