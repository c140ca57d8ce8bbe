"""The pause recorder (server/admin/pauses.py, a bench aid): off, DEBUG PAUSES is Redis's unknown
subcommand; on (RAXDB_PAUSES=1 in the server's environment), its report names the collections and
the loop iterations it saw (the worst by wall time and by CPU time), and each report starts a new
one; it gives the collector's thresholds the server set (server/main.py's GC_THRESHOLDS), which
bound a collection's walk."""

from __future__ import annotations

import json
import os

from raxdb.server.main import GC_THRESHOLDS
from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import start_raxdb


def test_off_debug_pauses_is_an_unknown_subcommand(diff):
    diff("DEBUG", "PAUSES")


def _report(c: RawConnection) -> dict:
    return json.loads(parse(c.call("DEBUG", "PAUSES")))


def test_on_the_report_names_collections_and_a_blocked_loop():
    os.environ["RAXDB_PAUSES"] = "1"
    try:
        srv = start_raxdb()
    finally:
        del os.environ["RAXDB_PAUSES"]
    try:
        c = RawConnection(srv.port)
        _report(c)  # starts the heartbeat, and the report afresh
        # 10,000 new streams: tens of thousands of objects the collector tracks, so young collections run
        n = 10_000
        c.send(b"".join(encode_command([b"XADD", b"s:%d" % i, b"*", b"f", b"v"]) for i in range(n)))
        for _ in range(n):
            c.read_frame()
        # holds the loop 250 ms: the heartbeat fires that late at least (longer than any stall a
        # loaded host gave an interpreted run between the two reports: 50 ms was not)
        c.call("DEBUG", "SLEEP", "0.25")
        got = _report(c)
        assert set(got) == {"seconds", "gc_counts", "gc_thresholds", "kinds"}
        # the server's own bounds, not Python's (700, 10, 10): young collections walk at most a
        # few thousand survivors, and full ones come after millions
        assert tuple(got["gc_thresholds"]) == GC_THRESHOLDS
        assert 1000 <= GC_THRESHOLDS[0] <= 2000 and GC_THRESHOLDS[1] == 2
        assert GC_THRESHOLDS[0] * GC_THRESHOLDS[1] * GC_THRESHOLDS[2] >= 4_000_000
        kinds = got["kinds"]
        assert kinds["gc-0"]["n"] >= 1 and len(kinds["gc-0"]["worst"]) >= 1
        assert kinds["loop"]["worst"][0]["ms"] >= 249.0
        assert kinds["loop"]["n"] == sum(kinds["loop"]["hist_ms"].values())
        # each kind's worst cases also by CPU time, longest first: the longest of them at least
        # the CPU of any of the longest by wall time
        for got_kind in kinds.values():
            by_cpu = [w["cpu_ms"] for w in got_kind["worst_cpu"]]
            assert by_cpu == sorted(by_cpu, reverse=True) and len(by_cpu) == len(got_kind["worst"])
            assert by_cpu[0] >= max(w["cpu_ms"] for w in got_kind["worst"])
        # a new report: what the last one held is gone (the 250 ms sleep; a young collection may
        # have run since, a background family import's objects, so the kinds need not be empty)
        after = _report(c)["kinds"]
        assert all(w["ms"] < 249.0 for w in after.get("loop", {}).get("worst", [])), after
        c.close()
    finally:
        srv.stop()
