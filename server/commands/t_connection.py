"""Connection commands: PING, ECHO, SELECT, QUIT, HELLO, AUTH, RESET (CLIENT lives in t_server).

HELLO switches the connection's protocol and replies with the server map; AUTH and HELLO AUTH log
in as an ACL user (server/security/acl.py; requirepass is the `default` user's password), a failure going to
the ACL log.  After a successful AUTH the connection may move from the exact parser back to the
hiredis fast path.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import DB_INDEX, WRONGPASS, CommandError, c_str
from raxdb.server.conn import lifecycle
from raxdb.server.conn.clientinfo import validate_client_name
from raxdb.server.events import tracking
from raxdb.server.security import (
    acl as _acl,  # by module: server.acl imports the command table, which imports this
)
from raxdb.server.table.args import maybe_int, option_word
from raxdb.server.table.registry import command


@command("ping")
def ping(c, argv):
    if len(argv) > 2:
        raise CommandError("ERR wrong number of arguments for 'ping' command")
    if c.resp == 2 and (c.channels or c.patterns or c.shard_channels):
        return R.array([R.bulk(b"pong"), R.bulk(argv[1] if len(argv) == 2 else b"")])
    if len(argv) == 2:
        return R.bulk(argv[1])
    return R.PONG


@command("echo")
def echo(c, argv):
    return R.bulk(argv[1])


@command("select")
def select(c, argv):
    n = maybe_int(argv[1])
    if n is None:
        raise CommandError("ERR value is not an integer or out of range")
    if c.server.cluster is not None and n != 0:
        raise CommandError("ERR SELECT is not allowed in cluster mode")
    if not 0 <= n < len(c.server.dbs):
        raise CommandError(DB_INDEX)
    c.select(n)
    return R.OK


@command("quit")
def quit_(c, argv):
    c.close_after_replies()
    return R.OK


@command("auth")
def auth(c, argv):
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    acl = c.server.acl
    if len(argv) == 2:
        if acl.default.flags & _acl.NOPASS:
            raise CommandError("ERR AUTH <password> called without any password configured for the default "
                               "user. Are you sure your configuration is correct?")
        user, password = b"default", argv[1]
    else:
        user, password = argv[1], argv[2]
    if not acl.authenticate(c, user, password, argv):
        raise CommandError(WRONGPASS)
    return R.OK


@command("hello")
def hello(c, argv):
    ver = None
    i = 1
    if len(argv) >= 2:
        v = maybe_int(argv[1])
        if v is None:
            raise CommandError("ERR Protocol version is not an integer or out of range")
        ver = v
        i = 2
        if ver < 2 or ver > 3:
            raise CommandError("NOPROTO unsupported protocol version")
    setname = None
    while i < len(argv):
        opt = option_word(argv[i])
        more = len(argv) - i - 1
        if opt == b"auth" and more >= 2:
            if not c.server.acl.authenticate(c, argv[i + 1], argv[i + 2], argv):
                raise CommandError(WRONGPASS)
            i += 3
        elif opt == b"setname" and more >= 1:
            setname = argv[i + 1]
            i += 2
        else:
            raise CommandError(b"ERR Syntax error in HELLO option '%s'" % c_str(argv[i]))
    if not c.authenticated:
        raise CommandError("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                           "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
                           "select the RESP protocol version at the same time")
    if setname is not None:
        validate_client_name(setname)
        c.name = setname
    if ver is not None:
        c.set_protocol(ver)
    enc = c.enc
    srv = c.server
    return enc.map([
        R.bulk(b"server"), R.bulk(b"redis"),
        R.bulk(b"version"), R.bulk(srv.redis_version.encode()),
        R.bulk(b"proto"), R.integer(c.resp),
        R.bulk(b"id"), R.integer(c.id),
        R.bulk(b"mode"), R.bulk(b"cluster" if srv.cluster is not None else b"standalone"),
        R.bulk(b"role"), R.bulk(b"replica" if srv.repl.masterhost is not None else b"master"),
        R.bulk(b"modules"), R.EMPTY_ARRAY,
    ])


@command("reset")
def reset(c, argv):
    for hook in lifecycle.RESET_HOOKS:
        hook(c)
    c.select(0)
    c.set_protocol(2)
    c.name = b""
    c.reply_mode = "on"
    c.no_touch = False
    if c.server.config.compat_version >= (7, 2):  # 7.0.15 keeps CLIENT NO-EVICT across a RESET
        c.no_evict = False
    tracking.disable(c)
    c.server.acl.set_default_auth(c)
    if c.is_monitor:
        c.is_monitor = False
        if c in c.server.monitors:
            c.server.monitors.remove(c)
        for other in c.server.clients.values():
            other.update_plain()
    c.update_plain()
    return R.status(b"RESET")
