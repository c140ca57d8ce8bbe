"""The AOF manifest: which files make up the append-only file, in Redis 7.0's text format.

A multi-part AOF is a directory of one BASE (a snapshot from the last rewrite: RDB, or commands
when aof-use-rdb-preamble is no), the INCR files written since (in sequence order: more than one
while a rewrite runs or after one failed), and HISTORY files (a finished rewrite's old base and
increments, deleted once the new manifest is on disk).  The manifest names them, one line each:

    file appendonly.aof.2.base.rdb seq 2 type b
    file appendonly.aof.1.incr.aof seq 1 type h
    file appendonly.aof.2.incr.aof seq 2 type i

written base first, then history, then increments (getAofManifestAsString), names quoted as
sdscatrepr when they need it.  `parse` is aofLoadManifestFromFile: keys in any order and case,
extra pairs ignored (forward compatibility), '#' lines skipped, and the same fatal errors for a
malformed file, so what loads in one server loads in the other and what Redis refuses is refused.
Sequence numbers only grow: a new increment takes `incr_seq + 1`, a new base `base_seq + 1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raxdb.protocol.request import quote_arg, split_inline_args
from raxdb.server.base.numparse import strtoll

MAX_LINE = 1024  # MANIFEST_MAX_LINE
BASE, INCR, HIST = "b", "i", "h"


class ManifestError(Exception):
    """A manifest Redis would refuse to load; `line`/`linenum` locate it (None: the whole file)."""

    def __init__(self, msg: str, linenum: int = 0, line: str | None = None) -> None:
        super().__init__(msg)
        self.linenum = linenum
        self.line = line


@dataclass
class AofInfo:
    name: str
    seq: int
    type: str

    def format(self) -> str:
        raw = self.name.encode(errors="surrogateescape")
        needs = any(ch in b'\\"' or not 0x21 <= ch <= 0x7e for ch in raw)  # sdsneedsrepr
        name = quote_arg(raw) if needs else self.name
        return f"file {name} seq {self.seq} type {self.type}\n"


@dataclass
class Manifest:
    base: AofInfo | None = None
    history: list[AofInfo] = field(default_factory=list)
    incrs: list[AofInfo] = field(default_factory=list)
    base_seq: int = 0  # curr_base_file_seq
    incr_seq: int = 0  # curr_incr_file_seq

    def format(self) -> str:
        parts = [self.base.format()] if self.base else []
        parts += [a.format() for a in self.history]
        parts += [a.format() for a in self.incrs]
        return "".join(parts)

    def copy(self) -> Manifest:
        return Manifest(self.base, list(self.history), list(self.incrs), self.base_seq, self.incr_seq)

    def new_incr(self, prefix: str) -> AofInfo:
        """getNewIncrAofName: the next increment, appended to the list."""
        self.incr_seq += 1
        info = AofInfo(f"{prefix}.{self.incr_seq}.incr.aof", self.incr_seq, INCR)
        self.incrs.append(info)
        return info

    def new_base(self, prefix: str, rdb_preamble: bool) -> AofInfo:
        """getNewBaseFileNameAndMarkPreAsHistory: the next base; the current one becomes history."""
        if self.base is not None:
            self.base.type = HIST
            self.history.insert(0, self.base)  # at the head, as Redis lists it
        self.base_seq += 1
        ext = "rdb" if rdb_preamble else "aof"
        self.base = AofInfo(f"{prefix}.{self.base_seq}.base.{ext}", self.base_seq, BASE)
        return self.base

    def incrs_to_history(self, keep_last: bool) -> None:
        """markRewrittenIncrAofAsHistory: after a rewrite, the increments the new base covers become
        history (ahead of the old base, in their order); `keep_last`: the AOF is on, and its
        last increment, opened when the rewrite started, is not covered."""
        done = self.incrs[:-1] if keep_last else self.incrs
        for info in done:
            info.type = HIST
        self.history[:0] = done
        self.incrs = self.incrs[len(done):]


def parse(data: bytes) -> Manifest:
    """aofLoadManifestFromFile on the file's bytes; ManifestError with Redis's message."""
    m = Manifest()
    maxseq = 0
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    if not data:
        raise ManifestError("Found an empty AOF manifest")
    for linenum, raw in enumerate(lines, 1):
        if raw.startswith(b"#"):
            continue
        if len(raw) >= MAX_LINE or (linenum == len(lines) and not data.endswith(b"\n")):
            raise ManifestError("The AOF manifest file contains too long line")
        line = raw.strip(b" \t\r\n")
        shown = line.decode(errors="surrogateescape")
        if not line:
            raise ManifestError("Invalid AOF manifest file format", linenum, shown)
        argv = split_inline_args(line)
        if argv is None or len(argv) < 6 or len(argv) % 2:
            raise ManifestError("Invalid AOF manifest file format", linenum, shown)
        name, seq, ftype = None, 0, ""
        for key, value in zip(argv[::2], argv[1::2], strict=True):
            k = key.lower()
            if k == b"file":
                name = value.decode(errors="surrogateescape")
                if "/" in name:
                    raise ManifestError("File can't be a path, just a filename", linenum, shown)
            elif k == b"seq":
                seq = strtoll(value)
            elif k == b"type":
                ftype = value[:1].decode(errors="surrogateescape")
        if not name or not seq or not ftype:
            raise ManifestError("Invalid AOF manifest file format", linenum, shown)
        info = AofInfo(name, seq, ftype)
        if ftype == BASE:
            if m.base is not None:
                raise ManifestError("Found duplicate base file information", linenum, shown)
            m.base, m.base_seq = info, seq
        elif ftype == HIST:
            m.history.append(info)
        elif ftype == INCR:
            if seq <= maxseq:
                raise ManifestError("Found a non-monotonic sequence number", linenum, shown)
            m.incrs.append(info)
            m.incr_seq = maxseq = seq
        else:
            raise ManifestError("Unknown AOF file type", linenum, shown)
    return m
