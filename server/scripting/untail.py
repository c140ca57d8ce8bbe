"""Compiled Lua 5.1 chunks with their tail calls turned into plain calls.

Why: redis.call and redis.pcall are Lua functions in front of the Python callables (lua_env.py),
because lupa checks two free stack slots against Lua's C-function limit (LUAI_MAXCSTACK, 8000) on
every call into Python, so a Python callable takes at most 7997 arguments, where Redis's C
redis.call takes what `unpack` can give (7999 values besides the command name and key).  A Lua
function has no such limit, but a script's `return redis.call(...)` would tail-call it, and a
tail call drops the script's frame: an error would no longer be reported at the script's line.
Redis never tail-calls into redis.call (it is a C function), so neither may we: every chunk a
script compiles is dumped (string.dump), its OP_TAILCALL instructions rewritten to OP_CALL, and
loaded again.  The compiler always follows a tail call with `OP_RETURN A 0` (return what the call
left on the stack), and its C operand is already 0 (all results), so a CALL in its place returns
the same values; only the frame stays.  The visible differences: a script that recurses
through tail calls more than 20000 deep (LUAI_MAXCALLS) now fails with "stack overflow" instead
of running on; and the frames kept would show in the Lua debugger's trace and print, which hide
them again from where `tail_calls` says the calls were.

The dump format (Lua 5.1's ldump.c): a 12-byte header giving the sizes of int, size_t,
Instruction and lua_Number, then the main function; a function is its source string, two ints,
four bytes, its code (an int count and the instructions), its constants (nil, boolean, number,
string), its nested functions, and its debug information (line numbers, locals, upvalue names).
Only the instructions are changed, in place; everything else is walked to find them.
"""

from __future__ import annotations

_OP_MASK = 0x3F  # an instruction's opcode: its low 6 bits
_OP_CALL = 28
_OP_TAILCALL = 29


class _Walker:
    def __init__(self, chunk: bytes) -> None:
        if chunk[:5] != b"\x1bLua\x51" or chunk[6] != 1:
            raise ValueError("not a little-endian Lua 5.1 chunk")
        self.buf = bytearray(chunk)
        self.int_size, self.size_t, self.insn_size, self.num_size = chunk[7], chunk[8], chunk[9], chunk[10]
        self.pos = 12
        self.tail_calls: set[tuple[int, int]] = set()  # (linedefined, line) of each one rewritten

    def _uint(self, size: int) -> int:
        v = int.from_bytes(self.buf[self.pos:self.pos + size], "little")
        self.pos += size
        return v

    def _string(self) -> None:
        size = self._uint(self.size_t)
        self.pos += size

    def function(self) -> None:
        self._string()  # source
        linedefined = self._uint(self.int_size)
        self.pos += self.int_size + 4  # lastlinedefined, nups, numparams, vararg, stack
        n, size, buf = self._uint(self.int_size), self.insn_size, self.buf
        rewritten = []
        for i, at in enumerate(range(self.pos, self.pos + n * size, size)):
            if buf[at] & _OP_MASK == _OP_TAILCALL:  # little endian: the opcode is in the first byte
                buf[at] = (buf[at] & ~_OP_MASK) | _OP_CALL
                rewritten.append(i)
        self.pos += n * size
        for _ in range(self._uint(self.int_size)):  # constants
            kind = self.buf[self.pos]
            self.pos += 1
            if kind == 1:
                self.pos += 1
            elif kind == 3:
                self.pos += self.num_size
            elif kind == 4:
                self._string()
            elif kind != 0:
                raise ValueError(f"constant of type {kind}")
        for _ in range(self._uint(self.int_size)):  # nested functions
            self.function()
        lines = self._uint(self.int_size)
        for i in rewritten:  # the line of each instruction
            at = self.pos + i * self.int_size
            self.tail_calls.add((linedefined, int.from_bytes(self.buf[at:at + self.int_size], "little")))
        self.pos += lines * self.int_size
        for _ in range(self._uint(self.int_size)):  # locals: name, startpc, endpc
            self._string()
            self.pos += 2 * self.int_size
        for _ in range(self._uint(self.int_size)):  # upvalue names
            self._string()


def _walked(chunk: bytes) -> _Walker:
    w = _Walker(chunk)
    w.function()
    if w.pos != len(w.buf):
        raise ValueError("trailing bytes after the main function")
    return w


def untail(chunk: bytes) -> bytes:
    """`chunk` (string.dump's output) with every OP_TAILCALL of every function made OP_CALL."""
    return bytes(_walked(chunk).buf)


def tail_calls(chunk: bytes) -> set[tuple[int, int]]:
    """Where `chunk` makes tail calls, as (line its function was defined at, line of the call):
    the Lua debugger hides the frames a tail call would have dropped (server/scripting/ldb.py)."""
    return _walked(chunk).tail_calls
