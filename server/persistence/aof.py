"""The append-only file, as Redis 7.0 keeps it: a directory of a base and increments, written,
fsynced and rewritten while the server runs (aof.c's writing side).

Layout (Redis 7.0's multi-part AOF, so the directory moves between raxdb and redis-server):
`dir`/`appenddirname`/ holds `appendfilename`.manifest, one base file (`.<seq>.base.rdb`, an RDB
snapshot, with aof-use-rdb-preamble yes; `.<seq>.base.aof`, commands, with no) and incremental
files (`.<seq>.incr.aof`, commands in RESP).  The manifest (server/persistence/aofmanifest.py) lists them.

State (`state`, Redis's aof_state): OFF, ON, or WAIT_REWRITE (CONFIG SET appendonly yes until its
first rewrite is done; what is fed meanwhile goes to a temporary increment, which the rewrite's
end renames into the manifest, so nothing written after the fork is lost).

Feeding: server/events/propagate.py hands every propagated operation to `feed`, which appends it to
`buf` in RESP, with a SELECT first whenever the database differs from the last one written
(`selected_db`), and a "#TS:<unix seconds>" line when aof-timestamp-enabled and the second
changed.  `flush` (flushAppendOnlyFile) writes `buf` to the open increment before any reply of
the same event-loop iteration goes out (Server.flush_writes calls it first).  appendfsync always
fsyncs there too, so a client that got a reply has its write on disk; everysec hands the fsync to
a background thread (`Bio`) at most once a second, so the loop never waits on the disk (a write
is postponed up to 2 s while that thread is still fsyncing, as a write would block behind it;
redis-benchmark SET -P 16, 50 clients, two runs each: 49.5k and 65.1k ops/s with the fsync in the
cron, 79.3k and 86.6k with the thread);
no leaves it to the kernel.  A failed write keeps the buffer, marks `last_write_ok` false (INFO's
aof_last_write_status:err), and `denied_error` refuses writes with Redis's MISCONF text until a
retry from the cron succeeds; with appendfsync always the server exits, as Redis does, since the
replies already promised durability.

Rewriting (BGREWRITEAOF, auto-aof-rewrite-*, appendonly yes at run time): the parent first opens
a new increment and writes the manifest naming it, so everything after the fork is in files the
manifest already lists and no rewrite buffer is needed.  A forked child (the one child slot of
server/persistence/snapshot.py, shared with BGSAVE) writes the new base; when it is reaped the parent
renames it into the directory, turns the old base and the increments the base now covers into
history, writes the manifest, then deletes the history files.
"""

from __future__ import annotations

import errno
import os
import queue
import signal
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO

from raxdb.server.base import clock, latency
from raxdb.server.base.fields import AofFields
from raxdb.server.base.files import WriteFailed, remove_quietly, write_atomically
from raxdb.server.base.log import LOG
from raxdb.server.config.options import ConfigError
from raxdb.server.events import propagate
from raxdb.server.events.propagate import encode_command as _encode
from raxdb.server.scripting.functions import library_code
from raxdb.storage.hashfe import HashEx
from raxdb.storage.keyspace import is_string

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.persistence import aofmanifest

OFF, ON, WAIT_REWRITE = 0, 1, 2
ITEMS_PER_CMD = 64  # AOF_REWRITE_ITEMS_PER_CMD
WRITE_ERROR_LOG_RATE = 30  # AOF_WRITE_LOG_ERROR_RATE, seconds between logged write errors
REWRITE_LIMIT_THRESHOLD = 3  # AOF_REWRITE_LIMITE_THRESHOLD: failures before automatic retries slow down
REWRITE_LIMIT_MAX_MINUTES = 60


class Bio:
    """Redis's bio thread for the AOF: fsyncs (and fsync-then-close of a replaced increment) off
    the event loop.  Jobs run in order, so a close never overtakes an fsync of the same fd, and
    the loop never closes an fd the thread may still use.  `pending` counts queued fsyncs
    (bioPendingJobsOfType(BIO_AOF_FSYNC)); `error` is the errno of the last failed fsync, None
    once one succeeds (aof_bio_fsync_status).  The thread never logs: a fork while it held the
    log stream's lock would leave the child (which logs) blocked on it for ever, so a failure is
    left in `unlogged` for the loop's cron to log."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[str, int, int]] = queue.SimpleQueue()
        self.pending = 0
        # the replication offset the last successful fsync covered (fsynced_reploff_pending;
        # written by the thread, read by the loop: an int's store is atomic under the GIL)
        self.synced_offset = 0
        self.error: int | None = None
        self.unlogged: str | None = None
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def submit(self, kind: str, fd: int, offset: int = -1) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="aof-bio", daemon=True)
            self.thread.start()
        if kind == "fsync":
            with self.lock:
                self.pending += 1
        self.jobs.put((kind, fd, offset))

    def _run(self) -> None:
        while True:
            kind, fd, offset = self.jobs.get()
            try:
                os.fdatasync(fd)
            except OSError as exc:
                # a replaced increment's fsync failing is not the live file's error (as Redis)
                if kind == "fsync" and exc.errno not in (errno.EBADF, errno.EINVAL):
                    if self.error is None:
                        self.unlogged = f"Fail to fsync the AOF file: {exc.strerror}"
                    self.error = exc.errno
            else:
                if kind == "fsync":
                    self.error = None
                    if offset >= 0:
                        self.synced_offset = offset
            if kind == "close":
                try:
                    os.close(fd)
                except OSError:
                    pass
            else:
                with self.lock:
                    self.pending -= 1


class AOF(AofFields):
    replica_stream = False  # a propagation target that skips PUBLISH (server/events/propagate.py)

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.config = srv.config  # (its typed views: appendfsync, aof_timestamps)
        self.buf = bytearray()
        self.selected_db = -1  # the database the file's last command ran in (-1: none yet)
        self.fd = -1  # the increment being appended to
        # the manifest (`manifest`), made or read on first use: a server with no AOF directory and
        # appendonly no never imports server/persistence/aofmanifest.py (its dataclasses, ~4 M
        # instructions of start-up, #56)
        self._manifest: aofmanifest.Manifest | None = None
        self.manifest_read = False  # the directory's manifest was read (start-up, or lazily)
        self.state = ON if srv.config.values["appendonly"] == "yes" else OFF
        self.bio = Bio()
        # sizes: the AOF's (base and increments), the base's after the last rewrite (the
        # auto-rewrite's reference), the open increment's (-1: not known yet, read when first
        # needed) and how much of it the last fsync covered
        self.current_size = 0
        self.base_size = 0
        self.incr_size = -1
        self.flush_sleep_us = 0  # DEBUG AOF-FLUSH-SLEEP
        self.incr_fsync_offset = 0
        # WAITAOF (7.2, compat-version): the replication offset the AOF has on disk
        # (fsynced_reploff; -1 with the AOF off, 0 until the first rewrite of CONFIG SET appendonly
        # yes is done), taken from `bio.synced_offset` before each loop iteration's replies
        self.fsynced_reploff = 0 if self.state == ON else -1
        self.last_fsync = int(clock.seconds(self.srv))
        self.flush_postponed_start = 0
        self.delayed_fsync = 0
        self.last_write_ok = True
        self.last_write_errno = 0
        self.last_write_error_log = 0
        self.cur_timestamp = 0
        # rewriting
        self.rewrite_scheduled = False
        self.rewrite_time_start = -1
        self.rewrite_time_last = -1
        self.lastbgrewrite_ok = True
        self.stat_rewrites = 0
        self.consecutive_failures = 0
        self.limit_delay_minutes = 0
        self.limit_next_time = 0
        srv.persistence.child_done["aof"] = self._rewrite_done
        on = srv.config.on_change.setdefault
        on("appendonly", []).append(self._on_appendonly)
        # updateAofAutoGCEnabled: turning the collection back on removes what it kept
        on("aof-disable-auto-gc", []).append(lambda v: self.delete_history() if v == "no" else None)

    @property
    def manifest(self) -> aofmanifest.Manifest:
        m = self._manifest
        if m is None:
            from raxdb.server.persistence import aofmanifest
            m = self._manifest = aofmanifest.Manifest()
        return m

    @manifest.setter
    def manifest(self, m: aofmanifest.Manifest) -> None:
        self._manifest = m

    # ---- names ------------------------------------------------------------------------------
    def dirname(self) -> str:
        return self.srv.config.values["appenddirname"]

    def filename(self) -> str:
        return self.srv.config.values["appendfilename"]

    def manifest_path(self) -> str:
        return os.path.join(self.dirname(), self.filename() + ".manifest")

    def temp_incr_name(self) -> str:
        """getTempIncrAofName: the increment of a WAIT_REWRITE, before it has a sequence number."""
        return "temp-" + self.filename() + ".incr"

    def path(self, name: str) -> str:
        return os.path.join(self.dirname(), name)

    def rdb_preamble(self) -> bool:
        return self.srv.config.values["aof-use-rdb-preamble"] == "yes"

    # ---- start-up -------------------------------------------------------------------------------
    def to_load(self) -> bool:
        """Has start-up an AOF to read (server/persistence/aofload.py's load_at_startup)?  With
        appendonly yes, or where its directory exists: its manifest is read whatever appendonly
        says (aofLoadManifestFromDisk; one Redis refuses stops the server).  Otherwise the
        loader is not even imported (#56): the manifest stays the empty one it would read."""
        return self.srv.config.values["appendonly"] == "yes" or os.path.isdir(self.dirname())

    def start(self) -> None:
        """appendonly yes at start-up (aofOpenIfNeededOnServerStart): the manifest's last increment
        is opened for appending; with no AOF yet, a base of the dataset and a first increment are
        created.  `manifest` is what start-up loading read (server/persistence/aofload.py)."""
        if self.srv.config.values["appendonly"] != "yes":
            return
        os.makedirs(self.dirname(), exist_ok=True)
        prefix = self.filename()
        m = self.manifest
        loaded = m.base is not None or bool(m.incrs)
        if not loaded:
            base = m.new_base(prefix, self.rdb_preamble())
            LOG.notice(f"Creating AOF base file {base.name} on server start")
            if not self.write_base(self.path(base.name)):
                raise SystemExit(1)
        if not m.incrs:
            incr = m.new_incr(prefix)
            LOG.notice(f"Creating AOF incr file {incr.name} on server start")
            self.write_manifest()
        else:
            LOG.notice(f"Opening AOF incr file {m.incrs[-1].name} on server start")
        incr_path = os.path.join(self.dirname(), m.incrs[-1].name)
        self.fd = os.open(incr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if loaded:  # loadAppendOnlyFiles' sizes (a base made just now is not counted, as in Redis)
            self.base_size = _size(self.path(m.base.name)) if m.base is not None else 0
            self.current_size = self.base_size + sum(_size(self.path(i.name)) for i in m.incrs)
        self.srv.propagation_targets.append(self)
        propagate.sync(self.srv)
        self.backlog_for_waitaof()

    def write_manifest(self) -> None:
        """writeAofManifestFile for `self.manifest`; OSError when it fails (start-up exits)."""
        if not self.persist(self.manifest):
            raise OSError(errno.EIO, "Failed to write the AOF manifest")

    def persist(self, m: aofmanifest.Manifest) -> bool:
        """persistAofManifest: `m` written to a temp file, fsynced, renamed over the manifest, and
        the directory fsynced (new files may have appeared in it); False, logged as Redis logs
        it, on failure."""
        self.manifest_read = True
        path = self.manifest_path()
        name = os.path.basename(path)
        tmp_name = "temp-" + name
        text = m.format().encode(errors="surrogateescape")
        try:
            write_atomically(self.path(tmp_name), path, lambda f: f.write(text))
        except WriteFailed as exc:
            LOG.warning({
                "open": f"Can't open the AOF manifest file {tmp_name}: {exc.strerror}",
                "write": f"Error trying to write the temporary AOF manifest file {tmp_name}: {exc.strerror}",
                "fsync": f"Fail to fsync the temp AOF file {tmp_name}: {exc.strerror}.",
                "rename": f"Error trying to rename the temporary AOF manifest file {tmp_name} into {name}: "
                          f"{exc.strerror}",
            }[exc.stage])
            return False
        try:
            dfd = os.open(self.dirname(), os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as exc:
            LOG.warning(f"Fail to fsync AOF directory {path}: {exc.strerror}.")
            return False
        return True

    def _read_manifest(self) -> bool:
        """The directory's manifest, for a server started with appendonly no that turns it on
        (Redis reads it at start-up whatever appendonly says, so sequence numbers go on)."""
        if self.manifest_read:
            return True
        self.manifest_read = True
        path = self.manifest_path()
        if not os.path.isdir(self.dirname()) or not os.path.exists(path):  # aofLoadManifestFromDisk
            return True
        from raxdb.server.persistence import aofmanifest
        try:
            with open(path, "rb") as f:
                self.manifest = aofmanifest.parse(f.read())
        except (OSError, aofmanifest.ManifestError) as exc:
            LOG.warning(f"Can't read the AOF manifest {self.manifest_path()}: {exc}")
            return False
        return True

    # ---- feeding and writing --------------------------------------------------------------------
    def feed(self, dbid: int, argv: list[bytes], data: bytes | None = None) -> None:
        """feedAppendOnlyFile (`data`: argv encoded, when the caller has it already).  In
        WAIT_REWRITE with no rewrite running yet (it is scheduled), what comes is dropped: the
        rewrite, when it forks, snapshots it."""
        state = self.state
        if state != ON and not (state == WAIT_REWRITE and self.srv.persistence.child_type == "aof"):
            if dbid != self.selected_db:
                self.selected_db = dbid
            return
        buf = self.buf
        if not buf:
            self.srv.call_soon(self.flush)  # written even if no client has a reply waiting
        if self.config.aof_timestamps:
            now = int(clock.seconds(self.srv))
            if self.cur_timestamp < now:
                self.cur_timestamp = now
                buf += b"#TS:%d\r\n" % now
        if dbid != self.selected_db:
            buf += _encode([b"SELECT", b"%d" % dbid])
            self.selected_db = dbid
        buf += _encode(argv) if data is None else data

    def flush(self, force: bool = False) -> None:
        """flushAppendOnlyFile: write `buf` to the increment, then fsync as appendfsync says."""
        fd = self.fd
        if fd < 0:
            return
        if self.incr_size < 0:  # an increment opened at start-up: its size on disk
            self.incr_size = self.incr_fsync_offset = os.fstat(fd).st_size
        policy = self.config.appendfsync
        now = int(clock.seconds(self.srv))
        in_progress = False
        if not self.buf:
            # Nothing new, but what the last writes left unsynced still gets its fsync (a client
            # that stopped writing within the second would otherwise wait for the next write).
            if self.incr_fsync_offset == self.incr_size:
                # all on disk: so is the stream up to now (what went only to replicas)
                if policy != "no" and not self.bio.pending:
                    self.bio.synced_offset = self.srv.repl.master_repl_offset
                return
            if policy == "everysec":
                if now <= self.last_fsync or self.bio.pending:
                    return
            elif policy != "always":
                return
        else:
            if policy == "everysec":
                in_progress = self.bio.pending > 0
                if in_progress and not force:
                    # a write would wait behind the running fsync anyway: postpone, up to 2 s
                    if not self.flush_postponed_start:
                        self.flush_postponed_start = now
                        return
                    if now - self.flush_postponed_start < 2:
                        return
                    self.delayed_fsync += 1
                    LOG.notice("Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer "
                               "without waiting for fsync to complete, this may slow down Redis.")
            if self.flush_sleep_us > 0:  # DEBUG AOF-FLUSH-SLEEP: widens the window a test aims at
                time.sleep(self.flush_sleep_us / 1e6)
            if not self._write(now, policy):
                return
        if self.srv.config.values["no-appendfsync-on-rewrite"] == "yes" and self.srv.persistence.has_child():
            return
        if policy == "always":
            started = time.monotonic()
            try:
                os.fdatasync(fd)
            except OSError as exc:
                LOG.warning("Can't persist AOF for fsync error when the AOF fsync policy is 'always': "
                            f"{exc.strerror}. Exiting...")
                os._exit(1)
            if self.srv.config.latency_monitor_threshold:
                latency.add_sample_if_needed(self.srv, "aof-fsync-always", int((time.monotonic() - started) * 1000))
            self.incr_fsync_offset = self.incr_size
            self.last_fsync = now
            self.bio.synced_offset = self.srv.repl.master_repl_offset
        elif policy == "everysec" and now > self.last_fsync:
            if not in_progress:
                self.bio.submit("fsync", fd, self.srv.repl.master_repl_offset)
                self.incr_fsync_offset = self.incr_size
            self.last_fsync = now

    def _write(self, now: int, policy: str) -> bool:
        """The write half of flushAppendOnlyFile; False after a write error (the unwritten part
        stays in `buf` for the next try)."""
        data = bytes(self.buf)
        written = 0
        error: OSError | None = None
        monitor = self.srv.config.latency_monitor_threshold
        started = time.monotonic() if monitor else 0.0
        while written < len(data):
            try:
                written += os.write(self.fd, data[written:] if written else data)
            except OSError as exc:
                error = exc
                break
        if monitor:
            ms = int((time.monotonic() - started) * 1000)
            # the same events as Redis: with an fsync still running, with a child, or alone
            if self.bio.pending:
                latency.add_sample_if_needed(self.srv, "aof-write-pending-fsync", ms)
            elif self.srv.persistence.has_child():
                latency.add_sample_if_needed(self.srv, "aof-write-active-child", ms)
            else:
                latency.add_sample_if_needed(self.srv, "aof-write-alone", ms)
            latency.add_sample_if_needed(self.srv, "aof-write", ms)
        self.flush_postponed_start = 0
        if written == len(data):
            if not self.last_write_ok:
                LOG.warning("AOF write error looks solved, Redis can write again.")
                self.last_write_ok = True
            self.current_size += written
            self.incr_size += written
            self.buf.clear()
            return True
        can_log = now - self.last_write_error_log > WRITE_ERROR_LOG_RATE
        if can_log:
            self.last_write_error_log = now
        if not written:
            assert error is not None
            if can_log:
                LOG.warning(f"Error writing to the AOF file: {error.strerror}")
            self.last_write_errno = error.errno or errno.EIO
        else:
            if can_log:
                LOG.warning(f"Short write while writing to the AOF file: (nwritten={written}, "
                            f"expected={len(data)})")
            try:
                os.ftruncate(self.fd, self.incr_size)
            except OSError as exc:
                if can_log:
                    LOG.warning("Could not remove short write from the append-only file.  Redis may refuse to "
                                f"load the AOF the next time it starts.  ftruncate: {exc.strerror}")
            else:
                written = 0  # the partial write is gone: everything is still to write
            self.last_write_errno = errno.ENOSPC
        if policy == "always":
            # The replies are already queued and the changes made: the promise that a reply
            # means the write is on disk cannot be kept, so the server stops (as Redis).
            LOG.warning("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...")
            os._exit(1)
        self.last_write_ok = False
        if written > 0:
            self.current_size += written
            self.incr_size += written
            del self.buf[:written]
        return False

    def denied_error(self) -> bytes | None:
        """writeCommandsDeniedByDiskError's AOF half: the MISCONF error writes get while the AOF
        cannot be written (or its background fsync failed), else None."""
        if self.state == OFF:
            return None
        if not self.last_write_ok:
            code = self.last_write_errno
        elif self.bio.error is not None:
            code = self.last_write_errno = self.bio.error
        else:
            return None
        return b"MISCONF Errors writing to the AOF file: " + os.strerror(code).encode()

    def cron(self) -> None:
        """serverCron's AOF part (and beforeSleep's flush when nothing else wrote): a postponed
        write, a write that failed (retried until it succeeds, which lifts MISCONF), the
        everysec fsync of the last writes."""
        if self.bio.unlogged is not None:
            LOG.warning(self.bio.unlogged)
            self.bio.unlogged = None
        if self.state != OFF:
            self.flush()

    # ---- turning the AOF on and off at run time -------------------------------------------------
    def _on_appendonly(self, value: str) -> None:
        if value == "no" and self.state != OFF:
            self.stop()
        elif value == "yes" and self.state == OFF and not self.start_append_only():
            raise ConfigError("Unable to turn on AOF. Check server logs.")

    def stop(self) -> None:
        """stopAppendOnly (CONFIG SET appendonly no): flush and fsync what was fed, close the
        increment, stop being fed, and end a running rewrite."""
        self.flush(force=True)
        try:
            os.fdatasync(self.fd)
        except OSError as exc:
            LOG.warning(f"Fail to fsync the AOF file: {exc.strerror}")
        else:
            self.last_fsync = int(clock.seconds(self.srv))
        if self.fd >= 0:
            self.bio.submit("close", self.fd)  # after any fsync of it still queued
        self.fd = -1
        self.selected_db = -1
        self.state = OFF
        self.fsynced_reploff = -1
        self.rewrite_scheduled = False
        self.incr_size = self.incr_fsync_offset = 0
        self.kill_child()
        self.buf.clear()
        srv = self.srv
        if self in srv.propagation_targets:
            srv.propagation_targets.remove(self)
        propagate.sync(srv)

    def start_append_only(self) -> bool:
        """startAppendOnly (CONFIG SET appendonly yes): WAIT_REWRITE until a rewrite has written
        the dataset; what is fed from its fork on goes to a temporary increment."""
        if not self._read_manifest():
            return False
        p = self.srv.persistence
        self.state = WAIT_REWRITE
        # what is on disk counts from the rewrite's end on (the stream so far, then the fsyncs')
        self.fsynced_reploff = 0
        self.bio.synced_offset = self.srv.repl.master_repl_offset
        self.backlog_for_waitaof()
        if p.has_child() and p.child_type != "aof":
            self.rewrite_scheduled = True
            LOG.warning("AOF was enabled but there is already another background operation. An AOF background was "
                        "scheduled to start when possible.")
        elif any(c.in_exec for c in self.srv.clients.values()):  # server.in_exec: CONFIG SET inside EXEC
            self.rewrite_scheduled = True
            LOG.warning("AOF was enabled during a transaction. An AOF background was scheduled to start when "
                        "possible.")
        else:
            if p.child_type == "aof":
                LOG.warning("AOF was enabled but there is already an AOF rewriting in background. Stopping "
                            "background AOF and starting a rewrite now.")
                self.kill_child()
            if not self.rewrite_background():
                self.state = OFF
                LOG.warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. "
                            "Check the above logs for more info about the error.")
                return False
        self.last_fsync = int(clock.seconds(self.srv))
        if self.bio.error is not None:
            LOG.warning("AOF reopen, just ignore the AOF fsync error in bio job")
            self.bio.error = None
        if not self.last_write_ok:
            LOG.warning("AOF reopen, just ignore the last error.")
            self.last_write_ok = True
        srv = self.srv
        if self not in srv.propagation_targets:
            srv.propagation_targets.append(self)
        propagate.sync(srv)
        return True

    def backlog_for_waitaof(self) -> None:
        """From 7.2 on (compat-version) a master with the AOF on keeps a replication backlog even
        without replicas, as WAITAOF counts in replication offsets, which only a backlog moves."""
        repl = self.srv.repl
        if self.srv.config.compat_version >= (7, 2) and repl.backlog is None and repl.masterhost is None:
            repl.create_backlog()

    def update_fsynced(self) -> None:
        """beforeSleep's: the offset the fsyncs reached becomes what WAITAOF counts (with the AOF
        on; not while the first rewrite still writes the dataset)."""
        if self.state == ON and self.fsynced_reploff != -1:
            self.fsynced_reploff = self.bio.synced_offset

    # ---- rewriting ------------------------------------------------------------------------------
    def rewrite_background(self) -> bool:
        """rewriteAppendOnlyFileBackground: a new increment (and the manifest naming it), then a
        forked child writing the new base; False when it could not start."""
        p = self.srv.persistence
        if p.has_child() or not self._read_manifest():
            return False
        error = None
        try:
            os.mkdir(self.dirname(), 0o755)  # dirCreateIfMissing
        except FileExistsError:
            if not os.path.isdir(self.dirname()):
                error = os.strerror(errno.ENOTDIR)
        except OSError as exc:
            error = exc.strerror
        if error is not None:
            LOG.warning(f"Can't open or create append-only dir {self.dirname()}: {error}")
            self.lastbgrewrite_ok = False
            return False
        self.selected_db = -1  # the new increment starts with a SELECT
        self.flush(force=True)
        if not self._open_new_incr():
            self.lastbgrewrite_ok = False
            return False
        self.stat_rewrites += 1
        try:
            pid = p.fork_child("aof", self._rewrite_child, "redis-aof-rewrite")
        except OSError as exc:
            self.lastbgrewrite_ok = False
            LOG.warning(f"Can't rewrite append only file in background: fork: {exc.strerror}")
            return False
        LOG.notice(f"Background append only file rewriting started by pid {pid}")
        self.rewrite_scheduled = False
        self.rewrite_time_start = int(clock.seconds(self.srv))
        return True

    def _open_new_incr(self) -> bool:
        """openNewIncrAofForAppend: with the AOF on, the next increment, on disk and in the
        manifest before anything is written to it; in WAIT_REWRITE, the temporary increment."""
        if self.state == OFF:
            return True
        m = None
        if self.state == WAIT_REWRITE:
            name = self.temp_incr_name()
        else:
            import copy  # here and in the rewrite's end: not imported by a start (#56)

            m = copy.deepcopy(self.manifest)
            name = m.new_incr(self.filename()).name
        try:
            newfd = os.open(self.path(name), os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        except OSError as exc:
            LOG.warning(f"Can't open the append-only file {name}: {exc.strerror}")
            return False
        if m is not None and not self.persist(m):
            os.close(newfd)
            return False
        LOG.notice(f"Creating AOF incr file {name} on background rewrite")
        if self.fd >= 0:
            self.bio.submit("close", self.fd)  # fsynced, then closed, off the loop
            self.last_fsync = int(clock.seconds(self.srv))
        self.fd = newfd
        self.incr_size = self.incr_fsync_offset = 0
        if m is not None:
            self.manifest = m
        return True

    def _rewrite_child(self) -> bool:
        """The child's work: the new base into temp-rewriteaof-bg-<pid>.aof (in `dir`)."""
        tmp = f"temp-rewriteaof-bg-{os.getpid()}.aof"
        if not self.write_base(tmp):
            return False
        LOG.notice(f"Successfully created the temporary AOF base file {tmp}")
        return True

    def write_base(self, dest: str) -> bool:
        """rewriteAppendOnlyFile: the dataset as a base file at `dest` (an RDB marked aof-base,
        or commands, as aof-use-rdb-preamble says), by way of a temp file; False on failure.
        The start-up base is the same file."""
        tmp = f"temp-rewriteaof-{os.getpid()}.aof"
        persistence = self.srv.persistence
        values = self.srv.config.values
        incremental = values["aof-rewrite-incremental-fsync"] == "yes"
        preamble = self.rdb_preamble()

        def fill(f: BinaryIO) -> None:
            out: Any = AutoSync(f) if incremental else f
            if preamble:
                persistence.write_to(out, values["rdbcompression"] == "yes", aof_base=True)
            else:
                write_commands(self.srv, out)
        try:
            write_atomically(tmp, dest, fill)
        except WriteFailed as exc:
            if exc.stage == "open":
                LOG.warning(f"Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): {exc.strerror}")
            elif exc.stage == "rename":
                LOG.warning(f"Error moving temp append only file on the final destination: {exc.strerror}")
            else:
                LOG.warning(f"Write error writing append only file on disk: {exc.strerror}")
            return False
        return True

    def _rewrite_done(self, pid: int, exitcode: int, bysignal: int) -> None:
        """backgroundRewriteDoneHandler."""
        if not bysignal and exitcode == 0:
            LOG.notice("Background AOF rewrite terminated with success")
            self._install_base(pid)
        elif not bysignal:
            self._rewrite_failed()
            LOG.warning("Background AOF rewrite terminated with error")
        else:
            if bysignal != signal.SIGUSR1:  # SIGUSR1: killed on purpose, not a failure
                self._rewrite_failed()
            LOG.warning(f"Background AOF rewrite terminated by signal {bysignal}")
        self._remove_temp_files(pid)
        if self.state == WAIT_REWRITE:  # failed: the next attempt starts a new temporary increment
            self.buf.clear()
            self._remove_temp_incr()
        self.rewrite_time_last = int(clock.seconds(self.srv)) - self.rewrite_time_start
        self.rewrite_time_start = -1
        if self.state == WAIT_REWRITE:
            self.rewrite_scheduled = True

    def _rewrite_failed(self) -> None:
        self.lastbgrewrite_ok = False
        self.consecutive_failures += 1

    def _install_base(self, pid: int) -> None:
        """The successful half of backgroundRewriteDoneHandler: the child's file becomes the base,
        what it covers becomes history, the manifest says so, the history goes."""
        tmp = f"temp-rewriteaof-bg-{pid}.aof"
        prefix = self.filename()
        import copy

        m = copy.deepcopy(self.manifest)
        base = m.new_base(prefix, self.rdb_preamble())
        base_path = self.path(base.name)
        try:
            os.rename(tmp, base_path)
        except OSError as exc:
            LOG.warning(f"Error trying to rename the temporary AOF base file {tmp} into {base_path}: {exc.strerror}")
            self._rewrite_failed()
            return
        LOG.notice(f"Successfully renamed the temporary AOF base file {tmp} into {base.name}")
        incr_path = None
        if self.state == WAIT_REWRITE:
            temp_incr = self.temp_incr_name()
            incr = m.new_incr(prefix)
            incr_path = self.path(incr.name)
            try:
                os.rename(self.path(temp_incr), incr_path)
            except OSError as exc:
                LOG.warning(f"Error trying to rename the temporary AOF incr file {self.path(temp_incr)} into "
                            f"{incr_path}: {exc.strerror}")
                remove_quietly(base_path)
                self._rewrite_failed()
                return
            LOG.notice(f"Successfully renamed the temporary AOF incr file {temp_incr} into {incr.name}")
        m.incrs_to_history(keep_last=self.fd >= 0)
        if not self.persist(m):
            remove_quietly(base_path)
            if incr_path is not None:
                remove_quietly(incr_path)
            self._rewrite_failed()
            return
        self.manifest = m
        if self.state != OFF:
            try:
                base_bytes = os.path.getsize(base_path)
            except OSError as exc:
                LOG.warning(f"Unable to obtain the AOF file {base.name} length. stat: {exc.strerror}")
                base_bytes = 0
            self.current_size = self.base_size = base_bytes + max(0, self.incr_size)
        self.delete_history()
        self.lastbgrewrite_ok = True
        self.consecutive_failures = 0
        LOG.notice("Background AOF rewrite finished successfully")
        if self.state == WAIT_REWRITE:
            self.state = ON

    def delete_history(self) -> None:
        """aofDelHistoryFiles (unless aof-disable-auto-gc): the history files go, then the manifest
        stops naming them."""
        m = self._manifest  # None: none read or made yet, so no history
        if m is None or self.srv.config.values["aof-disable-auto-gc"] == "yes" or not m.history:
            return
        for h in m.history:
            LOG.notice(f"Removing the history file {h.name} in the background")
            remove_quietly(self.path(h.name))
        m.history.clear()
        self.persist(m)

    def _remove_temp_incr(self) -> None:
        """aofDelTempIncrAofFile."""
        name = self.temp_incr_name()
        LOG.notice(f"Removing the temp incr aof file {name} in the background")
        remove_quietly(self.path(name))

    @staticmethod
    def _remove_temp_files(pid: int) -> None:
        """aofRemoveTempFile: the rewrite child's files in `dir`."""
        remove_quietly(f"temp-rewriteaof-bg-{pid}.aof")
        remove_quietly(f"temp-rewriteaof-{pid}.aof")

    def kill_child(self) -> None:
        """killAppendOnlyChild: end a running rewrite and remove its temp files."""
        p = self.srv.persistence
        if p.child_type != "aof":
            return
        pid = p.child_pid
        LOG.notice(f"Killing running AOF rewrite child: {pid}")
        p.kill_child_process()
        self._remove_temp_files(pid)
        self.rewrite_time_start = -1

    def rewrite_limited(self) -> bool:
        """aofRewriteLimited: after 3 failures in a row, automatic rewrites wait 1, 2, 4, ... up to
        60 minutes between attempts (BGREWRITEAOF itself is never limited)."""
        if self.consecutive_failures < REWRITE_LIMIT_THRESHOLD:
            self.limit_delay_minutes = self.limit_next_time = 0
            return False
        now = int(clock.seconds(self.srv))
        if self.limit_next_time:
            if now < self.limit_next_time:
                return True
            self.limit_next_time = 0
            return False
        self.limit_delay_minutes = min(REWRITE_LIMIT_MAX_MINUTES, self.limit_delay_minutes * 2 or 1)
        self.limit_next_time = now + self.limit_delay_minutes * 60
        LOG.warning("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in "
                    f"{self.limit_delay_minutes} minutes")
        return True

    def auto_rewrite(self) -> None:
        """serverCron's auto-aof-rewrite-percentage / -min-size check (no child is running)."""
        values = self.srv.config.values
        perc = int(values["auto-aof-rewrite-percentage"])
        if self.state != ON or not perc or self.current_size <= int(values["auto-aof-rewrite-min-size"]):
            return
        growth = self.current_size * 100 // (self.base_size or 1) - 100
        if growth >= perc and not self.rewrite_limited():
            LOG.notice(f"Starting automatic rewriting of AOF on {growth}% growth")
            self.rewrite_background()

    # ---- shutdown and INFO ----------------------------------------------------------------------
    def prepare_shutdown(self, force: bool) -> bool:
        """prepareForShutdown's AOF part: a running rewrite is killed (the AOF has the whole
        dataset anyway), except the one that would create the AOF (appendonly yes set at run time),
        which blocks a shutdown without FORCE; then the AOF is flushed and fsynced.  False: the
        server must keep running."""
        if self.srv.persistence.child_type == "aof":
            if self.state == WAIT_REWRITE:
                if not force:
                    LOG.warning("Writing initial AOF, can't exit.")
                    return False
                LOG.warning("Writing initial AOF. Exit anyway.")
            LOG.warning("There is a child rewriting the AOF. Killing it!")
            self.kill_child()
        if self.state != OFF:
            LOG.notice("Calling fsync() on the AOF file.")
            self.flush(force=True)
            try:
                os.fdatasync(self.fd)
            except OSError as exc:
                LOG.warning(f"Fail to fsync the AOF file: {exc.strerror}.")
        return True

    def info(self) -> list[str]:
        """INFO persistence's aof_* lines (those after aof_enabled come only while appendonly is
        yes)."""
        p = self.srv.persistence
        rewriting = p.child_type == "aof"
        ok = self.last_write_ok and self.bio.error is None
        return [
            f"aof_enabled:{int(self.state != OFF)}",
            f"aof_rewrite_in_progress:{int(rewriting)}",
            f"aof_rewrite_scheduled:{int(self.rewrite_scheduled)}",
            f"aof_last_rewrite_time_sec:{self.rewrite_time_last}",
            f"aof_current_rewrite_time_sec:{int(clock.seconds(self.srv)) - self.rewrite_time_start if rewriting else -1}",
            f"aof_last_bgrewrite_status:{'ok' if self.lastbgrewrite_ok else 'err'}",
            f"aof_rewrites:{self.stat_rewrites}",
            f"aof_rewrites_consecutive_failures:{self.consecutive_failures}",
            f"aof_last_write_status:{'ok' if ok else 'err'}",
            f"aof_last_cow_size:{self.srv.persistence.childinfo.aof_cow_bytes}",
        ]

    def info_enabled(self) -> list[str]:
        if self.srv.config.values["appendonly"] != "yes":
            return []
        return [
            f"aof_current_size:{self.current_size}",
            f"aof_base_size:{self.base_size}",
            f"aof_pending_rewrite:{int(self.rewrite_scheduled)}",
            f"aof_buffer_length:{len(self.buf)}",
            f"aof_pending_bio_fsync:{self.bio.pending}",
            f"aof_delayed_fsync:{self.delayed_fsync}",
        ]

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT's part (resetServerStats)."""
        self.stat_rewrites = 0
        self.consecutive_failures = 0
        self.delayed_fsync = 0


class AutoSync:
    """rioSetAutoSync for aof-rewrite-incremental-fsync: the file is fsynced every 4 MB as it is
    written, so the kernel never holds a whole base of dirty pages to flush at once."""

    EVERY = 4 * 1024 * 1024  # REDIS_AUTOSYNC_BYTES

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.unsynced = 0

    def write(self, data: bytes) -> int:
        n = self.f.write(data)
        self.unsynced += len(data)
        if self.unsynced >= self.EVERY:
            self.f.flush()
            os.fdatasync(self.f.fileno())
            self.unsynced = 0
        return n


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# ---- the base as commands (aof-use-rdb-preamble no) -------------------------------------------------
def _bulk(parts: list[bytes], items: list[bytes]) -> None:
    for a in items:
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))


def _batched(parts: list[bytes], name: bytes, key: bytes, items: list[bytes], width: int) -> None:
    """rewriteListObject and its kin: `name key item...` commands of at most ITEMS_PER_CMD
    elements (an element being `width` arguments: a member, or a score and a member)."""
    n = len(items) // width
    for start in range(0, n, ITEMS_PER_CMD):
        count = min(ITEMS_PER_CMD, n - start)
        parts.append(b"*%d\r\n" % (2 + count * width))
        _bulk(parts, [name, key])
        _bulk(parts, items[start * width:(start + count) * width])


def _id(i: int) -> bytes:
    return b"%d-%d" % (i >> 64, i & 0xFFFFFFFFFFFFFFFF)


def _command(parts: list[bytes], *argv: bytes) -> None:
    parts.append(b"*%d\r\n" % len(argv))
    _bulk(parts, list(argv))


def _stream(parts: list[bytes], key: bytes, s: Any) -> None:
    """rewriteStreamObject: XADDs (or an empty stream by XADD MAXLEN 0), XSETID for the counters,
    and each group with its consumers: XCLAIMs for what they have pending, XGROUP CREATECONSUMER
    for those with nothing."""
    if s.length:
        for eid, fields, values in s.entries():
            argv = [b"XADD", key, _id(eid)]
            for f, v in zip(fields, values, strict=True):
                argv += (f, v)
            _command(parts, *argv)
    else:
        _command(parts, b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y")
    _command(parts, b"XSETID", key, _id(s.last_id), b"ENTRIESADDED", b"%d" % s.entries_added, b"MAXDELETEDID",
             _id(s.max_deleted_id))
    if s.cgroups is None:
        return
    for name, cg in s.cgroups.items():
        _command(parts, b"XGROUP", b"CREATE", key, name, _id(cg.last_id), b"ENTRIESREAD", b"%d" % cg.entries_read)
        for cname, cons in cg.consumers.items():
            if not len(cons.pel):
                _command(parts, b"XGROUP", b"CREATECONSUMER", key, name, cname)
                continue
            for raw, nack in cons.pel.items():
                _command(parts, b"XCLAIM", key, name, cname, b"0", _id(int.from_bytes(raw, "big")), b"TIME",
                         b"%d" % nack.delivery_time, b"RETRYCOUNT", b"%d" % nack.delivery_count, b"JUSTID", b"FORCE")


def write_commands(srv: Server, f: BinaryIO) -> None:
    """rewriteAppendOnlyFileRio: commands that rebuild the dataset (functions first, then each
    database's keys: SET, RPUSH, SADD, ZADD, HMSET, XADD..., with PEXPIREAT for a deadline),
    written to `f` about every 64 KiB so the child's memory stays flat."""
    from raxdb.storage.set_type import as_set  # the sets' module: its family's, imported on first use (#56)

    parts: list[bytes] = []
    size = 0
    if srv.config.values["aof-timestamp-enabled"] == "yes":
        parts.append(b"#TS:%d\r\n" % int(clock.seconds(srv)))
    for code in library_code(srv):
        _command(parts, b"FUNCTION", b"LOAD", code)
    for dbid, _size, _expires, keys in srv.persistence.snapshot():
        _command(parts, b"SELECT", b"%d" % dbid)
        for key, value, expire in keys:
            start = len(parts)
            if is_string(value):
                _command(parts, b"SET", key, bytes(value))
            else:
                kind = value.type_name
                if kind == "list":
                    _batched(parts, b"RPUSH", key, list(value), 1)
                elif kind == "set":
                    _batched(parts, b"SADD", key, as_set(value).members(), 1)  # type: ignore[union-attr]  # a set
                elif kind == "zset":
                    items: list[bytes] = []
                    for score, member in value:
                        items += (b"%.17g" % score, member)
                    _batched(parts, b"ZADD", key, items, 2)
                elif type(value) is HashEx and value.ttl:
                    # Redis 7.4's rewriteHashObject: a field at a time, each with its deadline
                    ttl = value.ttl
                    for field, val in value.items():
                        _command(parts, b"HMSET", key, field, val)
                        if field in ttl:
                            _command(parts, b"HPEXPIREAT", key, b"%d" % ttl[field], b"FIELDS", b"1", field)
                elif kind == "hash":
                    items = []
                    for field, val in value.items():
                        items += (field, val)
                    _batched(parts, b"HMSET", key, items, 2)
                elif kind == "stream":
                    _stream(parts, key, value)
            if expire is not None:
                _command(parts, b"PEXPIREAT", key, b"%d" % expire)
            size += sum(len(p) for p in parts[start:])
            if size >= 65536:
                f.write(b"".join(parts))
                parts.clear()
                size = 0
    f.write(b"".join(parts))
