"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis 7.0 semantics).

Queueing lives in the dispatcher (client.execute, and for a client whose other checks pass the
fast loop, net/client.py's `_run_fast`, which runs EXEC too): while `c.multi` is a list, commands
other than EXEC/DISCARD/MULTI/WATCH/QUIT/RESET are appended and answered +QUEUED, and a command rejected at
queue time (unknown, wrong arity, not allowed) sets `c.multi_error`, which turns EXEC into
EXECABORT.  EXEC runs the queue through `Client.call` — stats, errorstats and keyspace effects exactly
as if each command had been sent alone — with `c.in_exec` set so blocking commands answer at once
instead of blocking.  Nothing else runs in between: the event loop is not re-entered.

WATCH is optimistic locking (events/watch.py): any write to a watched key, its expiry, FLUSH, SWAPDB
sets `c.dirty_cas`, and EXEC then replies with a null array without running anything.  Ending a
transaction (`discard_transaction`: after EXEC, DISCARD, EXECABORT, RESET) and the EXECABORT of an
EXEC the dispatcher rejects (`exec_abort`) are events/watch.py's too, where the dispatcher
(net/client.py) reaches them.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError
from raxdb.server.conn import lifecycle
from raxdb.server.events import watch
from raxdb.server.net.client import call_command, enter_exec, enter_multi, leave_exec
from raxdb.server.security import acl
from raxdb.server.table.registry import BLOCKED, command

EXECABORT = "EXECABORT Transaction discarded because of previous errors."
_OK = R.OK  # a module global: compiled, R.OK is an attribute lookup on the reply module each call


def multi(c, argv):
    if c.multi is not None:
        raise CommandError("ERR MULTI calls can not be nested")
    enter_multi(c)
    return _OK


command("multi")(multi)  # not a decorator: compiled, a cpdef function (t_multi.pxd)


def discard(c, argv):
    if c.multi is None:
        raise CommandError("ERR DISCARD without MULTI")
    watch.discard_transaction(c)
    return R.OK


command("discard")(discard)  # not a decorator: compiled, a cpdef function (t_multi.pxd)


def exec_(c, argv):
    queue = c.multi
    if queue is None:
        raise CommandError("ERR EXEC without MULTI")
    if c.multi_error:
        watch.discard_transaction(c)
        raise CommandError(EXECABORT)
    if c.dirty_cas or (c.watched and watch.expired_since_watch(c)):
        watch.discard_transaction(c)
        return c.enc.null_array
    # Out of MULTI before running, so the queued commands run rather than queue.  Redis's client
    # stays in MULTI until EXEC ends, its argv EXEC's: a queued CLIENT INFO, or an ACL LOG entry
    # made by a queued command, shows flags=x, multi=<queued>, cmd=exec (c.exec_argv, c.exec_queue).
    if c.watched:  # (a call into interpreted code otherwise, per transaction)
        watch.unwatch_all(c)
    was_queueing = c.queueing  # what leave_exec restores
    epoch = c.plain_epoch
    enter_exec(c, argv, queue)
    srv = c.server
    replies = []
    try:
        for i in range(0, len(queue), 2):  # (server/base/multiqueue.py: a command, then its argv)
            cmd = queue[i]
            args = queue[i + 1]
            if not c.user.free:  # the rules may have changed since it was queued
                denied = srv.acl.check(c, cmd, args, acl.CTX_MULTI)
                if denied:
                    replies.append(c.error_reply(acl.exec_denied_text(denied)))
                    continue
            r = call_command(c, cmd, args, None, True)  # Client.call: each queued command is slow-logged, EXEC itself is not
            if srv.monitors and "skip_monitor" not in cmd.flags:  # after the call, as call() does
                lifecycle.feed_monitors(c, args, cmd)
            if r is BLOCKED:  # blocking commands must not block here; never leave a hole
                r = c.enc.null_array
            replies.append(r)  # (a reply in pieces, a big value's, stays so: R.value_array)
    finally:
        leave_exec(c, was_queueing, epoch)
    return R.value_array(replies)


command("exec")(exec_)  # not a decorator: compiled, exec_ is a cpdef function (t_multi.pxd)


def watch_(c, argv):
    if c.multi is not None:
        raise CommandError("ERR WATCH inside MULTI is not allowed")
    if c.dirty_cas:  # already doomed: watching more changes nothing
        return R.OK
    for key in argv[1:]:
        watch.watch_key(c, key)
    return R.OK


command("watch")(watch_)  # not a decorator: compiled, a cpdef function (t_multi.pxd)


def unwatch(c, argv):
    watch.unwatch_all(c)
    c.dirty_cas = False
    return R.OK


command("unwatch")(unwatch)  # not a decorator: compiled, a cpdef function (t_multi.pxd)

