"""DEBUG CLOCK: the test control that moves the server's clock (a raxdb extension).

    DEBUG CLOCK ADVANCE <seconds>   move the clock forward (a double, >= 0; microsecond precision)
    DEBUG CLOCK FREEZE              stop the clock where it stands
    DEBUG CLOCK UNFREEZE            let it run again, keeping what was advanced
    DEBUG CLOCK RESET               back on the wall clock: running, nothing advanced
    DEBUG CLOCK GET                 the reading: now-us, frozen (0/1), ahead-us (of the wall clock)

Rule: this module parses the control and calls the clock (server/base/clock.py), which owns the
semantics, then `Server.clock_moved`, which does at once what the new time calls for (blocked
clients time out, keys expire, a pause ends, idle clients close), so a test never waits for the
cron.  Registered through testcontrols.control: it exists only with `raxdb-test-controls yes`.
"""

from __future__ import annotations

import math

from raxdb.protocol import reply as R
from raxdb.server.base import clock
from raxdb.server.base.errors import CommandError
from raxdb.server.base.numparse import strtod
from raxdb.server.commands.testcontrols import control

_HELP = [
    "CLOCK ADVANCE <seconds>",
    "    (raxdb test control) Move the server's clock forward by <seconds> (a double): keys expire,",
    "    blocked clients time out, idle clients age at once.",
    "CLOCK FREEZE",
    "    (raxdb test control) Stop the server's clock: no time passes until ADVANCE or UNFREEZE.",
    "CLOCK UNFREEZE",
    "    (raxdb test control) Let the clock run again, keeping what ADVANCE added.",
    "CLOCK RESET",
    "    (raxdb test control) Put the clock back on the wall clock (it may move back).",
    "CLOCK GET",
    "    (raxdb test control) The clock's reading (now-us), whether it is frozen, how far ahead it is.",
]
_MAX_ADVANCE_S = 100 * 365 * 86400  # a century per step: far past any TTL a test sets, and no overflow


def _syntax() -> CommandError:
    return CommandError("ERR syntax error: DEBUG CLOCK ADVANCE <seconds> | FREEZE | UNFREEZE | RESET | GET")


@control("clock", _HELP)
def debug_clock(c, argv: list[bytes]) -> bytes:
    srv = c.server
    if len(argv) < 3:
        raise _syntax()
    sub = argv[2].lower()
    if sub == b"get" and len(argv) == 3:
        frozen = clock.frozen(srv)
        return c.enc.map([R.bulk(b"now-us"), R.integer(clock.us(srv)), R.bulk(b"frozen"), R.integer(int(frozen)),
                          R.bulk(b"ahead-us"), R.integer(clock.shift_us(srv))])
    if sub == b"advance" and len(argv) == 4:
        seconds = strtod(argv[3])
        if seconds is None or not math.isfinite(seconds) or seconds < 0 or seconds > _MAX_ADVANCE_S:
            raise CommandError("ERR DEBUG CLOCK ADVANCE takes seconds as a number from 0 to 3153600000: the clock "
                               "only moves forward (DEBUG CLOCK RESET puts it back on the wall clock)")
        clock.advance(srv, round(seconds * 1e6))
    elif sub == b"freeze" and len(argv) == 3:
        clock.freeze(srv)
    elif sub == b"unfreeze" and len(argv) == 3:
        clock.unfreeze(srv)
    elif sub == b"reset" and len(argv) == 3:
        clock.reset(srv)
    else:
        raise _syntax()
    srv.clock_moved()
    return R.OK
