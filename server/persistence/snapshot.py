"""RDB persistence: SAVE, BGSAVE, save points, the final save at shutdown, and loading the dump
file at start-up, as Redis's rdb.c and serverCron do them.

The bytes are storage/rdb.py's (Redis 7.0's format, so a dump.rdb moves between raxdb and
redis-server both ways); this module decides when and where they are written and read.

- A save writes `temp-<pid>.rdb` in `dir`, flushes and fsyncs it, then renames it over
  `dbfilename`: a crash mid-save leaves the previous snapshot intact (rdbSave).
- BGSAVE forks.  The child holds a copy-on-write image of the dataset as it was at the fork, so
  the snapshot is consistent while the parent keeps serving; it writes the file and leaves with
  os._exit, never touching the event loop.  There is one child slot (`fork_child`,
  `child_type`), shared with server/persistence/aof.py's rewrite as Redis shares it: whoever finds
  it taken schedules itself or fails with Redis's reply, and `check_child` hands a reaped child to
  its kind's handler.  The parent polls the child from the cron (checkChildrenDone), as Redis
  does, and only then counts the save: `dirty` loses the changes the snapshot covered, LASTSAVE
  moves.
- What the child copies.  Every page the child writes, and every shared page the parent writes
  while it runs, is copied.  So the child writes nothing of the parent's: the compiled build's
  writer (storage/rdbwalk.pyx) reads the keyspace through borrowed references, with no
  reference count touched and its buffers its own, and the child turns the cyclic collector off
  at once (a collection writes to every tracked object).  What the copy then costs follows what
  the clients change during the save, as Redis's.  The interpreted build writes with
  storage/rdb.py, whose walk touches every object's count: the same file, a copy of the heap.
- A foreground save (SAVE, shutdown, FLUSHALL, DEBUG RELOAD) and BGSAVE compress as rdbcompression
  says; the interpreted build's foreground save writes strings without LZF (see `save`).
- Save points ("save <seconds> <changes> ...") are checked every cron tick: a BGSAVE starts when
  one is reached, and after a failed one not before CONFIG_BGSAVE_RETRY_DELAY (5 s).
- Start-up loading happens after the listening sockets are bound; clients are served while it
  runs, answered -LOADING but for the commands flagged `loading` (server/persistence/loading.py).  Keys
  already past their deadline are not loaded (as a master does), an empty collection is
  skipped, and a file that fails its checks stops the server with Redis's message: serving a
  partial dataset would lose data silently.
- Start-up imports none of the format (storage/rdb.py and what it imports, storage/rdbwalk.pyx):
  the first save or load does (#56), a background one in the parent before it forks (the
  children would each import them again).  A server with no dump file never needs them.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from raxdb.server.base import clock, latency, proctitle
from raxdb.server.base.errors import CommandError
from raxdb.server.base.files import WriteFailed, remove_quietly, write_atomically
from raxdb.server.base.loading import SYNC
from raxdb.server.base.log import LOG
from raxdb.server.base.numparse import strtoll
from raxdb.server.config import oomscore
from raxdb.server.events.propagate import deletion
from raxdb.server.persistence import childinfo, loading
from raxdb.server.persistence.loading import Steps
from raxdb.server.scripting.functions import library_code
from raxdb.storage.hashfe import track

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.storage import rdb

BGSAVE_RETRY_DELAY = 5  # CONFIG_BGSAVE_RETRY_DELAY, seconds
BGSAVE_ERROR = (b"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. "
                b"Commands that may modify the data set are disabled, because this instance is configured to "
                b"report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). "
                b"Please check the Redis logs for details about the RDB error.")


_SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
CHILD_NICENESS = 10  # a snapshot's child's nice increment (see fork_child)


class LoadError(Exception):
    """The dump file cannot be loaded; the message is what Redis logs.  `check_report`: what
    redis-check-rdb would print about it (redis-server runs it on a file it fails to load)."""

    check_report = ""


@functools.cache
def rdb_format() -> tuple[Any, Any]:
    """storage/rdb.py, and storage/rdbwalk.pyx, the compiled build's snapshot writer (None
    interpreted, where rdb.py's write_file writes): imported by the first save or load."""
    from raxdb.storage import rdb
    try:
        from raxdb.storage import rdbwalk  # type: ignore[attr-defined]  # a .pyx: compiled only, no Python source
    except ImportError:
        return rdb, None
    return rdb, rdbwalk


def _cwd() -> str | None:
    """getcwd, None when the directory was removed under the server (the save then fails on
    opening its file, and says so, rather than on this)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return None


class Persistence:
    """The server's RDB state: the running child, the schedule, the last outcomes (INFO)."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.total_forks = 0  # INFO total_forks (CONFIG RESETSTAT clears it)
        self.fork_usec = 0  # INFO latest_fork_usec: how long the last fork took the parent
        # The one forked child (Redis allows one at a time): its pid (-1: none), its kind ("rdb"
        # for BGSAVE, "aof" for BGREWRITEAOF), and what to call when it is reaped.
        self.child_pid = -1
        self.child_type = ""
        self.child_done: dict[str, Callable[[int, int, int], None]] = {"rdb": self._bgsave_done}
        # the server clock's second of the running BGSAVE's fork (rdb_save_time_start), -1 with none:
        # INFO's save seconds are whole seconds of that clock, as Redis's time(NULL) differences
        self.rdb_save_time_start = -1
        self.childinfo = childinfo.ChildInfo()  # the running child's reports (INFO's cow and progress)
        self.childinfo_read = 0.0  # when the cron last read them
        # INFO's used_memory as the parent worked it out at the fork, for a child's aux field
        # `used-mem`: the figure samples thousands of keys across the heap, and a child reading
        # them would copy every page it reads (None: no fork under way, work it out).
        self.used_at_fork: int | None = None
        self.dirty_before_bgsave = 0
        self.scheduled = False  # BGSAVE SCHEDULE, run when no child is active
        self.last_bgsave_try = 0
        self.stats = srv.persistence_stats
        self.loaded_aux: dict[bytes, bytes] = {}  # the start-up dump file's aux fields (repl-id, ...)
        self.stats.update(rdb_bgsave_in_progress=0, rdb_last_bgsave_status="ok", rdb_saves=0,
                          rdb_last_bgsave_time_sec=-1)
        on = srv.config.on_change.setdefault
        for name in ("stop-writes-on-bgsave-error", "save"):
            on(name, []).append(lambda _v: self._update_gate())

    # ---- a failed save refuses writes (stop-writes-on-bgsave-error) ------------------------------
    def _bgsave_status(self, status: str) -> None:
        self.stats["rdb_last_bgsave_status"] = status
        self._update_gate()

    def _update_gate(self) -> None:
        srv = self.srv
        values = srv.config.values
        gate = (values["stop-writes-on-bgsave-error"] == "yes" and bool(save_points(values["save"]))
                and self.stats["rdb_last_bgsave_status"] == "err")
        if gate != srv.rdb_gate:
            srv.rdb_gate = gate
            srv.update_plain_all()

    def writes_denied(self) -> bytes | None:
        """writeCommandsDeniedByDiskError with its message: the MISCONF error writes (and PING) get
        while the last save failed, or while the AOF cannot be written; else None."""
        if self.srv.rdb_gate:
            return BGSAVE_ERROR
        return self.srv.aof.denied_error()

    # ---- what a snapshot holds ------------------------------------------------------------------
    def limits(self) -> rdb.Limits:
        rdb = rdb_format()[0]
        cfg = self.srv.config
        fill, depth = cfg.list_options
        hash_entries, hash_value = cfg.hash_max_listpack
        zset_entries, zset_value = cfg.zset_max_listpack
        _, set_entries, set_value, _ = cfg.set_limits
        return rdb.Limits(hash_entries, hash_value, zset_entries, zset_value, cfg.set_max_intset_entries, fill, depth,
                          set_entries, set_value, rdb.format_of(cfg.compat_version))

    def path(self) -> str:
        return os.path.join(_cwd() or "", self.srv.config.values["dbfilename"])

    def _aux(self, aof_base: bool) -> list[tuple[bytes, bytes]]:
        used = self.used_at_fork if self.used_at_fork is not None else self.srv.used_memory()
        aux = [(b"redis-ver", self.srv.redis_version.encode()), (b"redis-bits", b"64"), (b"ctime", b"%d" % int(clock.seconds(self.srv))),
               (b"used-mem", b"%d" % used)]
        repl = self.srv.repl
        stream_db = None if aof_base else repl.rdb_save_info()
        if stream_db is not None:  # rdbSaveInfoAuxFields with an rsi: what a replica PSYNCs from
            aux += [(b"repl-stream-db", b"%d" % stream_db), (b"repl-id", repl.replid.encode()),
                    (b"repl-offset", b"%d" % repl.master_repl_offset)]
        return [*aux, (b"aof-base", b"1" if aof_base else b"0")]

    def snapshot(self) -> Iterator[tuple[int, int, int, Iterator[tuple[bytes, Any, int | None]]]]:
        """Every non-empty database as (id, keys, keys with a deadline, (key, value, deadline ms or
        None) ...): what an RDB save and an AOF rewrite both walk, rdb-key-save-delay included
        (debugDelay: microseconds per key, or a 1 us sleep once in -N keys)."""
        delay = int(self.srv.config.values["rdb-key-save-delay"])

        def delayed(keys: Iterator[Any]) -> Iterator[Any]:
            for item in keys:
                loading.debug_delay(delay)
                yield item

        for db in self.srv.dbs:
            if not db:
                continue
            keys = db.records()
            yield db.id, len(db), db.nexpires, childinfo.counted(delayed(keys) if delay else keys)

    def write_to(self, f: Any, compress: bool, aof_base: bool = False, data: bool = True,
                 functions: bool = True) -> None:
        """The whole dataset as an RDB file into the binary file `f`; `compress`: LZF strings as
        rdbcompression asks (see `save`); `aof_base`: the file is an AOF's base (its aux field
        `aof-base` says so, as rdbSaveInfoAuxFields writes it for RDBFLAGS_AOF_PREAMBLE);
        `data`, `functions`: False leaves the keys or the functions out (a replica's
        REPLCONF rdb-filter-only)."""
        srv = self.srv
        now = srv.now_ms
        values = srv.config.values
        policy = values["maxmemory-policy"]

        def idle(dbid: int, key: bytes) -> int | None:
            access = srv.dbs[dbid].access_ms(key)
            return max(0, now - access) // 1000 if access is not None else 0

        def freq(dbid: int, key: bytes) -> int | None:
            return srv.dbs[dbid].lfu_counter(key, now)

        aux = self._aux(aof_base)
        rdb, rdbwalk = rdb_format()
        libraries = library_code(self.srv) if functions else []
        checksum = values["rdbchecksum"] == "yes"
        if rdbwalk is not None:  # the compiled walk: no reference count of the dataset written
            w = rdb.Writer(compress)
            rdb.write_prologue(w, aux, libraries, rdb.format_of(srv.config.compat_version))
            delay = int(values["rdb-key-save-delay"])
            rdbwalk.write_file(f.write, compress, checksum, bytes(w.buf),
                               [(db.id, db) for db in srv.dbs if db] if data else [], now,
                               lru="lru" in policy, lfu=freq if "lfu" in policy else None,
                               delay=functools.partial(loading.debug_delay, delay) if delay else None,
                               progress=childinfo.reporter())
            return
        w = rdb.Writer(compress, f.write)
        rdb.write_file(w, aux, libraries, self.snapshot() if data else iter(()), idle if "lru" in policy else None,
                       freq if "lfu" in policy else None, checksum=checksum,
                       version=rdb.format_of(srv.config.compat_version))

    def _write_file(self, pid: int, compress: bool) -> None:
        """rdbSave's file dance: a temp file, fsynced, renamed over the dump file.  A failure is
        logged in rdbSave's words, which name the step that failed ("Write error saving DB on
        disk(rdbSaveRio): No space left on device" for a full disk, as Redis 7.0 logs it)."""
        tmp = f"temp-{pid}.rdb"
        step = "rdbSaveRio"  # rdbSave's err_op: the write of the data, then its flush

        def fill(f: Any) -> None:
            nonlocal step
            self.write_to(f, compress)
            step = "fflush"
            f.flush()

        try:
            write_atomically(tmp, self.path(), fill)
        except WriteFailed as exc:
            if exc.stage == "open":
                LOG.warning(f"Failed opening the temp RDB file {tmp} (in server root dir {_cwd() or 'unknown'}) for saving: "
                            f"{exc.strerror}")
            elif exc.stage == "rename":
                LOG.warning(f"Error moving temp DB file {tmp} on the final destination "
                            f"{self.srv.config.values['dbfilename']} (in server root dir {_cwd() or 'unknown'}): "
                            f"{exc.strerror}")
            else:
                LOG.warning(f"Write error saving DB on disk({step if exc.stage == 'write' else exc.stage}): "
                            f"{exc.strerror}")
            raise

    def _saved(self, dirty_covered: int) -> None:
        srv = self.srv
        srv.dirty -= dirty_covered
        srv.lastsave = int(clock.seconds(self.srv))
        self._bgsave_status("ok")

    # ---- SAVE -------------------------------------------------------------------------------------
    def save(self) -> bool:
        """A foreground save (SAVE, FLUSHALL with save points, DEBUG RELOAD, shutdown), compressed as
        rdbcompression says, as Redis's.  The interpreted build writes it without LZF: there LZF
        is Python, ~5x the rest of a save, and the server is stopped while it runs (a shutdown
        that outlasts its supervisor's patience loses what it was saving); the file is only larger."""
        dirty = self.srv.dirty
        try:
            self._write_file(os.getpid(), rdb_format()[1] is not None and self.srv.config.values["rdbcompression"] == "yes")
        except WriteFailed:
            return False  # the status stays: only a background save's failure sets it (rdbSave)
        LOG.notice("DB saved on disk")
        self._saved(dirty)
        return True

    # ---- the child (BGSAVE, BGREWRITEAOF) --------------------------------------------------------
    def has_child(self) -> bool:
        """hasActiveChildProcess: a BGSAVE or an AOF rewrite is running."""
        return self.child_pid != -1

    def in_progress(self) -> bool:
        """A BGSAVE is running (child_type == CHILD_TYPE_RDB)."""
        return self.child_type == "rdb"

    def fork_child(self, kind: str, work: Callable[[], bool], title: str) -> int:
        """redisFork for the child slot (BGSAVE, AOF rewrite): run `work` in a forked child that
        exits 0 when it returns True, 1 otherwise; the child's pid.  OSError when the fork fails.
        The child holds a copy-on-write image of the dataset at the fork; it turns the collector
        off at once (a collection would write to, and so copy, every page of the heap) and
        reports its copy-on-write through the child info pipe."""
        report_fd = self.childinfo.open(sum(len(db) for db in self.srv.dbs))
        rdb_format()  # imported once, here, not by every child (see the docstring)

        def child() -> bool:
            gc.disable()
            # Behind the parent for the CPU: the parent spends more CPU per request than
            # redis-server's, so on a host with few cores a walk at full speed beside it stretches
            # the clients' latency; at a lower priority the save takes longer instead (the speed
            # log's #53 entry has the figures).
            os.nice(CHILD_NICENESS)
            if self.childinfo.fd >= 0:  # the parent's end: a parent that is gone then fails our writes
                os.close(self.childinfo.fd)
            childinfo.start_child(report_fd, "AOF rewrite" if kind == "aof" else "RDB")
            if not work():
                return False
            childinfo.finished(childinfo.AOF_COW if kind == "aof" else childinfo.RDB_COW)
            return True

        self.used_at_fork = self.srv.used_memory()  # the snapshot's used-mem, worked out here (see __init__)
        try:
            pid = self.fork(child, title)
        except BaseException:
            if report_fd >= 0:
                os.close(report_fd)
            self.childinfo.reset()
            raise
        finally:
            self.used_at_fork = None
        if report_fd >= 0:
            os.close(report_fd)
        self.child_pid = pid
        self.child_type = kind
        self._touch(False)
        return pid

    def _touch(self, on: bool) -> None:
        """Lookups count as accesses again (on), or not while a child runs (Database.touch)."""
        for db in self.srv.dbs:
            db.touch = on

    def fork(self, work: Callable[[], bool], title: str | None) -> int:
        """redisFork's common part, for the child slot's children and the Lua debugger's (which
        run beside them): the child runs `work` and exits 0 when it returns True, 1 otherwise,
        with os._exit, never touching the loop; the parent gets its pid (OSError when the fork
        fails).  The child takes `title` as its process title's {title}
        (server/base/proctitle.py), as Redis's children do whatever set-proc-title says; with None it
        keeps the server's (the debugger's child, which Redis does not retitle)."""
        started = time.perf_counter_ns()
        # The loop's signal handling is the parent's: a SIGTERM or SIGINT sent to the child must
        # not wake the parent's loop through the wakeup fd they share (Python's C-level handler
        # writes to it the moment a signal arrives).  Redis's child only notes a shutdown request
        # it never acts on, so it finishes its file.  The signals stay blocked across the fork,
        # so one sent before the child has let go of the fd waits, and is then ignored.
        signal.pthread_sigmask(signal.SIG_BLOCK, _SHUTDOWN_SIGNALS)
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SHUTDOWN_SIGNALS)
            raise
        if pid == 0:
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                for sig in _SHUTDOWN_SIGNALS:
                    signal.signal(sig, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _SHUTDOWN_SIGNALS)
                LOG.role = "C"  # the child's log lines say so, as Redis's do
                oomscore.apply(self.srv, oomscore.CHILD)
                if title is not None:
                    proctitle.apply(self.srv, title)
                try:
                    code = 0 if work() else 1
                except Exception:  # a bug: said in the log rather than lost with the child
                    LOG.warning(f"The child's work failed:\n{traceback.format_exc()}")
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SHUTDOWN_SIGNALS)
        # INFO's total_forks / latest_fork_usec and the latency monitor's "fork" event, as redisFork
        fork_us = (time.perf_counter_ns() - started) // 1000
        self.total_forks += 1
        self.fork_usec = fork_us
        if self.srv.config.latency_monitor_threshold:
            latency.add_sample_if_needed(self.srv, "fork", fork_us // 1000)
        return pid

    def check_child(self) -> None:
        """checkChildrenDone: reap a finished child and hand its end to its kind's handler, as
        (pid, exit code, signal that killed it or 0)."""
        if self.child_pid == -1:
            return
        try:
            pid, status = os.waitpid(self.child_pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.child_pid, 1 << 8
        if pid == 0:
            return
        self._reaped(status)

    def _reaped(self, status: int) -> None:
        pid, kind = self.child_pid, self.child_type
        self.child_pid = -1
        self.child_type = ""
        self._touch(True)
        if os.WIFSIGNALED(status):
            exitcode, bysignal = -1, os.WTERMSIG(status)
        else:
            exitcode, bysignal = os.waitstatus_to_exitcode(status), 0
        self.child_done[kind](pid, exitcode, bysignal)
        if not bysignal and exitcode == 0:
            self.childinfo.receive()
        self.childinfo.reset()
        # checkChildrenDone's replicationStartPendingFork: replicas waiting for a snapshot get
        # their fork now, after the reset (before it, the new child's info pipe was the one the
        # reset closed: the child failed with a broken pipe and its replicas' sync with it)
        self.srv.repl.master.start_pending_fork()

    def kill_child_process(self) -> None:
        """Stop the running child with SIGUSR1 (Redis's "killed on purpose": no failure counted)
        and wait for it; the caller cleans up after it."""
        pid = self.child_pid
        if pid > 0:  # never kill(-1, ...): that signals every process this user may signal
            try:
                os.kill(pid, signal.SIGUSR1)
                os.waitpid(pid, 0)
            except OSError:
                pass
        self.child_pid = -1
        self.child_type = ""
        self._touch(True)
        self.childinfo.reset()

    # ---- BGSAVE -----------------------------------------------------------------------------------
    def bgsave(self) -> bool:
        """rdbSaveBackground: fork a child that writes the snapshot; False if the fork failed."""
        if self.has_child():
            return False
        srv = self.srv
        self.dirty_before_bgsave = srv.dirty
        self.last_bgsave_try = int(clock.seconds(self.srv))

        def work() -> bool:
            try:
                self._write_file(os.getpid(), self.srv.config.values["rdbcompression"] == "yes")
            except WriteFailed:
                return False
            LOG.notice("DB saved on disk")
            return True

        try:
            pid = self.fork_child("rdb", work, "redis-rdb-bgsave")
        except OSError as exc:
            self._bgsave_status("err")
            LOG.warning(f"Can't save in background: fork: {exc.strerror}")
            return False
        LOG.notice(f"Background saving started by pid {pid}")
        self.stats["rdb_saves"] += 1
        self.rdb_child_started()
        return True

    def rdb_child_started(self) -> None:
        """A snapshot's child (to disk here, to replicas' sockets in server/replication/master.py)
        was forked: its seconds count from the clock's second now."""
        self.rdb_save_time_start = int(clock.seconds(self.srv))
        self.stats["rdb_bgsave_in_progress"] = 1

    def rdb_child_ended(self) -> None:
        """A snapshot's child ended (done, failed or killed): rdb_last_bgsave_time_sec is its
        whole seconds of the clock (backgroundSaveDoneHandler, for both kinds)."""
        if self.rdb_save_time_start >= 0:  # once per child, however its end was reached
            self.stats["rdb_last_bgsave_time_sec"] = int(clock.seconds(self.srv)) - self.rdb_save_time_start
        self.rdb_save_time_start = -1
        self.stats["rdb_bgsave_in_progress"] = 0

    def bgsave_seconds(self) -> int:
        """INFO's rdb_current_bgsave_time_sec: the running snapshot's whole seconds of the clock
        since its fork's second (a second turning just after the fork reads 1), -1 with none."""
        if self.child_type != "rdb" or self.rdb_save_time_start < 0:
            return -1
        return int(clock.seconds(self.srv)) - self.rdb_save_time_start

    def _bgsave_done(self, pid: int, exitcode: int, bysignal: int) -> None:
        """backgroundSaveDoneHandlerDisk."""
        self.rdb_child_ended()
        if not bysignal and exitcode == 0:
            LOG.notice("Background saving terminated with success")
            self._saved(self.dirty_before_bgsave)
        elif not bysignal:
            LOG.warning("Background saving error")
            self._bgsave_status("err")
        else:
            LOG.warning(f"Background saving terminated by signal {bysignal}")
            remove_quietly(f"temp-{pid}.rdb")
            if bysignal != signal.SIGUSR1:
                self._bgsave_status("err")

    def kill_child(self) -> None:
        """killRDBChild: stop a running BGSAVE whose snapshot is of no use any more (FLUSHALL,
        shutdown); an AOF rewrite is left alone."""
        if self.child_type != "rdb":
            return
        pid = self.child_pid
        self.kill_child_process()
        # its end as when reaped (Redis reaps it later): the handler cleans up, and one that
        # replication installed fails the replicas waiting for this snapshot
        self.child_done["rdb"](pid, -1, signal.SIGUSR1)

    def cron(self) -> None:
        """serverCron's part, in its order: a scheduled AOF rewrite starts when no child runs;
        a running child is reaped when done; with none, save points and the AOF's growth may
        start one; a scheduled BGSAVE starts last (after its retry delay when the last failed)."""
        srv = self.srv
        aof = srv.aof
        if srv.ldb_children:  # forked Lua debugging sessions that ended
            from raxdb.server.scripting import ldb

            ldb.reap_children(srv)
        if not self.has_child() and aof.rewrite_scheduled and not aof.rewrite_limited():
            aof.rewrite_background()
        if self.has_child():
            now = time.monotonic()
            if now - self.childinfo_read >= 1:  # run_with_period(1000) receiveChildInfo()
                self.childinfo_read = now
                self.childinfo.receive()
            self.check_child()
        else:
            self._save_points()
            aof.auto_rewrite()
        if not self.has_child() and self.scheduled and self._retry_ok():
            if self.bgsave():
                self.scheduled = False

    def _retry_ok(self) -> bool:
        return (int(clock.seconds(self.srv)) - self.last_bgsave_try > BGSAVE_RETRY_DELAY
                or self.stats["rdb_last_bgsave_status"] == "ok")

    def _save_points(self) -> None:
        srv = self.srv
        if not srv.dirty:
            return
        now = int(clock.seconds(self.srv))
        retry_ok = self._retry_ok()
        for seconds, changes in save_points(srv.config.values["save"]):
            if srv.dirty >= changes and now - srv.lastsave > seconds and retry_ok:
                LOG.notice(f"{changes} changes in {seconds} seconds. Saving...")
                self.bgsave()
                return

    # ---- loading ---------------------------------------------------------------------------------
    def load_at_startup(self) -> Steps[None]:
        """loadDataFromDisk: read the dump file if there is one; LoadError when it is unusable.
        A generator: server/persistence/loading.py drives it, serving clients as it goes."""
        path = self.path()
        started = time.monotonic()
        repl = self.srv.repl
        master = repl.i_am_master()
        if master:  # the DELs of keys that expired meanwhile go to its stream (RDBFLAGS_FEED_REPL)
            repl.create_backlog()
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            repl.continue_saved_history({})
            return
        except OSError as exc:
            raise LoadError(f"Fatal error loading the DB: {exc.strerror}. Exiting.") from None
        yield from self.load_steps(data, merge=False, aux=self.loaded_aux, feed_repl=master)
        LOG.notice(f"DB loaded from disk: {time.monotonic() - started:.3f} seconds")
        repl.continue_saved_history(self.loaded_aux)

    @contextlib.contextmanager
    def loading(self, total: int = 0, dbs: list[Any] | None = None, state: int = SYNC) -> Iterator[None]:
        """startLoading / stopLoading, around a dump file's or the AOF's load (server/persistence/loading.py):
        INFO shows `loading:1` and the progress of `total` bytes, the last load's key counts start
        again from 0, clients are answered -LOADING, nothing in `dbs` (default: the server's)
        expires (Database.loading) and nothing is propagated (Redis's shouldPropagate is false
        while loading: the data comes from the files it would be written to), and the cycle
        collector waits.  Nested (the AOF's RDB base), it leaves the outer load in charge."""
        srv = self.srv
        if self.stats.get("loading"):
            yield
            return
        dbs = srv.dbs if dbs is None else dbs
        loading.started(srv, state, total)
        ops, srv.also_propagate = srv.also_propagate, None
        for db in dbs:
            db.loading = True
        srv.update_clock()
        # A load makes a record per key and no garbage cycles: the collector, which would walk
        # the growing dataset again and again as it counts the new objects, waits until the end.
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()
            for db in dbs:
                db.loading = False
            srv.also_propagate = ops
            loading.stopped(srv)

    def load_bytes(self, data: bytes, merge: bool) -> int:
        """`load_steps` at once, for a load inside a command (DEBUG RELOAD)."""
        return loading.run(self.load_steps(data, merge))

    def load_steps(self, data: bytes, merge: bool, aof_base: bool = False, aux: dict[bytes, bytes] | None = None,
                   feed_repl: bool = False, total: int | None = None, dbs: list[Any] | None = None,
                   state: int = SYNC, offset: int = 0, functions: list[bytes] | None = None,
                   arriving: rdb.Arriving | None = None) -> Steps[int]:
        """rdbLoadRio into the (empty, unless `merge`) databases `dbs` (default: the server's);
        the offset where the RDB ended.  Pauses (yields) every loading-process-events-interval-
        bytes, as rdbLoadProgressCallback serves clients; key-load-delay slows every key.
        `aof_base`: the RDB is the AOF's base or preamble (RDBFLAGS_AOF_PREAMBLE), whose keys load
        even past their deadline, as the commands after it may still use them.  `aux`, if
        given, receives the RDB's aux fields (a replica reads repl-stream-db from them).
        `feed_repl` (a master starting up): a key dropped as expired is a DEL in the
        replication stream, so that replicas continuing the saved history drop it too.
        `total`: the size INFO's progress is of (default: the data's); `offset`: where the data
        starts in it (an AOF's files count as one); `state`: loading.ASYNC for a replica's
        swapdb load, which leaves the served dataset readable; `functions`, if given, receives
        the libraries' code instead of loading them (a swapdb load swaps them in at its end);
        `arriving`: `data` is the start of an RDB still arriving (a replica's diskless load),
        and the steps yield how many more bytes they wait for (loading.drive's `fill`)."""
        rdb = rdb_format()[0]
        srv = self.srv
        values = srv.config.values
        delay = int(values["key-load-delay"])
        db_list = srv.dbs if dbs is None else dbs
        ndbs = len(db_list)
        loaded = expired = empty = with_expire = past = 0
        end = len(data)
        size = len(data) if total is None else total
        stats = self.stats
        with self.loading(size, dbs, state):
            now = srv.now_ms
            # the common key goes straight into its database, inside read_file (rdb.KeySink);
            # with key-load-delay every key comes here, to be slowed
            sink = None if delay else rdb.KeySink(db_list, now)
            try:
                for kind, item in rdb.read_file(data, self.limits(),
                                                int(values["loading-process-events-interval-bytes"]), arriving, sink):
                    if kind == "key":
                        if item.db >= ndbs:
                            raise LoadError("FATAL: Data file was created with a Redis server configured to "
                                            f"handle more than {ndbs} databases. Exiting\n")
                        if item.expire_ms is None and item.idle_s is None and item.freq is None:
                            # the common key, _add inlined (with key-load-delay; else the sink took it)
                            db = db_list[item.db]
                            key = item.key
                            if not db.add_new(key, item.value):
                                self._add(db, item, now, merge)  # a duplicate: merged or an error
                            track(db, key, item.value)
                            loaded += 1
                            if delay:
                                loading.debug_delay(delay)
                            continue
                        drop = False
                        if item.expire_ms is not None:  # also counted for redis-check-rdb's report
                            with_expire += 1
                            if item.expire_ms < now:
                                past += 1
                                # a replica keeps them: its master's DEL will come (rdbLoad's iAmMaster)
                                drop = not aof_base and srv.repl.i_am_master()
                        if drop:
                            expired += 1
                            if feed_repl:
                                srv.repl.feed(item.db, [deletion(srv, "lazyfree-lazy-expire"), item.key])
                        else:
                            self._add(db_list[item.db], item, now, merge)
                            loaded += 1
                        if delay:
                            loading.debug_delay(delay)
                    elif kind == "need":
                        yield item
                    elif kind == "tick":
                        stats["rdb_last_load_keys_loaded"] = loaded + (sink.added if sink is not None else 0)
                        stats["rdb_last_load_keys_expired"] = expired
                        loading.progress(srv, offset + item)
                        yield None
                    elif kind == "aux":
                        self._aux_loaded(*item)
                        if aux is not None:
                            aux[item[0]] = item[1]
                    elif kind == "function":
                        if functions is not None:
                            functions.append(item)
                        else:
                            self._function_loaded(item, merge)
                    elif kind == "empty":
                        if empty < 10:  # Redis names the first ten
                            LOG.warning(f"rdbLoadObject skipping empty key: {item[1].decode(errors='replace')}")
                        empty += 1
                    elif kind == "resize":
                        if item[0] >= len(db_list):
                            raise LoadError("FATAL: Data file was created with a Redis server configured to "
                                            f"handle more than {len(db_list)} databases. Exiting\n")
                        # the index sized for the keys to come (dictExpand), as far as the bytes
                        # can hold them: a key takes at least 3 (its type, key and value)
                        db_list[item[0]].reserve(min(item[1], max(size, len(data)) // 3))
                    elif kind == "end":
                        end = item
            except rdb.RDBError as exc:
                if sink is not None:
                    loaded += sink.added
                    with_expire += sink.expiring
                    sink = None
                if isinstance(exc, rdb.ChecksumError):
                    LOG.warning(f"Wrong RDB checksum expected: ({exc.computed:x}) but got ({exc.stored:x}). "
                                "Aborting now.")
                # the first report ends a load (rdbReportError exits), with redis-check-rdb's account
                err = LoadError(rdb.report_lines(exc)[0])
                if not isinstance(exc, rdb.ChecksumError):
                    keys_read = loaded + expired + empty + (exc.key is not None)
                    err.check_report = rdb.check_report(exc, keys_read, with_expire, past)
                raise err from None
            finally:
                if sink is not None:
                    loaded += sink.added
                stats["rdb_last_load_keys_loaded"] = loaded
                stats["rdb_last_load_keys_expired"] = expired
        if empty:
            LOG.warning(f"Done loading RDB, keys loaded: {loaded}, keys expired: {expired}, "
                        f"empty keys skipped: {empty}.")
        else:
            LOG.notice(f"Done loading RDB, keys loaded: {loaded}, keys expired: {expired}.")
        return end

    @staticmethod
    def _add(db: Any, item: rdb.KeyRecord, now: int, merge: bool) -> None:
        key = item.key
        if key in db:
            if not merge:
                raise LoadError(f"RDB has duplicated key '{key.decode(errors='replace')}' in DB {item.db}")
            db.delete(key)
        db.add(key, item.value)
        track(db, key, item.value)
        if item.expire_ms is not None:
            db.set_expire(key, item.expire_ms)
        if item.idle_s is not None:
            db.set_access_ms(key, now - item.idle_s * 1000)
        if item.freq is not None:
            db.set_lfu_counter(key, item.freq, now)

    def _aux_loaded(self, key: bytes, value: bytes) -> None:
        if key == b"redis-ver":
            LOG.notice(f"Loading RDB produced by version {value.decode(errors='replace')}")
        elif key == b"ctime":
            try:
                age = int(clock.seconds(self.srv)) - int(value)
            except ValueError:
                return
            LOG.notice(f"RDB age {max(0, age)} seconds")
        elif key == b"aof-base":
            if strtoll(value):
                LOG.notice("RDB is base AOF")
        elif key == b"used-mem":
            used = strtoll(value)
            LOG.notice(f"RDB memory usage when created {used / 1024 / 1024:.2f} Mb")
            self.stats["loading_rdb_used_mem"] = used  # INFO's progress when the size is unknown

    def _function_loaded(self, code: bytes, replace: bool) -> None:
        from raxdb.server.scripting.functions import registry

        try:
            registry(self.srv).load(code, replace=replace)  # MERGE replaces libraries as it replaces keys
        except CommandError as exc:
            raise LoadError(f"Failed loading library: {exc}") from None


def save_points(spec: str) -> list[tuple[int, int]]:
    """The `save` option as (seconds, changes) pairs."""
    words = spec.split()
    return [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]


def attach(srv: Server) -> Persistence:
    p = getattr(srv, "persistence", None)
    if p is None:
        p = srv.persistence = Persistence(srv)
    return p
