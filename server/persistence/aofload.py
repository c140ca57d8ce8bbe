"""Loading the append-only file: Redis 7.0's loadDataFromDisk (its AOF side), loadAppendOnlyFiles,
loadSingleAppendOnlyFile, aofUpgradePrepare and DEBUG LOADAOF.

Which data a start-up loads: the manifest is read first whatever `appendonly` says (a manifest
Redis refuses stops the server even with appendonly no, as aofLoadManifestFromDisk does); with
appendonly yes the dataset then comes from the AOF directory and dump.rdb is not read, otherwise
from dump.rdb (server/persistence/snapshot.py).  With no directory or manifest there is nothing to load, and
server/persistence/aof.py's `AOF.start` creates the base and the first increment from the (empty) dataset.

The files, in the manifest's order: the base (an RDB if it starts with "REDIS", loaded by
Persistence.load_bytes like any dump file, keys past their deadline included; otherwise
commands), then each increment.  History files are never loaded.  Every file listed must exist
(a missing one is fatal, found by the size check before anything loads); an empty file loads
nothing; all files empty is an empty dataset.  An `appendfilename` file in `dir` from before
7.0 is moved into the directory and listed as the base (aofUpgradePrepare) when the directory
has no manifest, or a manifest that only names it as a base it does not hold.

Replaying: a client with no connection (it consumes a client id per file, as createAOFClient
does) runs each command's handler directly, as Redis calls cmd->proc: replies go nowhere, no
stats but EXEC's queued commands (which EXEC runs through Client.call, as Redis's call()), no
propagation and no expiry (Persistence.loading).  While the client is in MULTI every command but
EXEC is queued, as queueMultiCommand.  Lines starting with '#' are annotations (aof-timestamp-
enabled's "#TS:") and are skipped.

The reader is loadSingleAppendOnlyFile's fgets/fread loop over the file's bytes, so damage is
judged at the same byte as Redis: a line is at most 1023 bytes; '*' must start a command and
'$' each argument; a count below 1 or a misplaced byte is a bad format (fatal); running out of
bytes inside a command, or a MULTI still open at the end, is a short read.  That loop costs
~20 us a command in Python, so hiredis parses the well-formed runs between what it refuses
(annotations, damage, forms only Redis's reader accepts), and the exact reader takes those:
the outcome is the exact reader's, the speed mostly hiredis's (see `_commands`).  A short read with
aof-load-truncated yes truncates the file after the last whole command (before the open MULTI)
and loads the rest, unless the file is not the last one, which is fatal; with no, it is fatal.
"Fatal" is Redis's exit(1): start-up raises SystemExit(1), DEBUG LOADAOF leaves the process.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import hiredis

from raxdb.protocol.hiredis_limits import READER_ERRORS, limit_elements, unconsumed_probe
from raxdb.server.base.errors import CommandError, c_str, wrong_arity
from raxdb.server.base.log import LOG
from raxdb.server.base.numparse import strtoll
from raxdb.server.events import propagate
from raxdb.server.net.client import AOFClient
from raxdb.server.persistence import aofmanifest
from raxdb.server.persistence.emptydata import empty_data
from raxdb.server.persistence.loading import AOF_EVENTS_EVERY, Steps, debug_delay, progress, run
from raxdb.server.persistence.snapshot import LoadError

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client
    from raxdb.server.table.registry import Command

# loadSingleAppendOnlyFile's outcomes (Redis's AOF_OK ... AOF_TRUNCATED)
OK, NOT_EXIST, EMPTY, OPEN_ERR, FAILED, TRUNCATED = "ok", "not-exist", "empty", "open-err", "failed", "truncated"

LINE_MAX = 1024 - 1  # fgets into AOF_ANNOTATION_LINE_MAX_LEN bytes: at most 1023 per line
_ULONG = 1 << 64


class Fatal(Exception):
    """Loading cannot go on: Redis exits with status 1 (its log lines are written already)."""


class _ShortRead(Exception):
    """The file ended inside a command (Redis's readerr at end of file, then uxeof)."""


class _BadFormat(Exception):
    """A byte that cannot start what the reader expects (Redis's fmterr)."""


# ---- start-up ---------------------------------------------------------------------------------
def load_at_startup(srv: Server) -> Steps[bool]:
    """loadDataFromDisk's AOF side, after aofLoadManifestFromDisk.  True when the AOF was the
    source (appendonly yes), False when the dump file is to be read instead.  Fatal on what
    Redis exits for.  A generator that pauses where Redis serves clients (server/persistence/loading.py)."""
    srv.aof.manifest = read_manifest(srv)
    if srv.config.values["appendonly"] != "yes":
        return False
    started = time.monotonic()
    ret = yield from load_files(srv, srv.aof.manifest)
    if ret in (FAILED, OPEN_ERR):
        raise Fatal
    if ret != NOT_EXIST:
        LOG.notice(f"DB loaded from append only file: {time.monotonic() - started:.3f} seconds")
    return True


def read_manifest(srv: Server) -> aofmanifest.Manifest:
    """aofLoadManifestFromDisk: no directory or no manifest is an empty manifest (nothing to load,
    or a pre-7.0 file to upgrade); a manifest Redis refuses is fatal, with its lines."""
    aof = srv.aof
    path = aof.manifest_path()
    if not os.path.isdir(aof.dirname()) or not os.path.exists(path):
        return aofmanifest.Manifest()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        LOG.warning(f"Fatal error: can't open the AOF manifest file {path} for reading: {exc.strerror}")
        raise Fatal from None
    try:
        return aofmanifest.parse(data)
    except aofmanifest.ManifestError as exc:
        LOG.warning("\n*** FATAL AOF MANIFEST FILE ERROR ***\n")
        if exc.line is not None:
            LOG.warning(f"Reading the manifest file, at line {exc.linenum}\n")
            LOG.warning(f">>> '{exc.line}'\n")
        LOG.warning(f"{exc}\n")
        raise Fatal from None


# ---- the manifest's files -----------------------------------------------------------------------
def _is_file(path: str) -> bool:
    """fileExist: a regular file."""
    try:
        return os.path.isfile(path)
    except OSError:
        return False


def upgrade_prepare(srv: Server, m: aofmanifest.Manifest) -> None:
    """aofUpgradePrepare: the directory, a manifest naming the old file as base 1, then the old
    file moved in.  Each step is safe to redo: a crash in between upgrades again next start."""
    aof = srv.aof
    name, dirname = aof.filename(), aof.dirname()
    try:
        os.makedirs(dirname, exist_ok=True)
    except OSError as exc:
        LOG.warning(f"Can't open or create append-only dir {dirname}: {exc.strerror}")
        raise Fatal from None
    m.base = aofmanifest.AofInfo(name, 1, aofmanifest.BASE)
    m.base_seq = 1
    aof.manifest = m
    try:
        aof.write_manifest()
    except OSError:
        raise Fatal from None
    try:
        os.rename(name, os.path.join(dirname, name))
    except OSError as exc:
        LOG.warning(f"Error trying to move the old AOF file {name} into dir {dirname}: {exc.strerror}")
        raise Fatal from None
    LOG.notice(f"Successfully migrated an old-style AOF file ({name}) into the AOF directory ({dirname}).")


def load_files(srv: Server, m: aofmanifest.Manifest) -> Steps[str]:
    """loadAppendOnlyFiles: the base, then the increments, in one loading state (INFO's
    progress is of all the files' bytes, as one)."""
    aof = srv.aof
    name, dirname = aof.filename(), aof.dirname()
    if _is_file(name) and (
            not os.path.isdir(dirname) or (m.base is None and not m.incrs)
            or (m.base is not None and not m.incrs and m.base.name == name
                and not _is_file(os.path.join(dirname, name)))):
        upgrade_prepare(srv, m)
    files = ([m.base] if m.base is not None else []) + m.incrs
    if not files:
        return NOT_EXIST
    total = 0
    for info in files:  # getBaseAndIncrAppendOnlyFilesSize: every listed file must be there
        try:
            total += os.stat(os.path.join(dirname, info.name)).st_size
        except OSError as exc:
            LOG.warning(f"Unable to obtain the AOF file {info.name} length. stat: {exc.strerror}")
            return FAILED if exc.errno == errno.ENOENT else OPEN_ERR
    if total == 0:
        return EMPTY
    ret = OK
    done = 0  # the bytes of the files loaded before this one
    with srv.persistence.loading(total):
        for n, info in enumerate(files, 1):
            last = n == len(files)
            started = time.monotonic()
            ret = yield from load_file(srv, info.name, done)
            done = srv.persistence.stats["loading_loaded_bytes"]
            if ret == OK or (ret == TRUNCATED and last):
                kind = "base" if info is m.base else "incr"
                LOG.notice(f"DB loaded from {kind} file {info.name}: {time.monotonic() - started:.3f} seconds")
            if ret == EMPTY and info is not m.base:
                ret = OK  # an empty increment is nothing to load, while other files had data
            if ret == TRUNCATED and not last:
                ret = FAILED
                LOG.warning("Fatal error: the truncated file is not the last file")
            if ret in (OPEN_ERR, FAILED):
                break
    return ret


# ---- one file -----------------------------------------------------------------------------------
def _fake_client(srv: Server) -> Client:
    """createAOFClient: no connection, authenticated, never blocking (a blocking command answers
    at once, as for a client in EXEC), obeyed (mustObeyClient)."""
    c = AOFClient(srv)
    c.authenticated = True
    c.in_exec = True
    c.plain = False
    return c


def load_file(srv: Server, name: str, offset: int = 0) -> Steps[str]:
    """loadSingleAppendOnlyFile: replay one file of the AOF directory, which starts at `offset`
    of what the load counts; it pauses every AOF_EVENTS_EVERY commands, and key-load-delay
    slows every command."""
    path = os.path.join(srv.aof.dirname(), name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        if exc.errno != errno.ENOENT or os.path.exists(path):
            LOG.warning(f"Fatal error: can't open the append log file {name} for reading: {exc.strerror}")
            return OPEN_ERR
        LOG.warning(f"The append log file {name} doesn't exist: {exc.strerror}")
        return NOT_EXIST
    if not data:
        return EMPTY
    c = _fake_client(srv)
    pos = 0
    if data[:5] == b"REDIS":
        old_style = name == srv.aof.filename()
        LOG.notice("Reading RDB preamble from AOF file..." if old_style else "Reading RDB base file on AOF loading...")
        try:
            pos = yield from srv.persistence.load_steps(data, merge=False, aof_base=True, offset=offset)
        except LoadError as exc:
            LOG.warning(str(exc))
            if old_style:
                LOG.warning(f"Error reading the RDB preamble of the AOF file {name}, AOF loading aborted")
            else:
                LOG.warning(f"Error reading the RDB base file {name}, AOF loading aborted")
            return FAILED
        if old_style:
            LOG.notice("Reading the remaining AOF tail...")
    truncate = srv.config.values["aof-load-truncated"] == "yes"
    valid_up_to = 0  # after the last whole command (kept only with aof-load-truncated yes, as Redis)
    valid_before_multi = 0
    delay = int(srv.config.values["key-load-delay"])
    loops = 0
    progress(srv, offset + pos)
    try:
        for argv, end in _commands(data, pos):
            loops += 1
            if loops == AOF_EVENTS_EVERY:
                loops = 0
                progress(srv, offset + end)
                yield None
            if delay:
                debug_delay(delay)
            cmd = _replay(c, argv, name)
            if cmd is None:
                return FAILED
            if cmd.fullname == "multi":
                valid_before_multi = valid_up_to
            if truncate:
                valid_up_to = end
        if c.multi is not None:
            # A MULTI with no EXEC at the end: the transaction is dropped as if the file stopped
            # before it.
            LOG.warning(f"Revert incomplete MULTI/EXEC transaction in AOF file {name}")
            valid_up_to = valid_before_multi
            raise _ShortRead
    except _BadFormat:
        LOG.warning(f"Bad file format reading the append only file {name}: make a backup of your AOF file, "
                    "then use ./redis-check-aof --fix <filename.manifest>")
        return FAILED
    except _ShortRead:
        if truncate:
            LOG.warning(f"!!! Warning: short read while loading the AOF file {name}!!!")
            LOG.warning(f"!!! Truncating the AOF {name} at offset {valid_up_to} !!!")
            try:
                os.truncate(path, valid_up_to)
            except OSError as exc:
                LOG.warning(f"Error truncating the AOF file {name}: {exc.strerror}")
            else:
                # the increment being appended to is opened O_APPEND: its writes follow the cut
                LOG.warning(f"AOF {name} loaded anyway because aof-load-truncated is enabled")
                return TRUNCATED
        LOG.warning(f"Unexpected end of file reading the append only file {name}. You can: 1) Make a backup "
                    "of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively "
                    "you can set the 'aof-load-truncated' configuration option to yes and restart the server.")
        return FAILED
    progress(srv, offset + len(data))
    return OK


def _replay(c: Client, argv: list[bytes], name: str) -> Command | None:
    """One command through the fake client: the command, or None for an unknown one (fatal)."""
    srv = c.server
    cmd = srv.table.lookup(argv)
    if cmd is None or cmd.proc is None:
        LOG.warning(f"Unknown command '{c_str(argv[0]).decode(errors='replace')}' reading the append only "
                    f"file {name}")
        return None
    if c.multi is not None and cmd.fullname != "exec":
        c.multi += (cmd, argv)  # queueMultiCommand: no arity or flag checks, as Redis (server/base/multiqueue.py)
        return cmd
    c.in_exec = True  # EXEC clears it when done; the AOF client must never block
    try:
        if not cmd.arity_ok(len(argv)):
            # Redis runs the handler anyway, reading past argv; answering the arity error is the
            # nearest defined behaviour.
            raise wrong_arity(cmd.fullname)
        cmd.proc(c, argv)
    except CommandError as e:
        c.error_reply(e.msg, None, e.counted)  # the reply goes nowhere; errorstats still count it
    except Exception as e:
        c.internal_error(cmd, e)
    return cmd


def _line(data: bytes, pos: int) -> tuple[bytes, int]:
    """fgets: up to and including the next '\\n', at most LINE_MAX bytes."""
    limit = min(len(data), pos + LINE_MAX)
    nl = data.find(b"\n", pos, limit)
    end = nl + 1 if nl >= 0 else limit
    return data[pos:end], end


def _exact_one(data: bytes, pos: int) -> tuple[list[bytes] | None, int]:
    """One command from `pos` as loadSingleAppendOnlyFile reads it, and the offset after it
    (None for an annotation line); _BadFormat or _ShortRead where Redis stops."""
    n = len(data)
    line, pos = _line(data, pos)
    first = line[:1]
    if first == b"#":
        return None, pos
    if first != b"*":
        raise _BadFormat
    if len(line) == 1:  # "*" and the end of the file
        raise _ShortRead
    argc = strtoll(line[1:])
    argc = (argc + (1 << 31)) % (1 << 32) - (1 << 31)  # atoi: the long cut to an int
    if argc < 1:
        raise _BadFormat
    argv = []
    for _ in range(argc):
        if pos >= n:
            raise _ShortRead
        line, pos = _line(data, pos)
        if line[:1] != b"$":
            raise _BadFormat
        size = strtoll(line[1:]) % _ULONG  # strtol into an unsigned long
        if size and pos + size > n:
            raise _ShortRead
        argv.append(data[pos:pos + size])
        pos += size + 2  # the CRLF, read and not checked
        if pos > n:
            raise _ShortRead
    return argv, pos


_CHUNK = 1 << 16  # bytes handed to hiredis at a time: what a switch to the exact reader wastes
_is_bytes = bytes.__instancecheck__


def _hiredis_run(data: bytes, pos: int) -> Iterator[tuple[list[bytes], int]]:
    """The commands hiredis parses from `pos`, each with the offset after it, up to the first
    thing that is not a well-formed command of bulk strings (or the end of the file).  The exact
    reader takes over there: what hiredis accepts, Redis's reader reads the same way (a count or
    length with a sign or leading zeros too), and what it refuses may still be a command for
    Redis ("\\n" line ends) or damage that only the exact reader judges as Redis does."""
    reader = hiredis.Reader()
    probe = unconsumed_probe(reader)
    if probe is None or not limit_elements(reader):
        return
    n = len(data)
    fed = pos
    while True:
        try:
            item = reader.gets()
        except READER_ERRORS:  # the exact reader judges it (a RESP3 map with an aggregate key: TypeError)
            return
        if item is False:
            if fed >= n:
                return
            size = min(_CHUNK, n - fed)
            reader.feed(data, fed, size)
            fed += size
            continue
        if item.__class__ is not list or not item or not all(map(_is_bytes, item)):
            return
        end = fed - probe()
        if not _plain(data, pos, end, item):
            return
        yield item, end
        pos = end


def _plain(data: bytes, start: int, end: int, argv: list[bytes]) -> bool:
    """Is data[start:end] argv as "*<n>" and "$<len>" headers in their shortest form?  hiredis
    also returns a RESP3 set or push as a list and a simple string (+OK) as bytes, where Redis's
    reader finds a bad format; walking the headers the canonical encoding would put there tells
    them apart (a sign or leading zeros, which Redis reads alike, also leave it to the exact
    reader, just more slowly)."""
    if data[start] != 42:  # '*'
        return False
    p = start + len(b"*%d\r\n" % len(argv))
    for a in argv:
        if p >= end or data[p] != 36:  # '$'
            return False
        n = len(a)
        p += len(b"$%d\r\n" % n) + n + 2
    return p == end


def _commands(data: bytes, pos: int) -> Iterator[tuple[list[bytes], int]]:
    """The file's commands from `pos`, each with the offset after it, as loadSingleAppendOnlyFile
    reads them; _BadFormat or _ShortRead where it stops.  hiredis parses the well-formed runs (the
    exact reader alone is ~6x slower); after something hiredis refuses, the exact reader reads
    one command, then twice as many each time hiredis again gets nowhere, so a file hiredis can
    never read costs O(n log n) in wasted feeds rather than O(n) per command."""
    n = len(data)
    exact_run = 1
    while pos < n:
        moved = False
        for argv, end in _hiredis_run(data, pos):
            yield argv, end
            pos = end
            moved = True
        exact_run = 1 if moved else exact_run * 2
        for _ in range(exact_run):
            if pos >= n:
                break
            args, pos = _exact_one(data, pos)
            if args is not None:
                yield args, pos


# ---- DEBUG LOADAOF ------------------------------------------------------------------------------
def debug_loadaof(c: Client) -> None:
    """DEBUG LOADAOF: what the AOF holds replaces the dataset (functions too).  The buffered
    writes go to the file first; then the manifest is read again from disk and the files loaded,
    whatever `appendonly` says (with no directory, that is an error).  Any outcome but a clean or
    empty load ends the process, as Redis's exit(1) does."""
    srv = c.server
    aof = srv.aof
    if aof.fd >= 0:
        aof.flush(force=True)  # written now even behind a running everysec fsync, as flushAppendOnlyFile(1)
    empty_data(srv, False, with_functions=True)
    try:
        m = aof.manifest = read_manifest(srv)
        aof.delete_history()
        ret = run(load_files(srv, m))
    except Fatal:
        ret = FAILED
    if ret not in (OK, EMPTY):
        os._exit(1)
    srv.dirty = 0
    propagate.prevent(c)  # the reload is not a change to replay
    LOG.warning("Append Only File loaded by DEBUG LOADAOF")
