"""DEBUG FAULT, raxdb's test control for faults on demand (a raxdb extension, present only with
`raxdb-test-controls yes`; docs/testing-your-code.md#faults):

    DEBUG FAULT ERROR <LOADING|BUSY|MASTERDOWN|TRYAGAIN> [COUNT n] [FOR seconds] [COMMANDS pattern ...]
    DEBUG FAULT DELAY <ms> [FOR seconds]
    DEBUG FAULT REFUSE [FOR seconds]
    DEBUG FAULT DROP [ID id] [ADDR ip:port] [LADDR ip:port] [TYPE type] [USER name] [NAME name] [SKIPME yes|no]
    DEBUG FAULT CLEAR [ERROR|DELAY|REFUSE]
    DEBUG FAULT STATUS

Rule: parsing and replies only; the faults are server/net/faults.py's, DROP's filter is CLIENT
KILL's (t_client.kill_filter, with NAME added).  Registered through testcontrols.control, so the
switch and DEBUG HELP are the registry's.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.base.numparse import strtod
from raxdb.server.commands import testcontrols
from raxdb.server.commands.t_client import kill_filter
from raxdb.server.net import faults
from raxdb.server.table.args import maybe_int, option_word

_HELP = [
    "FAULT ERROR <LOADING|BUSY|MASTERDOWN|TRYAGAIN> [COUNT <n>] [FOR <seconds>] [COMMANDS <pattern> ...]",
    "    (raxdb test control) Answer the next <n> commands, or all for <seconds>, or all until",
    "    FAULT CLEAR, with that error, as Redis words it. Commands Redis serves in that state",
    "    (AUTH, HELLO, INFO... for LOADING; keyless ones for TRYAGAIN) and DEBUG pass. COMMANDS",
    "    limits it to commands whose name matches a pattern (subcommands as 'client|list').",
    "FAULT DELAY <ms> [FOR <seconds>]",
    "    (raxdb test control) Hold every connection's replies <ms> milliseconds before writing them.",
    "FAULT REFUSE [FOR <seconds>]",
    "    (raxdb test control) Close the TCP listeners: new connections are refused; open ones go on.",
    "FAULT DROP [<filter> <value> ...]",
    "    (raxdb test control) Drop connections at once, chosen as CLIENT KILL's filters choose",
    "    (ID, ADDR, LADDR, TYPE, USER, SKIPME; and NAME); all but this one when none is given.",
    "FAULT CLEAR [ERROR|DELAY|REFUSE]",
    "    (raxdb test control) End every fault armed by DEBUG FAULT, or the one named; the number ended.",
    "FAULT STATUS",
    "    (raxdb test control) The faults armed now.",
]


def _seconds(arg: bytes) -> float:
    secs = strtod(arg)
    if secs is None or not 0 < secs < 1e9:
        raise CommandError("ERR FOR must be a positive number of seconds")
    return secs


def _count(arg: bytes) -> int:
    n = maybe_int(arg)
    if n is None or n <= 0:
        raise CommandError("ERR COUNT must be a positive integer")
    return n


def _error(c, argv: list[bytes]) -> bytes:
    if len(argv) < 4:
        raise CommandError(SYNTAX)
    kind = argv[3].decode(errors="replace").upper()
    if kind not in faults.REPLIES:
        raise CommandError(f"ERR unknown fault error '{kind}': LOADING, BUSY, MASTERDOWN or TRYAGAIN")
    count = seconds = patterns = None
    i = 4
    while i < len(argv):
        opt = option_word(argv[i])
        if opt == b"commands" and i + 1 < len(argv):
            patterns = argv[i + 1:]
            break
        if i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        if opt == b"count":
            count = _count(argv[i + 1])
        elif opt == b"for":
            seconds = _seconds(argv[i + 1])
        else:
            raise CommandError(SYNTAX)
        i += 2
    faults.arm_error(c.server, kind, count, seconds, patterns)
    return R.OK


def _for_only(argv: list[bytes], i: int) -> float | None:
    """The `[FOR seconds]` tail from argv[i] on."""
    if len(argv) == i:
        return None
    if len(argv) == i + 2 and option_word(argv[i]) == b"for":
        return _seconds(argv[i + 1])
    raise CommandError(SYNTAX)


def _delay(c, argv: list[bytes]) -> bytes:
    if len(argv) < 4:
        raise CommandError(SYNTAX)
    ms = maybe_int(argv[3])
    if ms is None or not 0 < ms <= 3_600_000:
        raise CommandError("ERR the delay must be a number of milliseconds from 1 to 3600000")
    faults.arm_delay(c.server, ms, _for_only(argv, 4))
    return R.OK


def _refuse(c, argv: list[bytes]) -> bytes:
    faults.arm_refusal(c.server, c, _for_only(argv, 3))
    return R.OK


_CLEARS = {b"all": faults.clear, b"error": faults.clear_error, b"delay": faults.clear_delay,
           b"refuse": faults.clear_refusal}


@testcontrols.control("fault", _HELP)
def debug_fault(c, argv: list[bytes]) -> bytes:
    if len(argv) < 3:
        raise CommandError(SYNTAX)
    sub = option_word(argv[2])
    srv = c.server
    if sub == b"error":
        return _error(c, argv)
    if sub == b"delay":
        return _delay(c, argv)
    if sub == b"refuse":
        return _refuse(c, argv)
    if sub == b"drop":
        return R.integer(faults.drop(srv, kill_filter(c, argv, 3, by_name=True)))
    if sub == b"clear" and len(argv) <= 4:
        which = option_word(argv[3]) if len(argv) == 4 else b"all"
        if which not in _CLEARS:
            raise CommandError(SYNTAX)
        return R.integer(int(_CLEARS[which](srv)))
    if sub == b"status" and len(argv) == 3:
        return R.array([R.bulk(f"{name} {detail}".encode()) for name, detail in faults.status(srv)])
    raise CommandError(f"ERR unknown DEBUG FAULT subcommand '{argv[2].decode(errors='replace')}': "
                       "ERROR, DELAY, REFUSE, DROP, CLEAR or STATUS")
