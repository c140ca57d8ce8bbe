"""MIGRATE: move (or copy) keys to another Redis-compatible server, as Redis's migrateCommand does.

The keys go as RESTORE commands carrying DUMP payloads (storage/rdb.py), preceded by AUTH when
credentials were given and SELECT when the target connection is not already on the database.
Like Redis, the command runs synchronously: the server waits for the target's replies (each
read and write bounded by the timeout), which is what makes a MIGRATE atomic for the keys it
moves.  Connections are cached per host:port (at most 64; dropped after 10 s unused, or on any
error) and remember the database they last selected: the cache is net/migratecache.py's, whose
idle connections the server's cron closes.  A socket error before anything was
acknowledged is retried once on a new connection, unless it was a timeout.  Source keys are
deleted only for RESTOREs the target acknowledged; without COPY, each such key is deleted with
the usual signals (WATCH, tracking, a "del" event, dirty).
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NOT_INTEGER, SYNTAX, CommandError
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import NOTIFY_GENERIC, lookup_read, modified, notify
from raxdb.server.net import migratecache
from raxdb.server.table.args import maybe_int, option_word
from raxdb.server.table.registry import command
from raxdb.storage import rdb


def _bulk_command(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


@command("migrate")
def migrate(c, argv):
    copy = replace = False
    username = password = None
    first_key, num_keys = 3, 1
    j, n = 6, len(argv)
    while j < n:
        opt = option_word(argv[j])
        more = n - 1 - j
        if opt == b"copy":
            copy = True
        elif opt == b"replace":
            replace = True
        elif opt == b"auth":
            if not more:
                raise CommandError(SYNTAX)
            j += 1
            password = argv[j]
        elif opt == b"auth2":
            if more < 2:
                raise CommandError(SYNTAX)
            username, password = argv[j + 1], argv[j + 2]
            j += 2
        elif opt == b"keys":
            if argv[3]:
                raise CommandError("ERR When using MIGRATE KEYS option, the key argument must be set to the "
                                   "empty string")
            first_key, num_keys = j + 1, n - j - 1
            break
        else:
            raise CommandError(SYNTAX)
        j += 1
    timeout = maybe_int(argv[5])
    dbid = maybe_int(argv[4])
    if timeout is None or dbid is None:
        raise CommandError(NOT_INTEGER)
    if timeout <= 0:
        timeout = 1000
    keys = [k for k in argv[first_key:first_key + num_keys] if lookup_read(c, k) is not None]
    if not keys:
        return R.status("NOKEY")
    srv = c.server
    name = argv[1] + b":" + argv[2]
    secs = timeout / 1000
    may_retry = True
    while True:
        cs = migratecache.get_socket(srv, argv[1], argv[2], secs)
        out = []
        if password is not None:
            out.append(_bulk_command(b"AUTH", username, password) if username is not None
                       else _bulk_command(b"AUTH", password))
        select = cs.last_dbid != dbid
        if select:
            out.append(_bulk_command(b"SELECT", b"%d" % dbid))
        db = c.db
        now = srv.update_clock()
        moving = []
        compress = srv.config.values["rdbcompression"] == "yes"
        for key in keys:
            value = db.stored(key)
            if value is None:
                continue
            ttl = 0
            when = db.expires.get(key)
            if when is not None:
                ttl = when - now
                if ttl < 0:
                    continue
                ttl = max(ttl, 1)
            moving.append(key)
            # RESTORE-ASKING in cluster mode: the target may still be importing the slot
            verb = b"RESTORE-ASKING" if c.server.cluster is not None else b"RESTORE"
            args = [verb, key, b"%d" % ttl, rdb.dump(value, compress, rdb.format_of(c.server.config.compat_version))]
            if replace:
                args.append(b"REPLACE")
            out.append(_bulk_command(*args))
        write_error = False
        replies: list[bytes] = []
        socket_error = False
        try:
            try:
                cs.sock.settimeout(secs)
                cs.sock.sendall(b"".join(out))
            except OSError:
                write_error = True
                raise
            auth_reply = cs.read_line(secs) if password is not None else b""
            select_reply = cs.read_line(secs) if select else b""
            for _ in moving:
                replies.append(cs.read_line(secs))
        except OSError as exc:
            migratecache.close(srv, name)
            if not replies and may_retry and not isinstance(exc, TimeoutError):
                may_retry = False  # a cached connection the target closed: once more on a new one
                continue
            if not replies:
                verb = "writing" if write_error else "reading"
                raise CommandError(f"IOERR error or timeout {verb} to target instance") from None
            socket_error = True
        break
    target_error: bytes | None = None
    moved = [b"DEL"]  # replayed as DEL of the keys the target took (even if a later one failed)
    for key, reply in zip(moving, replies, strict=False):
        if auth_reply[:1] == b"-" or select_reply[:1] == b"-" or reply[:1] == b"-":
            if target_error is None:
                cs.last_dbid = -1
                target_error = (auth_reply if auth_reply[:1] == b"-" else
                                select_reply if select_reply[:1] == b"-" else reply)
        elif not copy:
            db.delete(key)
            modified(c, key)
            notify(c, NOTIFY_GENERIC, "del", key)
            moved.append(key)
    if len(moved) > 1 and srv.also_propagate is not None:
        propagate.rewrite(c, moved)
    if target_error is not None:
        raise CommandError(b"ERR Target instance replied with error: " + target_error[1:])
    if socket_error:
        raise CommandError("IOERR error or timeout reading to target instance")
    cs.last_dbid = dbid
    return R.OK
