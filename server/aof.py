"""The append-only file, as Redis 7.0 keeps it: a directory of a base and increments.

Layout (Redis 7.0's multi-part AOF, so the directory moves between raxdb and redis-server):
`dir`/`appenddirname`/ holds `appendfilename`.manifest, one base file (`.<seq>.base.rdb`, an RDB
snapshot, with aof-use-rdb-preamble yes) and incremental files (`.<seq>.incr.aof`, commands in
RESP).  The manifest lists them, one `file <name> seq <n> type b|i|h` line each.

Feeding: server/propagate.py hands every propagated operation to `feed`, which appends it to
`buf` in RESP, with a SELECT first whenever the database differs from the last one written
(`selected_db`).  `flush` writes `buf` to the open increment before any reply of the same
event-loop iteration goes out (Server.flush_writes calls it first), and with appendfsync always
fsyncs it too: a client that got a reply has its write on disk, as Redis guarantees.  everysec
fsyncs from the cron at most once a second; no leaves it to the kernel.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from hiredis import pack_command as _pack

from server import aofmanifest, propagate
from server.log import LOG

if TYPE_CHECKING:
    from server.core import Server


def encode_command(argv: list[bytes]) -> bytes:
    """catAppendOnlyGenericCommand: a multibulk of bulk strings."""
    try:
        # hiredis's C encoder, the same bytes for bytes arguments: per-argument formatting in
        # Python was most of what feeding a write cost (bench/instr.sh with HOTPATH_AOF=1)
        return _pack(tuple(argv))
    except TypeError:  # a bytearray or memoryview some command rewrote its argv with
        parts = [b"*%d\r\n" % len(argv)]
        for a in argv:
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(parts)


class AOF:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.buf = bytearray()
        self.selected_db = -1  # the database the file's last command ran in (-1: none yet)
        self.fd = -1  # the increment being appended to
        self.last_fsync = 0.0
        self.manifest = aofmanifest.Manifest()

    # ---- names ------------------------------------------------------------------------------
    def dirname(self) -> str:
        return self.srv.config.values["appenddirname"]

    def filename(self) -> str:
        return self.srv.config.values["appendfilename"]

    def manifest_path(self) -> str:
        return os.path.join(self.dirname(), self.filename() + ".manifest")

    # ---- start-up -------------------------------------------------------------------------------
    def start(self) -> None:
        """appendonly yes at start-up (aofOpenIfNeededOnServerStart): the manifest's last increment
        is opened for appending; with no AOF yet, a base of the dataset and a first increment are
        created."""
        if self.srv.config.values["appendonly"] != "yes":
            return
        os.makedirs(self.dirname(), exist_ok=True)
        prefix = self.filename()
        path = self.manifest_path()
        if os.path.exists(path):
            with open(path, "rb") as f:
                self.manifest = aofmanifest.parse(f.read())
        else:
            self.manifest = aofmanifest.Manifest()
        m = self.manifest
        if m.base is None and not m.incrs:
            base = m.new_base(prefix, self.srv.config.values["aof-use-rdb-preamble"] == "yes")
            LOG.notice(f"Creating AOF base file {base.name} on server start")
            with open(os.path.join(self.dirname(), base.name), "wb") as f:
                self.srv.persistence.write_to(f, False)
                f.flush()
                os.fsync(f.fileno())
        if not m.incrs:
            incr = m.new_incr(prefix)
            LOG.notice(f"Creating AOF incr file {incr.name} on server start")
            self.write_manifest()
        incr_path = os.path.join(self.dirname(), m.incrs[-1].name)
        self.fd = os.open(incr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.srv.propagation_targets.append(self)
        propagate.sync(self.srv)

    def write_manifest(self) -> None:
        """writeAofManifestFile: a temp file, fsynced, renamed over the manifest."""
        path = self.manifest_path()
        tmp = os.path.join(self.dirname(), "temp-" + os.path.basename(path))
        with open(tmp, "w") as f:
            f.write(self.manifest.format())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    # ---- feeding and writing --------------------------------------------------------------------
    def feed(self, dbid: int, argv: list[bytes]) -> None:
        buf = self.buf
        if not buf:
            self.srv.call_soon(self.flush)  # written even if no client has a reply waiting
        if dbid != self.selected_db:
            db = b"%d" % dbid
            buf += b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n" % (len(db), db)
            self.selected_db = dbid
        buf += encode_command(argv)

    def flush(self) -> None:
        if not self.buf or self.fd < 0:
            return
        data = bytes(self.buf)
        self.buf.clear()
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        if self.srv.config.values["appendfsync"] == "always":
            os.fsync(self.fd)

    def cron(self) -> None:
        """everysec: fsync what was written, at most once a second."""
        if self.fd < 0 or self.srv.config.values["appendfsync"] != "everysec":
            return
        import time

        now = time.monotonic()
        if now - self.last_fsync >= 1.0:
            self.flush()
            os.fsync(self.fd)
            self.last_fsync = now
