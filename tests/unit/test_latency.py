"""LATENCY and INFO latencystats against redis-server 7.0: the monitor's replies and texts (DOCTOR,
GRAPH byte for byte, with the measured milliseconds and ages masked), RESET, HELP, errors, and the
per-command histograms' shape (their values are each server's own timings)."""

from __future__ import annotations

import re

from tests.support.diff import RawConnection, parse


def test_replies_with_the_monitor_off(diff):
    diff("LATENCY", "DOCTOR")
    diff("LATENCY", "LATEST")
    diff("LATENCY", "HISTORY", "command")
    diff("LATENCY", "GRAPH", "command")
    diff("LATENCY", "GRAPH", b"no\x00such")
    diff("LATENCY", "RESET")
    diff("LATENCY", "RESET", "command", "fast-command")
    diff("LATENCY", "HISTOGRAM", "nosuchcommand")
    diff("LATENCY", "HELP")
    diff("LATENCY", "HISTORY")
    diff("LATENCY", "LATEST", "extra")
    diff("LATENCY", "NOSUCH")
    diff("LATENCY")


def _masked(frame: bytes) -> bytes:
    """Milliseconds, unix times and ages vary with each run's timing: digits become N."""
    return re.sub(rb"\d", b"N", frame)


def _warmed(c: RawConnection) -> RawConnection:
    """`c` once its families are loaded, with the monitor still off: a command's first use in a
    fresh raxdb imports its family, tens of milliseconds (over 100 on a loaded host, as the first
    SLOWLOG RESET of an interpreted server at load 17 took 137), which the monitor would time as
    an event of that command."""
    for cmd in (("CONFIG", "GET", "latency-monitor-threshold"), ("LATENCY", "LATEST"), ("DEBUG", "SLEEP", "0"),
                ("PING",), ("SLOWLOG", "LEN")):
        c.call(*cmd)
    return c


def test_a_slow_command_is_a_latency_event(fresh):
    outs = []
    for srv in fresh:
        c = _warmed(RawConnection(srv.port))
        c.call("HELLO", "3")
        # The threshold well above what a fast command can take on a loaded host (the monitor times
        # wall clock: a descheduled server's PING would be an event of its own).
        out = [c.call("CONFIG", "SET", "latency-monitor-threshold", "100"), c.call("LATENCY", "DOCTOR")]
        c.call("DEBUG", "SLEEP", "0.15")  # a command that takes 150 ms
        c.call("PING")  # a fast one, far below the threshold
        latest = parse(c.call("LATENCY", "LATEST"))
        assert len(latest) == 1 and latest[0][0] == b"command" and latest[0][2] >= 150 and latest[0][3] >= 150
        history = parse(c.call("LATENCY", "HISTORY", "command"))
        assert len(history) == 1 and history[0][1] >= 150
        out += [_masked(c.call("LATENCY", "LATEST")), _masked(c.call("LATENCY", "DOCTOR")),
                _masked(c.call("LATENCY", "GRAPH", "command")), c.call("LATENCY", "HISTORY", "fast-command")]
        out += [c.call("LATENCY", "RESET", "COMMAND", "fast-command"), c.call("LATENCY", "LATEST"),
                c.call("LATENCY", "DOCTOR")]
        c.close()
        outs.append(out)
    assert outs[0] == outs[1], f"\n  raxdb: {outs[0]!r}\n  redis: {outs[1]!r}"


def test_doctor_advises_on_the_slow_log(fresh):
    outs = []
    for srv in fresh:
        c = _warmed(RawConnection(srv.port))
        # A threshold no fast command reaches on a loaded host, as above.
        c.call("CONFIG", "SET", "latency-monitor-threshold", "100")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")  # off: the doctor says to enable it
        c.call("DEBUG", "SLEEP", "0.12")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "500000")  # above the threshold: to tune
        c.call("DEBUG", "SLEEP", "0.12")
        outs.append(_masked(c.call("LATENCY", "DOCTOR")))
        c.close()
    assert outs[0] == outs[1], f"\n  raxdb: {outs[0]!r}\n  redis: {outs[1]!r}"


def _latencystats(c: RawConnection) -> dict[str, str]:
    text = c.call("INFO", "latencystats").decode()
    return dict(re.findall(r"^latency_percentiles_usec_(\S+?):(\S+)\r$", text, re.M))


def test_latency_tracking_histograms(fresh):
    shapes = []
    for srv in fresh:
        c = RawConnection(srv.port)
        c.call("SET", "k", "v")  # one call of a fast command is measured too
        c.call("GET", "k")
        c.call("CONFIG", "GET", "maxmemory")
        stats = _latencystats(c)
        for line in stats.values():
            assert re.fullmatch(r"p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}", line)
        histogram = parse(c.call("LATENCY", "HISTOGRAM", "set", "config", "nosuch"))  # RESP2: a flat list
        names = sorted(histogram[0::2])
        fields = sorted(histogram[1][0::2])
        c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "0 25.5 100")
        relabelled = sorted(_latencystats(c)["set"].split(","))
        c.call("CONFIG", "RESETSTAT")
        after_reset = _latencystats(c)
        c.call("CONFIG", "SET", "latency-tracking", "no")
        c.call("ECHO", "x")
        untracked = "echo" in _latencystats(c)
        shapes.append((sorted(k for k in stats if k in ("set", "get", "config|get")), names, fields,
                       [p.split("=")[0] for p in relabelled], sorted(after_reset), untracked))
        c.close()
    assert shapes[0] == shapes[1], f"\n  raxdb: {shapes[0]!r}\n  redis: {shapes[1]!r}"
    assert shapes[0][0] == ["config|get", "get", "set"]


def test_histogram_buckets_are_powers_of_two(raxdb):
    c = RawConnection(raxdb.port)
    try:
        c.call("HELLO", "3")
        for _ in range(50):
            c.call("SET", "k", "v")
        entry = parse(c.call("LATENCY", "HISTOGRAM", "set"))[b"set"]
        bounds = list(entry[b"histogram_usec"])
        counts = list(entry[b"histogram_usec"].values())
        assert bounds == sorted(bounds) and counts == sorted(counts)
        assert counts[-1] == entry[b"calls"]  # cumulative, ending at every call
        allowed = {(1032 * 2 ** k - 1) // 1000 for k in range(25)}  # HdrHistogram's log levels
        assert set(bounds) <= allowed, bounds
    finally:
        c.close()


def test_first_call_after_tracking_is_switched_on_is_measured(fresh):
    """Redis times every call; raxdb samples fast commands, but the first call of each after
    latency-tracking goes from no to yes is timed (unit/info 'latencystats: disable/enable')."""
    seen = []
    for srv in fresh:
        c = RawConnection(srv.port)
        c.call("CONFIG", "RESETSTAT")
        c.call("CONFIG", "SET", "latency-tracking", "no")
        for _ in range(3):  # calls not a multiple of the sample period
            c.call("SET", "a", "b")
            c.call("INCR", "n")
        before = sorted(_latencystats(c))
        c.call("CONFIG", "SET", "latency-tracking", "yes")
        c.call("SET", "a", "b")
        c.call("INCR", "n")
        seen.append((before, sorted(k for k in _latencystats(c) if k in ("set", "incr"))))
        c.close()
    assert seen[0] == seen[1], f"\n  raxdb: {seen[0]!r}\n  redis: {seen[1]!r}"
    assert seen[0][1] == ["incr", "set"]
