"""The exact request parser: Redis's processInlineBuffer / processMultibulkBuffer, sans I/O.

Bytes go in with `feed()`; `next_command()` returns the next argument vector, None when more bytes
are needed, or raises `ProtocolError` carrying Redis's reply text word for word.  After a
ProtocolError the connection must be closed (Redis sets CLIENT_CLOSE_AFTER_REPLY); the parser is
then unusable.

Why a second parser when hiredis is faster: hiredis parses *replies*, so it accepts frames that a
Redis server rejects (`:1`, `+OK` or `$-1` inside a request, `*-5`), it cannot parse inline
(telnet-style) commands, and it does not know Redis's limits.  The server parses well-formed
traffic with hiredis and hands anything else to this parser, which therefore must agree with
hiredis on every well-formed multibulk input.

Limits, as Redis enforces them before spending memory: a multibulk count above INT_MAX, a bulk
length above proto-max-bulk-len, unauthenticated clients sending more than 10 arguments or bulks
over 16 KiB, header or inline lines over 64 KiB without a terminator.  A header only records
lengths; nothing is allocated for announced-but-unsent data.

A big bulk (BIG_ARG or more) whose data is still arriving gets a buffer of its own length once its
header and first bytes are in (as Redis reads such a bulk into an sds of its size that becomes the
argument): what `feed()` brings is copied into it, and a reader that can receive into memory
(server/net/bigread.py) asks for the unfilled rest (`big_window`) and reports what it wrote
(`big_received`), so the value is read once, in place, and never joined.  The window reaches past
the bulk's data: its "\r\n" is received with the last of it, in the same read (Redis reads the
bulk's remaining length plus 2 into its sds), and cut off when it becomes the argument.  It reaches
PAST bytes further still, for what follows: libuv reads again whenever a read fills the buffer it
was given, so a window that ended at the "\r\n" cost a read that found nothing (EAGAIN) after
every big value sent alone; what lands there is held as a read's bytes are.
"""

from __future__ import annotations

import mmap

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

INLINE_MAX_SIZE = 64 * 1024
BIG_ARG = 32 * 1024  # PROTO_MBULK_BIG_ARG: a bulk this long gets a query buffer of its own size
PAST = 30  # a big bulk's window: bytes past its "\r\n" (see the module docstring)
INT_MAX = 2**31 - 1
_COMPACT_AT = 64 * 1024


def _strchr(buf: bytes | bytearray, ch: bytes, pos: int) -> int:
    """C strchr from `pos`: the index of `ch`, or -1 when a NUL byte (C's string end) or the buffer's
    end comes first.  Redis looks for header and inline line ends this way, so a NUL before the
    line end leaves the request waiting (until the 64 KiB limit)."""
    i = buf.find(ch, pos)
    if i < 0:
        return -1
    nul = buf.find(b"\0", pos, i)
    return -1 if nul >= 0 else i


class ProtocolError(Exception):
    """A request framing error.  `str(exc)` is the reply text without the leading '-'."""


def string2ll(b: bytes | bytearray) -> int | None:
    """Redis's string2ll: optional '-', digits, no leading zeros, no '+', no spaces, fits int64.
    The digits are checked by isdigit() (ASCII digits only, for bytes), not a loop per byte:
    scripts pass 13-digit timestamps to HINCRBY, ZADD, SET ... PX, where the loop was most of it."""
    n = len(b)
    if n == 0 or n > 20:
        return None
    c = b[0]
    if 49 <= c <= 57:  # a digit 1-9 first
        if not b.isdigit():
            return None
    elif c == 45:  # '-', then a digit 1-9
        if n == 1 or not 49 <= b[1] <= 57 or not b[1:].isdigit():
            return None
    else:
        return 0 if c == 48 and n == 1 else None
    v = int(b)
    if n < 19:  # 18 characters: within int64 either way
        return v
    return v if -_INT64_LIMIT <= v < _INT64_LIMIT else None


_INT64_LIMIT = 2**63


_SPACES = frozenset(b" \t\n\r\v\f")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}


def split_inline_args(line: bytes) -> list[bytes] | None:
    """Redis's sdssplitargs: split a line with "double" and 'single' quotes; None if unbalanced.

    As in C, a NUL byte ends the string; inside double quotes \\xHH and \\n \\r \\t \\b \\a escape.
    A closing quote must be followed by a space or the end of the line.
    """
    nul = line.find(b"\0")
    if nul >= 0:
        line = line[:nul]
    out: list[bytes] = []
    p, n = 0, len(line)
    while True:
        while p < n and line[p] in _SPACES:
            p += 1
        if p >= n:
            return out
        cur = bytearray()
        inq = insq = False
        while True:
            c = line[p] if p < n else 0
            if inq:
                if (c == 92 and p + 3 < n + 0 and line[p + 1] == 120
                        and line[p + 2] in _HEX and line[p + 3] in _HEX):
                    cur.append(int(line[p + 2 : p + 4], 16))
                    p += 3
                elif c == 92 and p + 1 < n:
                    p += 1
                    e = line[p]
                    cur.append(_ESCAPES.get(e, e))
                elif c == 34:
                    if p + 1 < n and line[p + 1] not in _SPACES:
                        return None
                    p += 1
                    break
                elif p >= n:
                    return None
                else:
                    cur.append(c)
            elif insq:
                if c == 92 and p + 1 < n and line[p + 1] == 39:
                    p += 1
                    cur.append(39)
                elif c == 39:
                    if p + 1 < n and line[p + 1] not in _SPACES:
                        return None
                    p += 1
                    break
                elif p >= n:
                    return None
                else:
                    cur.append(c)
            else:
                if p >= n or c in (32, 10, 13, 9):
                    p += 1
                    break
                if c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            p += 1
        out.append(bytes(cur))


_REPR_ESCAPES = {92: "\\\\", 34: '\\"', 10: "\\n", 13: "\\r", 9: "\\t", 7: "\\a", 8: "\\b"}


def quote_arg(b: bytes) -> str:
    """Redis's sdscatrepr: `b` as a double-quoted string with C escapes, the form MONITOR lines
    and config files use; `split_inline_args` reads it back."""
    out = ['"']
    for ch in b:
        esc = _REPR_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif 32 <= ch < 127:
            out.append(chr(ch))
        else:
            out.append("\\x%02x" % ch)
    out.append('"')
    return "".join(out)


def _value_buffer(n: int) -> tuple[bytes | mmap.mmap, memoryview]:
    """A buffer for a big bulk's `n` bytes (its data and "\r\n"), filled in place as they arrive,
    and a writable view of it.  Compiled: a new bytes object not yet filled (PyBytes_FromStringAndSize(NULL, n), which the
    C API lets its maker fill before anyone else sees it), so the argument is the very buffer the
    reads wrote; interpreted, an anonymous mapping, copied into bytes once whole (`_value`).  A
    header announcing 512 MB that never comes then costs address space, not memory, as Redis's own
    buffer of that size does (malloc maps a block that big: server/base/heap.py's threshold; the
    mapping's pages are the kernel's zero page until written); a bytearray would be zeroed, all of
    it resident at once."""
    if cython.compiled:
        out = PyBytes_FromStringAndSize(cython.NULL, n)  # noqa: F821 (request.pxd)
        return out, PyMemoryView_FromMemory(PyBytes_AS_STRING(out), n, PyBUF_WRITE)  # noqa: F821
    buf = mmap.mmap(-1, n)
    return buf, memoryview(buf)


def _value(buf: bytes | mmap.mmap, n: int) -> bytes:
    """The argument a filled `_value_buffer` holds: its first `n` bytes (the "\r\n" and room after
    them dropped).  Compiled, the bytes object itself, its length set to `n` and its NUL written
    after them, in place: no one else has seen it yet (as _PyBytes_Resize shrinks a new object,
    without the realloc: the 2 + PAST bytes stay allocated until it is freed, which takes no size)."""
    if cython.compiled and type(buf) is bytes:
        Py_SET_SIZE(buf, n)  # noqa: F821 (request.pxd)
        PyBytes_AS_STRING(buf)[n] = 0  # noqa: F821
        return buf
    return buf[:n]


class QueryBufferExceeded(Exception):
    """The bulk being received outgrew client-query-buffer-limit: close without a reply."""


class RequestParser:
    """Incremental, exact request parser for one connection."""

    __slots__ = ("buf", "pos", "max_bulk_len", "auth_required", "_argv", "_argv_bytes", "_mbulk", "_bulklen", "qbuf_limit",
                 "_big", "_big_view", "_big_have")

    def __init__(self, max_bulk_len: int = 512 * 1024 * 1024, qbuf_limit: int = 1 << 62) -> None:
        # what is held: a bytearray, or a read fed while nothing was held, kept as it came (bytes)
        # until more comes, so a read's commands are parsed without copying it first
        self.buf: bytes | bytearray = bytearray()
        self.pos = 0
        self.max_bulk_len = max_bulk_len
        # Redis consumes each argument as it completes, so its query buffer holds at most the
        # bulk being received: it closes the client when that bulk passes the limit.
        self.qbuf_limit = qbuf_limit
        self.auth_required = False
        self._argv: list[bytes] = []
        self._argv_bytes = 0  # the bytes of _argv's arguments
        self._mbulk = 0  # arguments still expected by the current multibulk command
        self._bulklen = -1  # length of the bulk being read, -1 while at a bulk header
        # A big bulk (BIG_ARG or more) whose data is still arriving: its own buffer (`_big`, from
        # _value_buffer, `_bulklen` + 2 bytes: its data and "\r\n"), a writable view of it, and
        # how many of its bytes are in (`_big_have`).  `buf` then holds only what came after the
        # bulk's "\r\n" (the next commands).  Growing `buf` by each read instead copied it on every realloc;
        # holding the reads' pieces and joining them once copied each byte a second time.
        self._big: bytes | mmap.mmap | None = None
        self._big_view: memoryview | None = None
        self._big_have = 0

    def feed(self, data: bytes | bytearray, start: int = 0) -> None:
        """Hold `data` from `start` on (a command boundary of it when nothing is held)."""
        if start:
            if self.pos == len(self.buf) and type(data) is bytes and self._big is None:
                self.buf = data  # parsed where it lies, from `start`
                self.pos = start
                return
            with memoryview(data) as rest:
                self.feed(rest[start:].tobytes())
            return
        if self._big is not None:
            room = self._bulklen + 2 - self._big_have
            if room > 0:
                n = len(data)
                view = self._big_view
                assert view is not None
                if n <= room:
                    view[self._big_have : self._big_have + n] = data
                    self._big_have += n
                    return
                with memoryview(data) as src:
                    view[self._big_have : self._big_have + room] = src[:room]
                    self._big_have += room
                    self.buf += src[room:]
                return
        buf = self.buf
        if self.pos == len(buf) and type(data) is bytes:  # nothing held: parsed where it lies
            self.buf = data
            self.pos = 0
            return
        if isinstance(buf, bytes):  # a read held as it came: what is left of it copied, once
            with memoryview(buf) as rest:
                self.buf = buf = bytearray(rest[self.pos :])
            self.pos = 0
        elif self.pos >= _COMPACT_AT and self.pos * 2 >= len(buf):
            del buf[: self.pos]
            self.pos = 0
        buf += data

    def big_window(self) -> memoryview | None:
        """The unfilled rest of the big bulk being received, its "\r\n" and PAST bytes more, for a
        reader to receive into (then `big_received`); None when no big bulk's bytes are awaited."""
        if self._big is None or self._big_have >= self._bulklen + 2:
            return None
        assert self._big_view is not None
        return self._big_view[self._big_have :]

    def big_received(self, n: int) -> None:
        """`n` more bytes were written into the big bulk's `big_window`: its own, then what follows
        its "\r\n" (held as fed)."""
        have = self._big_have + n
        end = self._bulklen + 2
        if have <= end:
            self._big_have = have
            return
        self._big_have = end
        view = self._big_view
        assert view is not None
        self.feed(view[end:have].tobytes())

    def pending(self) -> int:
        """Bytes held for commands not yet complete (what Redis counts as the query buffer)."""
        return len(self.buf) - self.pos + self._big_have

    def bulk_room(self) -> int:
        """Bytes still to come of a big bulk being received (PROTO_MBULK_BIG_ARG, 32 KiB, or more),
        which Redis's query buffer holds room for from its header on; 0 otherwise."""
        if self._mbulk and self._bulklen >= BIG_ARG:
            return max(0, self._bulklen + 2 - self.pending())
        return 0

    def partial_args(self) -> tuple[int, int]:
        """(bytes, count) of the arguments parsed so far of a multibulk command not yet whole."""
        return (self._argv_bytes, len(self._argv)) if self._mbulk else (0, 0)

    def at_boundary(self) -> bool:
        """True when no partial command is buffered: the next byte starts a new command."""
        return self._mbulk == 0 and self.pos == len(self.buf)

    def next_command(self) -> list[bytes] | None:
        while True:
            if self._mbulk == 0:
                if self.pos >= len(self.buf):
                    self._compact_if_done()
                    return None
                if self.buf[self.pos] == 42:  # '*'
                    argv = self._multibulk()
                else:
                    argv = self._inline()
            else:
                argv = self._multibulk()
            if argv is None:
                return None
            if argv:
                return argv
            # an empty command (blank inline line, *0, *-1) produces no reply; keep going

    def _compact_if_done(self) -> None:
        if self.pos == len(self.buf) and self.pos:
            self.buf = bytearray()
            self.pos = 0

    def _inline(self) -> list[bytes] | None:
        buf, pos = self.buf, self.pos
        nl = _strchr(buf, b"\n", pos)
        if nl < 0:
            if len(buf) - pos > INLINE_MAX_SIZE:
                raise ProtocolError("Protocol error: too big inline request")
            return None
        end = nl
        if end != pos and buf[end - 1] == 13:
            end -= 1
        args = split_inline_args(bytes(buf[pos:end]))
        if args is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        self.pos = nl + 1
        return args

    def _multibulk(self) -> list[bytes] | None:
        buf = self.buf
        if self._mbulk == 0:
            pos = self.pos
            cr = _strchr(buf, b"\r", pos)
            if cr < 0:
                if len(buf) - pos > INLINE_MAX_SIZE:
                    raise ProtocolError("Protocol error: too big mbulk count string")
                return None
            if cr - pos > len(buf) - pos - 2:
                return None
            ll = string2ll(buf[pos + 1 : cr])
            if ll is None or ll > INT_MAX:
                raise ProtocolError("Protocol error: invalid multibulk length")
            if ll > 10 and self.auth_required:
                raise ProtocolError("Protocol error: unauthenticated multibulk length")
            self.pos = cr + 2
            if ll <= 0:
                return []
            self._mbulk = ll
            self._argv = []
            self._argv_bytes = 0
            self._bulklen = -1
        argv = self._argv
        while self._mbulk:
            pos = self.pos
            if self._bulklen == -1:
                cr = _strchr(buf, b"\r", pos)
                if cr < 0:
                    if len(buf) - pos > INLINE_MAX_SIZE:
                        raise ProtocolError("Protocol error: too big bulk count string")
                    return None
                if cr - pos > len(buf) - pos - 2:
                    return None
                if buf[pos] != 36:  # '$'
                    # "%c" of the raw byte; addReplyErrorFormat turns CR and LF into spaces
                    got = " " if buf[pos] in (10, 13) else chr(buf[pos])
                    raise ProtocolError("Protocol error: expected '$', got '%s'" % got)
                ll = string2ll(buf[pos + 1 : cr])
                if ll is None or ll < 0 or ll > self.max_bulk_len:
                    raise ProtocolError("Protocol error: invalid bulk length")
                if ll > 16384 and self.auth_required:
                    raise ProtocolError("Protocol error: unauthenticated bulk length")
                self.pos = pos = cr + 2
                self._bulklen = ll
            ll = self._bulklen
            big = self._big
            if big is not None:  # (`buf` holds what came after its "\r\n", from pos 0)
                if self._big_have < ll + 2:
                    if self.pending() > self.qbuf_limit:
                        raise QueryBufferExceeded
                    return None
                if ll + 2 > self.qbuf_limit:
                    raise QueryBufferExceeded
                view = self._big_view
                assert view is not None
                view.release()
                self._big = self._big_view = None
                self._big_have = 0
                argv.append(_value(big, ll))
                self._argv_bytes += ll
                self._bulklen = -1
                self._mbulk -= 1
                continue
            if len(buf) - pos < ll + 2:
                if len(buf) - pos > self.qbuf_limit:
                    raise QueryBufferExceeded
                if ll >= BIG_ARG:  # the rest of it read into a buffer of its own (see _big)
                    self._start_big(ll, pos)
                return None
            if ll + 2 > self.qbuf_limit:
                raise QueryBufferExceeded
            if ll < BIG_ARG:
                argv.append(bytes(buf[pos : pos + ll]))
            else:  # copied once, from a view (a slice of the bytearray would be a second copy)
                with memoryview(buf) as view:
                    argv.append(view[pos : pos + ll].tobytes())
            self._argv_bytes += ll
            self.pos = pos + ll + 2
            self._bulklen = -1
            self._mbulk -= 1
        self._argv = []
        return argv

    def _start_big(self, ll: int, pos: int) -> None:
        """The bulk of `ll` bytes at `pos` in `buf` is big and not all in: its bytes so far go into
        a buffer of its own (its only copy), which has room for its "\r\n" and PAST bytes more; `buf` is
        emptied."""
        big, view = _value_buffer(ll + 2 + PAST)
        have = len(self.buf) - pos  # under ll + 2 (the caller's test)
        with memoryview(self.buf) as src:
            view[:have] = src[pos:]
        self.buf = bytearray()  # everything before `pos` is parsed
        self.pos = 0
        self._big, self._big_view, self._big_have = big, view, have
