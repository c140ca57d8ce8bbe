"""The propagation harness: what raxdb appends to its AOF, against what redis-server appends.

Both servers run with appendonly yes and appendfsync always, so every reply comes after its
propagated commands are in the file.  `AofDiff.run` sends commands to both (the same bytes, one
connection each) and `AofDiff.ops` returns what each appended since the last call, as lists of
argv; `AofDiff.check` asserts they are equal.

    def test_something(aofdiff):
        aofdiff.run("SET", "k", "v", "EX", "100")
        aofdiff.check(mask_times=True)      # absolute ms/s deadlines masked: the servers' clocks differ

Deadlines and other clock readings differ by the milliseconds between the two servers' runs, so
`mask_times` replaces any integer argument within a day of now (in ms or in s) by `<ms>` / `<s>`.
Everything else (SELECT, MULTI/EXEC wrapping, argument spelling and case) is compared exactly.
"""

from __future__ import annotations

import os
import time
from typing import Any

import hiredis

from tests.support.diff import RawConnection
from tests.support.servers import ServerProcess


def incr_path(server: ServerProcess) -> str:
    """The increment the server is appending to: the manifest's last `type i` file."""
    d = os.path.join(server.cwd, "appendonlydir")
    manifest = [n for n in os.listdir(d) if n.endswith(".manifest")][0]
    last = ""
    with open(os.path.join(d, manifest)) as f:
        for line in f:
            words = line.split()
            if "type" in words and words[words.index("type") + 1] == "i":
                last = words[1]
    return os.path.join(d, last)


def parse_ops(data: bytes) -> list[list[bytes]]:
    reader = hiredis.Reader()
    reader.feed(data)
    ops = []
    while True:
        item = reader.gets()
        if item is False:
            break
        ops.append(item)
    return ops


def mask(ops: list[list[bytes]]) -> list[list[bytes]]:
    now_ms = int(time.time() * 1000)
    day_ms = 86_400_000
    out = []
    for op in ops:
        masked = []
        for a in op:
            if a.isdigit() and len(a) < 20:
                n = int(a)
                if abs(n - now_ms) < day_ms * 400:
                    a = b"<ms>"
                elif abs(n - now_ms // 1000) < 86_400 * 400:
                    a = b"<s>"
            masked.append(a)
        out.append(masked)
    return out


class AofDiff:
    def __init__(self, ours: ServerProcess, theirs: ServerProcess) -> None:
        self.servers = (ours, theirs)
        self.conns = [RawConnection(s.port) for s in self.servers]
        self.marks = [os.path.getsize(incr_path(s)) for s in self.servers]

    def close(self) -> None:
        for c in self.conns:
            c.close()

    def run(self, *args: Any) -> tuple[bytes, bytes]:
        """Send one command to both; their raw replies (ours, theirs)."""
        ours, theirs = (c.call(*args) for c in self.conns)
        return ours, theirs

    def ops(self) -> tuple[list[list[bytes]], list[list[bytes]]]:
        """What each server appended since the last call (or since the harness started)."""
        out = []
        for i, s in enumerate(self.servers):
            path = incr_path(s)
            with open(path, "rb") as f:
                f.seek(self.marks[i])
                data = f.read()
            self.marks[i] += len(data)
            out.append(parse_ops(data))
        return out[0], out[1]

    def check(self, mask_times: bool = False) -> list[list[bytes]]:
        ours, theirs = self.ops()
        if mask_times:
            ours, theirs = mask(ours), mask(theirs)
        assert ours == theirs, f"\nraxdb: {ours}\nredis: {theirs}"
        return ours
