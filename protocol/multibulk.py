"""The request path's own reading of a read's multibulk headers: whole commands out, and what the rest is.

What it is: `MultibulkWalk(buf).next()` returns the argv of the next *complete* command of `buf`
written `*N\\r\\n$L\\r\\n<L bytes>\\r\\n...` (each argument a bytes object sliced from `buf`), or None
at the first thing that is not one, leaving `pos` at that command's first byte.  `rest()` then
says what the bytes from `pos` on are as far as they go: the longest bulk length they announce when
every frame of them starts with '*' and holds '$' bulks only (a partial last one included), -1
when not.  The server's fast loop (server/net/client.py's `_run_fast`) runs what `next` returns and
judges the rest by `rest()` once, where it hands it on to its parsers as before: hiredis for a
partial tail, the exact parser (protocol/request.py) for inline commands, malformed frames, limits
and a big argument still arriving, so every error stays Redis's.  A read the walk takes whole is
read once, header by header.  It parses nothing hiredis would not: no reply object of hiredis's is
built, and nothing is copied but the arguments themselves.

A read that ends inside a command the walk takes as far as it goes (`short`) leaves that command's
bytes to its owner as a `HeldCommand`: the bytes, and where the walk stood in them (the first
unfinished item: `mark`, `left`, `blen`).  `take(read)` continues that walk over the next read's
bytes alone (a header line begun before it, at most 21 bytes, is read again: nothing more), so a
command arriving in many small reads is walked once in all; when the command ends in the read,
`argv` makes its arguments and the owner walks the read on from that end (`MultibulkWalk(read,
end)`), so the read is not copied.  The same acceptance as `next`: one stepper over bulks
(`_bulks`) serves both, and a frame it refuses is the owner's to hand on as before.

Rule: the common case only, refused rather than judged.  One reader of a header line (`_line`)
serves both: a count or length is plain decimal as Redis's string2ll reads it (digits, no sign, no
leading zero, at most 18 of them: a 19th is refused as it is read, before it could overflow and
before a long header arriving slowly is rescanned at each read), then "\\r\\n".  `next` takes a
command only when its count is 1 to hiredis's MAX_ELEMENTS, each argument is shorter than BIG_ARG
(a big argument's query buffer is the exact parser's: server/conn/clientbufs.py) and all of its
bytes are in `buf`.  Anything else stops the walk, so its judgement stays where it was.  Like Redis
and hiredis, the two bytes after a bulk's data are skipped unread.  No I/O, no server state: the
walk only carries its owner's record of where the rest went to another parser (`hpos`, `hdone`).

Invariant: `pos` is always a command boundary of `buf` (its start, or the end of a command
returned): what `next` returned before it is exactly the commands of `buf[:pos]`.
"""

from __future__ import annotations

from raxdb.protocol.hiredis_limits import MAX_ELEMENTS
from raxdb.protocol.request import BIG_ARG

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# The limits as module constants of their own: compiled, C integers (multibulk.pxd), where the
# imported names are a dictionary lookup and a boxed compare per argument.  A longer count is the
# exact parser's (hiredis's limit too, which allocates nothing ahead of the data); a big
# argument's query buffer is the exact parser's too (server/conn/clientbufs.py).
_MAX_ARGS = MAX_ELEMENTS
_BIG_ARG = BIG_ARG
_REFUSED = -1  # `_line`: the line is not a header as string2ll reads it
_SHORT = -2  # `_line`: the line is one as far as it goes, its end not in `buf`
SHORT = _SHORT  # HeldCommand.take's "the read ends inside the command too", for its owner

if not cython.compiled:  # compiled, multibulk.pxd's inline C (see there)

    def _argv(count: int) -> list[bytes]:
        """A command's argv of `count` slots, each filled once by `_fill` (compiled, PyList_New:
        the slots NULL until then)."""
        return [b""] * count

    def _fill(argv: list[bytes], i: int, s: bytes, q: int, length: int) -> int:
        """argv[i] made the `length` bytes at `q` of `s` (compiled, the new bytes' reference
        handed to the slot: PyList_SET_ITEM)."""
        argv[i] = s[q : q + length]
        return 0


class MultibulkWalk:
    """A walk over `buf` from `pos` (see the module docstring); one per read event."""

    __slots__ = ("at", "blen", "buf", "end", "hdone", "hpos", "left", "mark", "pos", "short")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.at = pos  # past the last header line `_line` read
        # Where its owner handed the rest of `buf` on to another parser, if it did: `pos` then,
        # and how many commands of `buf` had run by then (0 and 0 until then; the owner's record,
        # set by it: server/net/client.py's _rest_for_hiredis)
        self.hpos = 0
        self.hdone = 0
        # set by `next` when it returns None: it stopped only because `buf` ran out (see `next`)
        self.short = False
        # where a walk that ran short stands (`_bulks`, `next`; HeldCommand resumes from there):
        # the first unfinished item's start (its header line's first byte, or its data's when
        # that header is whole, `blen` then its length, else -1), and the bulks left from it on
        # (-1: the count line is the unfinished item)
        self.mark = 0
        self.left = 0
        self.blen = -1

    def _line(self, s: bytes, end: int, p: int, lead: int) -> int:
        """The count or length of the header line at `p` of `s` (`buf`, `end` its length) whose
        first byte must be `lead` ('*' or '$'), `at` moved past its "\\r\\n"; _REFUSED when the
        line is anything else, _SHORT when it is one as far as `buf` goes (`at` unmoved).  (`s`
        and `end` passed in: compiled, the caller's C pointer and length, taken once a call.)"""
        if p >= end:
            return _SHORT
        if s[p] != lead:
            return _REFUSED
        q = p + 1
        value = 0
        while q < end and 48 <= s[q] <= 57:
            if q - p > 18:  # a 19th digit
                return _REFUSED
            value = value * 10 + (s[q] - 48)
            q += 1
        if q >= end:
            return _SHORT
        # one or more digits, no leading zero, then "\r\n"
        if q == p + 1 or s[q] != 13 or (q > p + 2 and s[p + 1] == 48):
            return _REFUSED
        if q + 1 >= end:
            return _SHORT
        if s[q + 1] != 10:
            return _REFUSED
        self.at = q + 2
        return value

    def _bulks(self, s: bytes, end: int, p: int, left: int) -> int:
        """Step over the `left` bulk frames at `p` of `s` (`buf`, `end` its length), each one
        `next` takes (a header it reads, shorter than _BIG_ARG, its data and two bytes): the end
        of the last, or _REFUSED at a header it does not take, or _SHORT where `buf` runs out,
        `mark`, `left` and `blen` then saying where (see __init__).  Only headers are read."""
        while left:
            length = self._line(s, end, p, 36)  # '$'
            if length < 0 or length >= _BIG_ARG:
                if length == _SHORT:
                    self.mark = p
                    self.left = left
                    self.blen = -1
                    return _SHORT
                return _REFUSED
            p = self.at + length + 2
            if p > end:
                self.mark = self.at
                self.left = left
                self.blen = length
                return _SHORT
            left -= 1
        return p

    def header(self, lead: int) -> int:
        """The header line at `pos` (its first byte `lead`, '*' or '$'), as `_line` reads it, `at`
        past it: its value, or _REFUSED, or _SHORT."""
        return self._line(self.buf, self.end, self.pos, lead)

    def next(self) -> list[bytes] | None:
        """The next complete command's argv, `pos` moved past it; None, `pos` unmoved, at
        anything else (the end of `buf`, a partial command, a frame that is not the common case),
        `short` then saying whether it stopped only because `buf` ran out (every header so far one
        it takes, the command's end past `end`) rather than at a frame it refuses.
        Two passes: the headers are checked first, so that a partial or refused command costs no
        objects; then the arguments are sliced out."""
        s = self.buf
        end = self.end
        count = self._line(s, end, self.pos, 42)  # '*'
        if count < 1 or count > _MAX_ARGS:  # *0, huge counts, refused or partial: the other parsers'
            if count == _SHORT:
                self.short = True
                self.mark = self.pos
                self.left = -1
                self.blen = -1
            else:
                self.short = False
            return None
        first = self.at
        p = self._bulks(s, end, first, count)
        if p < 0:
            self.short = p == _SHORT
            return None
        stop = p
        argv = _argv(count)
        p = first
        for i in range(count):  # the lines checked above: only their digits read again
            q = p + 1
            length = 0
            while s[q] != 13:
                length = length * 10 + (s[q] - 48)
                q += 1
            q += 2
            _fill(argv, i, s, q, length)
            p = q + length + 2
        self.pos = stop
        return argv

    def rest(self) -> int:
        """What `buf` is from `pos` on: the longest bulk length announced (0 if none) when every
        frame starts with '*' and holds '$' bulks only, as far as it goes (the last frame may stop
        anywhere, inside a header line too), else -1.  Only the headers are read: each bulk's
        data is stepped over by its length plus two bytes.  `pos` stays."""
        s = self.buf
        end = self.end
        p = self.pos
        left = 0  # bulks still to come in the current frame
        biggest = 0
        while p < end:
            value = self._line(s, end, p, 36 if left else 42)
            if value < 0:
                return biggest if value == _SHORT else -1
            p = self.at
            if left:
                if value > biggest:
                    biggest = value
                p += value + 2
                left -= 1
            else:
                left = value
        return biggest


class HeldCommand:
    """A command's first bytes kept between reads, and where their walk stands (see the module
    docstring): made from a walk that ran short (`MultibulkWalk.short`), continued by `take`
    with each next read, which walks only that read's bytes (and a header line begun before it,
    at most 21 bytes again), so a command arriving in many small reads is walked once in all."""

    __slots__ = ("blen", "buf", "left", "mark")

    def __init__(self, walk: MultibulkWalk) -> None:
        start = walk.pos
        # the command's bytes from its first: appended to as reads come (amortised, in place)
        self.buf = bytearray(memoryview(walk.buf)[start:])
        self.mark = walk.mark - start  # where the walk stands, in `buf` (see MultibulkWalk)
        self.left = walk.left
        self.blen = walk.blen

    def take(self, data: bytes) -> int:
        """Continue the command with the read `data`: where in `data` it ends (then `argv` makes
        its arguments), or _SHORT when `data` ends inside it too (`data` then appended to `buf`,
        the walk's place moved on), or _REFUSED at a frame `next` would not take (nothing kept:
        `buf` + `data` is then a fresh read's, whose walk refuses it at the same place)."""
        held = len(self.buf)
        n = len(data)
        left = self.left
        blen = self.blen
        if blen < 0:  # a header line begun at `mark` (none of it held when mark == held)
            part = held - self.mark
            line = MultibulkWalk(bytes(self.buf[self.mark :]) + data[:24])
            value = line.header(42 if left < 0 else 36)
            if value == _REFUSED:
                return _REFUSED
            if value == _SHORT:  # (a line as far as `data` goes is at most 21 bytes: all of it)
                self.buf += data
                return _SHORT
            p = line.at - part  # past the line, in `data`
            if left < 0:  # the count line
                if value < 1 or value > _MAX_ARGS:
                    return _REFUSED
                left = value
            elif value >= _BIG_ARG:
                return _REFUSED
            else:
                if p + value + 2 > n:
                    self.mark = held + p
                    self.blen = value
                    self.buf += data
                    return _SHORT
                p += value + 2
                left -= 1
        else:  # inside the data of a bulk that starts at `mark`
            p = self.mark + blen + 2 - held
            if p > n:
                self.buf += data
                return _SHORT
            left -= 1
        if not left:
            return p
        walk = MultibulkWalk(data, p)
        p = walk._bulks(data, n, p, left)
        if p == _SHORT:
            self.mark = held + walk.mark
            self.left = walk.left
            self.blen = walk.blen
            self.buf += data
        return p

    def argv(self, data: bytes, end: int) -> list[bytes]:
        """The command's arguments once `take` found its end at `end` of `data`: `buf` and that
        much of `data` made one buffer (a copy of the command alone), its headers walked again
        once."""
        argv = MultibulkWalk(b"".join((self.buf, memoryview(data)[:end]))).next()
        assert argv is not None  # (every header walked already, and all of its bytes here)
        return argv

def frames_biggest(buf: bytes) -> int:
    """`MultibulkWalk(buf).rest()`: the longest bulk `buf`'s frames announce, -1 if one is not a
    multibulk of bulks (see `rest`)."""
    return MultibulkWalk(buf).rest()
