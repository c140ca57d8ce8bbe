"""LATENCY subcommands (Redis's latencyCommand), over server/base/latency.py's monitor and histograms."""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base import clock, latency
from raxdb.server.base.errors import CommandError, c_str
from raxdb.server.commands.t_config import help_reply
from raxdb.server.table.registry import command


def _event(argv: list[bytes]) -> str:
    # Event names are ASCII words; a client's bytes that are not one name no event.
    return argv[2].decode("latin-1")


@command("latency|latest")
def latency_latest(c, argv):
    rows = []
    for event, series in latency.events(c.server).items():
        t, ms = series.latest()
        rows.append(R.array([R.bulk(event.encode()), R.integer(t), R.integer(ms), R.integer(series.max)]))
    return R.array(rows)


@command("latency|history")
def latency_history(c, argv):
    series = latency.events(c.server).get(_event(argv))
    if series is None:
        return R.EMPTY_ARRAY
    return R.array([R.array([R.integer(t), R.integer(ms)]) for t, ms in series.samples()])


@command("latency|graph")
def latency_graph(c, argv):
    event = _event(argv)
    series = latency.events(c.server).get(event)
    if series is None:
        raise CommandError(b"ERR No samples available for event '%s'" % c_str(argv[2]))
    return c.enc.verbatim(latency.graph(event, series, int(clock.seconds(c.server))).encode())


@command("latency|doctor")
def latency_doctor(c, argv):
    return c.enc.verbatim(latency.report(c.server).encode())


@command("latency|reset")
def latency_reset(c, argv):
    return R.integer(latency.reset(c.server, argv[2:] if len(argv) > 2 else None))


@command("latency|histogram")
def latency_histogram(c, argv):
    table = c.server.table
    if len(argv) == 2:
        cmds = table.every_command()
    else:
        cmds = []
        for name in argv[2:]:
            cmd = table.lookup_name(name)  # a name or "container|sub", as Redis finds them
            if cmd is not None:
                cmds += [cmd, *cmd.subcommands.values()]
    enc = c.enc
    pairs = []
    for cmd in cmds:
        hist = cmd.latency_histogram()
        if hist:
            buckets = []
            for bound, cumulative in latency.cdf(cmd, hist):
                buckets += [R.integer(bound), R.integer(cumulative)]
            pairs += [R.bulk(cmd.fullname.encode()),
                      enc.map([R.bulk(b"calls"), R.integer(cmd.calls), R.bulk(b"histogram_usec"), enc.map(buckets)])]
    return enc.map(pairs)


@command("latency|help")
def latency_help(c, argv):
    return help_reply("LATENCY", [
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
    ])
