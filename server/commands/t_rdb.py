"""The commands of Redis's rdb.c and cluster.c that move data in RDB form: SAVE, BGSAVE, DUMP and
RESTORE, and aof.c's BGREWRITEAOF, which shares BGSAVE's one child.

SAVE and BGSAVE hand over to server/persistence/snapshot.py, BGREWRITEAOF to server/persistence/aof.py.  DUMP and RESTORE use storage/rdb.py's
payloads, which are byte-compatible with redis-server's: a payload DUMPed by one restores in the
other.  RESTORE checks in restoreCommand's order (options, then BUSYKEY, then the TTL, then the
payload's version and checksum, then its decoding), so the error a client sees for a bad request
is Redis's.  A TTL already in the past creates nothing (and deletes the old key under REPLACE),
as there.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NOT_INTEGER, SYNTAX, CommandError
from raxdb.server.base.log import LOG
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import NOTIFY_GENERIC, lookup_read, lookup_write, modified, notify
from raxdb.server.persistence import snapshot as persistence
from raxdb.server.table.args import maybe_int, option_word
from raxdb.server.table.registry import command
from raxdb.storage import rdb
from raxdb.storage.hashfe import track

_IN_PROGRESS = "ERR Background save already in progress"


@command("save")
def save(c, argv):
    p = persistence.attach(c.server)
    if p.in_progress():
        raise CommandError(_IN_PROGRESS)
    p.stats["rdb_saves"] += 1  # every SAVE and BGSAVE, failed or not; not the saves FLUSHALL or shutdown make
    if not p.save():
        raise CommandError("ERR")
    return R.OK


@command("bgsave")
def bgsave(c, argv):
    schedule = False
    if len(argv) > 1:
        if len(argv) > 2 or option_word(argv[1]) != b"schedule":
            raise CommandError(SYNTAX)
        schedule = True
    p = persistence.attach(c.server)
    if p.in_progress():
        raise CommandError(_IN_PROGRESS)
    if p.has_child() or c.in_exec:
        # Redis forks no child from inside EXEC, nor while an AOF rewrite runs: with SCHEDULE (or
        # in EXEC) the save starts from the cron once no child runs.
        if not (schedule or c.in_exec):
            raise CommandError("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE "
                               "SCHEDULE in order to schedule a BGSAVE whenever possible.")
        p.scheduled = True
        return R.status("Background saving scheduled")
    if not p.bgsave():
        raise CommandError("ERR")
    return R.status("Background saving started")


@command("bgrewriteaof")
def bgrewriteaof(c, argv):
    srv = c.server
    p = srv.persistence
    aof = srv.aof
    if p.child_type == "aof":
        raise CommandError("ERR Background append only file rewriting already in progress")
    if p.has_child() or c.in_exec:
        aof.rewrite_scheduled = True
        aof.consecutive_failures = 0  # asked for by hand: not held back by aofRewriteLimited
        return R.status("Background append only file rewriting scheduled")
    if not aof.rewrite_background():
        raise CommandError("ERR Can't execute an AOF background rewriting. Please check the server logs for more "
                           "information.")
    return R.status("Background append only file rewriting started")


@command("dump")
def dump(c, argv):
    value = lookup_read(c, argv[1])
    if value is None:
        return c.enc.null
    return R.value(rdb.dump(value, c.server.config.values["rdbcompression"] == "yes",
                           rdb.format_of(c.server.config.compat_version)))


@command("restore")
def restore(c, argv):
    key = argv[1]
    replace = absttl = False
    idle = freq = -1
    j, n = 4, len(argv)
    while j < n:
        opt = option_word(argv[j])
        more = n - j - 1
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more >= 1 and freq == -1:
            idle = maybe_int(argv[j + 1])
            if idle is None:
                raise CommandError(NOT_INTEGER)
            if idle < 0:
                raise CommandError("ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif opt == b"freq" and more >= 1 and idle == -1:
            freq = maybe_int(argv[j + 1])
            if freq is None:
                raise CommandError(NOT_INTEGER)
            if freq < 0 or freq > 255:
                raise CommandError("ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    if not replace and lookup_write(c, key) is not None:
        raise CommandError("BUSYKEY Target key name already exists.")
    ttl = maybe_int(argv[2])
    if ttl is None:
        raise CommandError(NOT_INTEGER)
    if ttl < 0:
        raise CommandError("ERR Invalid TTL value, must be >= 0")
    srv = c.server
    p = persistence.attach(srv)
    try:
        value = rdb.restore(argv[3], p.limits(), not srv.skip_checksum_validation)
    except rdb.RDBError as exc:
        if exc.reports:  # rdbReportError in a RESTORE: logged at verbose, and the client told
            for line in rdb.report_lines(exc):
                LOG.verbose(line)
        raise CommandError("ERR Bad data format") from None
    if value is None:
        raise CommandError("ERR DUMP payload version or checksum are wrong")
    if value is rdb.EMPTY:
        raise CommandError("ERR Bad data format")
    db = c.db
    deleted = replace and db.delete(key)
    now = srv.now_ms
    if ttl and not absttl:
        ttl += now
    if ttl and db.already_expired(ttl, now):
        if deleted:
            modified(c, key)
            notify(c, NOTIFY_GENERIC, "del", key)
            if srv.also_propagate is not None:  # DEL always (not UNLINK), as Redis replays it
                propagate.rewrite(c, [b"DEL", key])
        return R.OK
    db.add(key, value)
    track(db, key, value)
    if ttl:
        db.set_expire(key, ttl)
        if not absttl and srv.also_propagate is not None:  # the deadline made absolute
            propagate.rewrite(c, [*argv[:2], b"%d" % ttl, *argv[3:], b"ABSTTL"])
    if db.lfu:
        if freq >= 0:
            db.set_lfu_counter(key, freq, now)
    elif idle >= 0:
        db.set_access_ms(key, now - idle * 1000)
    modified(c, key)
    notify(c, NOTIFY_GENERIC, "restore", key)
    return R.OK


# MIGRATE's target form in a cluster (the ASKING flag lets it reach a slot being imported); without
# cluster mode it is RESTORE under another name, as in Redis.
command("restore-asking")(restore)
