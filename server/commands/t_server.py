"""Server commands (Redis's server.c / db.c admin side): FLUSHDB, FLUSHALL, DBSIZE.

(More server and introspection commands are added here: INFO, CONFIG, CLIENT, COMMAND, ...)
"""

from __future__ import annotations

from protocol import reply as R
from server.commands.table import command
from server.errors import CommandError


def validate_client_name(name: bytes) -> None:
    """CLIENT SETNAME / HELLO SETNAME: no spaces, newlines or other non-printable bytes."""
    for b in name:
        if b < 33 or b > 126:
            raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")


def _flush_mode(argv: list[bytes], start: int) -> None:
    if len(argv) > start + 1:
        raise CommandError("ERR syntax error")
    if len(argv) == start + 1 and argv[start].lower() not in (b"async", b"sync"):
        raise CommandError("ERR syntax error")


@command("flushdb")
def flushdb(c, argv):
    _flush_mode(argv, 1)
    c.server.dirty += c.db.flush()
    return R.OK


@command("flushall")
def flushall(c, argv):
    _flush_mode(argv, 1)
    for db in c.server.dbs:
        c.server.dirty += db.flush()
    return R.OK


@command("dbsize")
def dbsize(c, argv):
    return R.integer(len(c.db))
