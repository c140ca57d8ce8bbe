"""Per-client events that several command families care about: disconnect clean-up, MONITOR
feeds, the slow log.  Kept out of client.py so the hot path module stays small, and so families
(pub/sub, blocking, WATCH) register their clean-up here instead of client.py knowing them all.

MONITOR lines and slow log entries show arguments the way Redis does, passwords redacted (AUTH,
HELLO ... AUTH, MIGRATE ... AUTH/AUTH2); admin commands never reach monitors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.protocol.request import quote_arg
from raxdb.server.base import clock
from raxdb.server.conn import unixaddr

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client
    from raxdb.server.table.registry import Command

# Families append callbacks here: each is called with the client when its connection ends.
DISCONNECT_HOOKS: list[Callable[[Client], None]] = []
# ... and here callbacks for RESET (leave MULTI, unsubscribe, unwatch, ...).
RESET_HOOKS: list[Callable[[Client], None]] = []
# Installed by the blocking family: unblock(client, as_error) -> bool, for CLIENT UNBLOCK.
UNBLOCK_HOOK: list[Callable[[Client, bool], bool] | None] = [None]


def on_disconnect(client: Client) -> None:
    srv = client.server
    if client.is_monitor and client in srv.monitors:
        srv.monitors.remove(client)
        srv.update_plain_all()
    for hook in DISCONNECT_HOOKS:
        hook(client)


_SENSITIVE_CONFIGS = frozenset((b"masterauth", b"masteruser", b"requirepass"))  # SENSITIVE_CONFIG


def redacted(argv: list[bytes]) -> list[bytes]:
    """The arguments with passwords replaced by "(redacted)", as Redis's redactClientCommandArgument."""
    if not argv:
        return argv
    name = argv[0].lower()
    hide: list[int] = []
    if name == b"auth":
        hide = list(range(1, len(argv)))
    elif name == b"hello":
        for i in range(2, len(argv)):
            if argv[i].lower() == b"auth" and i + 2 < len(argv):
                hide = [i + 1, i + 2]
                break
    elif name == b"acl" and len(argv) > 2 and argv[1].lower() == b"setuser":
        hide = list(range(2, len(argv)))
    elif name == b"config" and len(argv) >= 4 and not len(argv) % 2 and argv[1].lower() == b"set":
        # configSetCommand redacts the value of every SENSITIVE_CONFIG it is given
        hide = [i + 1 for i in range(2, len(argv), 2) if argv[i].lower() in _SENSITIVE_CONFIGS]
    elif name == b"migrate":
        i = 6
        while i < len(argv):
            a = argv[i].lower()
            if a == b"auth" and i + 1 < len(argv):
                hide.append(i + 1)
                i += 1
            elif a == b"auth2" and i + 2 < len(argv):
                hide += [i + 1, i + 2]
                i += 2
            elif a == b"keys":
                break
            i += 1
    if not hide:
        return argv
    out = list(argv)
    for i in hide:
        out[i] = b"(redacted)"
    return out


def start_monitor(client: Client) -> None:
    """MONITOR: the client receives every command executed from now on (its own included)."""
    srv = client.server
    client.is_monitor = True
    srv.monitors.append(client)
    srv.update_plain_all()


def feed_monitors(client: Client, argv: list[bytes], cmd: Command | None, origin: str | None = None) -> None:
    """MONITOR line: +<secs.usecs> [<db> <addr>] "arg" ... after the command ran (so the db is the
    one it left selected); admin commands are not shown.  `origin` replaces the address for
    commands run by scripts ("lua").  EVAL*, EVALSHA* and FCALL* feed themselves before their
    script runs (cmd None), so their line comes before those of the commands the script calls."""
    srv = client.server
    if cmd is not None and "admin" in cmd.flags:
        return
    now = clock.seconds(srv)
    if origin is None:
        origin = unixaddr.monitor_origin(srv) if client.unix_socket else client.addr
    line = "+%.6f [%d %s] %s\r\n" % (now, client.dbid, origin, " ".join(quote_arg(a) for a in redacted(argv)))
    data = line.encode()
    for m in srv.monitors:
        m.write(data)


def slowlog_add(client: Client, argv: list[bytes], micros: int) -> None:
    """Record a command that took at least slowlog-log-slower-than microseconds (commands flagged
    skip_slowlog, such as EXEC whose queued commands are logged themselves, are not)."""
    srv = client.server
    maxlen = srv.config.slowlog_max_len
    if maxlen <= 0:
        return
    cmd = srv.table.lookup(argv) if argv else None
    if cmd is not None and "skip_slowlog" in cmd.flags:
        return
    args = []
    shown = redacted(argv)[:32]
    for a in shown:
        args.append(a if len(a) <= 128 else a[:128] + b"... (%d more bytes)" % (len(a) - 128))
    if len(argv) > 32:
        args[-1] = b"... (%d more arguments)" % (len(argv) - 31)
    addr = "?:0" if client.is_script else client.addr  # a script's commands: Redis's fake client
    entry = (srv.slowlog_next_id, int(clock.seconds(srv)), micros, args, addr.encode(), client.name)
    srv.slowlog_next_id += 1
    srv.slowlog.appendleft(entry)
    while len(srv.slowlog) > maxlen:
        srv.slowlog.pop()


def encode_slowlog_entry(entry: tuple, enc: R.Encoder) -> bytes:
    sid, ts, micros, args, addr, name = entry
    return R.array([R.integer(sid), R.integer(ts), R.integer(micros), R.bulk_array(args), R.bulk(addr), R.bulk(name)])
