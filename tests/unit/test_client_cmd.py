"""CLIENT subcommands against redis-server 7.0 (7.2's SETINFO / NO-TOUCH: test_compat_version.py)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import start_raxdb, start_redis

# Redis 7.0.15's CLIENT LIST fields, in order.
FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi", "qbuf",
          "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user",
          "redir", "resp"]


def fields(line: bytes) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.decode().split(" "))


def client_lines(frame: bytes) -> list[bytes]:
    text = parse(frame)
    assert isinstance(text, bytes) and (not text or text.endswith(b"\n")), frame
    return text.splitlines()


def test_id_name(diff):
    ours, theirs = diff.both("CLIENT", "ID")
    assert ours.startswith(b":") and int(ours[1:-2]) > 0
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "a b")
    diff("CLIENT", "SETNAME", "a\nb")
    diff("CLIENT", "SETNAME", "caf\xe9")
    diff("CLIENT", "SETNAME", "")
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "worker-1")
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "")
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "a", "b")
    diff("CLIENT", "ID", "x")
    diff("CLIENT", "GETNAME", "x")
    diff("CLIENT")
    diff("CLIENT", "HELP")
    diff("CLIENT", "HELP", "x")


def test_ids_increase(raxdb):
    a, b = RawConnection(raxdb.port), RawConnection(raxdb.port)
    ia, ib = int(a.call("CLIENT", "ID")[1:-2]), int(b.call("CLIENT", "ID")[1:-2])
    assert ib > ia
    a.close()
    b.close()


def test_list_and_info_fields(diff):
    diff("CLIENT", "SETNAME", "lister")
    diff("SELECT", "2")
    ours, theirs = diff.both("CLIENT", "INFO")
    if diff.protocol == 3:
        assert ours.startswith(b"=") and b"\r\ntxt:id=" in ours
    a, b = fields(client_lines(ours)[0]), fields(client_lines(theirs)[0])
    assert list(a) == list(b) == FIELDS
    for name in ("name", "flags", "db", "sub", "psub", "ssub", "multi", "cmd", "user", "redir", "resp", "laddr"):
        if name != "laddr":
            assert a[name] == b[name], name
    assert a["cmd"] == "client|info" and a["name"] == "lister" and a["db"] == "2"
    assert re.fullmatch(r"127\.0\.0\.1:\d+", a["addr"])
    ours, theirs = diff.both("CLIENT", "LIST", "ID", a["id"])
    assert fields(client_lines(ours)[0])["cmd"] == "client|list"
    assert fields(client_lines(ours)[0])["id"] == a["id"]


def test_list_shows_every_connection(raxdb):
    conns = [RawConnection(raxdb.port) for _ in range(3)]
    ids = [int(c.call("CLIENT", "ID")[1:-2]) for c in conns]
    conns[1].call("CLIENT", "SETNAME", "middle")
    lines = client_lines(conns[0].call("CLIENT", "LIST"))
    listed = {int(fields(line)["id"]): fields(line) for line in lines}
    assert set(ids) <= set(listed)
    assert listed[ids[1]]["name"] == "middle"
    assert listed[ids[1]]["cmd"] == "client|setname"
    assert listed[ids[2]]["cmd"] == "client|id"
    ordered = [int(fields(line)["id"]) for line in lines]
    assert ordered == sorted(ordered)
    only = client_lines(conns[0].call("CLIENT", "LIST", "ID", str(ids[2]), str(ids[0]), str(ids[2]), "0", "-1"))
    assert [int(fields(line)["id"]) for line in only] == [ids[2], ids[0], ids[2]]
    for c in conns:
        c.close()


def test_list_filters_and_errors(diff):
    for args in (["TYPE", "normal"], ["TYPE", "NORMAL"], ["TYPE", "pubsub"], ["TYPE", "master"],
                 ["TYPE", "replica"], ["TYPE", "slave"], ["TYPE", "foo"], ["ID", "1", "2", "abc"], ["ID", "0"],
                 ["ID", "-1"], ["ID"], ["TYPE"], ["foo"], ["ID", "1", "TYPE", "normal"],
                 ["TYPE", "normal", "TYPE", "normal"], ["ID", "99999999"]):
        ours, theirs = diff.both("CLIENT", "LIST", *args)
        if ours.startswith(b"-") or theirs.startswith(b"-") or not parse(theirs):
            assert ours == theirs, args
        else:
            # this test's own connection (other tests may leave clients connected to the server)
            own = [_own_line(ours, diff.ours), _own_line(theirs, diff.theirs)]
            assert list(fields(own[0])) == list(fields(own[1])), args


def _own_line(reply, conn):
    cid = parse(conn.call("CLIENT", "ID"))
    lines = [x for x in client_lines(reply) if fields(x)["id"] == str(cid)]
    assert len(lines) == 1
    return lines[0]


def test_flags(diff):
    diff("CLIENT", "NO-EVICT", "on")
    ours, theirs = diff.both("CLIENT", "INFO")
    assert fields(client_lines(ours)[0])["flags"] == fields(client_lines(theirs)[0])["flags"] == "e"
    diff("CLIENT", "NO-EVICT", "OFF")
    ours, theirs = diff.both("CLIENT", "INFO")
    assert fields(client_lines(ours)[0])["flags"] == "N"
    diff("CLIENT", "NO-EVICT", "maybe")
    diff("CLIENT", "NO-EVICT")


def test_kill_errors(diff):
    for args in (["1.2.3.4:5"], ["ID", "999999"], ["ID", "abc"], ["ID", "0"], ["ID", "-5"], ["ID"],
                 ["TYPE", "foo"], ["TYPE", "normal", "SKIPME", "yes", "ID", "999999"], ["SKIPME", "maybe"],
                 ["USER", "nosuch"], ["LADDR", "1.2.3.4:5"], ["ADDR", "1.2.3.4:5"], ["MAXAGE", "10"],
                 ["foo", "bar", "baz"], ["addr", "1.2.3.4:5", "laddr"], ["TYPE", "master"], ["TYPE", "replica"],
                 ["TYPE", "slave"], ["TYPE", "pubsub"], ["TYPE", "PUBSUB"], ["USER", "default", "ID", "999999"]):
        diff("CLIENT", "KILL", *args)
    diff("CLIENT", "KILL")


def _closed(conn: RawConnection) -> bool:
    try:
        while conn.sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_kill_connections(raxdb):
    killer = RawConnection(raxdb.port)
    victim = RawConnection(raxdb.port)
    vid = victim.call("CLIENT", "ID")[1:-2]
    assert killer.call("CLIENT", "KILL", "ID", vid) == b":1\r\n"
    assert _closed(victim)
    victim = RawConnection(raxdb.port)
    victim.call("PING")
    addr = b"127.0.0.1:%d" % victim.sock.getsockname()[1]
    assert killer.call("CLIENT", "KILL", addr) == b"+OK\r\n"  # the old form
    assert _closed(victim)
    victim = RawConnection(raxdb.port)
    victim.call("PING")
    laddr = fields(client_lines(victim.call("CLIENT", "INFO"))[0])["laddr"]
    vaddr = b"127.0.0.1:%d" % victim.sock.getsockname()[1]
    assert killer.call("CLIENT", "KILL", "ADDR", vaddr, "LADDR", laddr) == b":1\r\n"
    assert _closed(victim)
    # SKIPME no: the killer goes too, after its reply
    me = killer.call("CLIENT", "ID")[1:-2]
    assert killer.call("CLIENT", "KILL", "ID", me, "SKIPME", "yes") == b":0\r\n"
    assert killer.call("CLIENT", "KILL", "ID", me, "SKIPME", "no") == b":1\r\n"
    assert _closed(killer)


def test_kill_self_stops_the_batch(raxdb, oracle):
    # Killing oneself closes after the reply; the rest of the pipeline does not run (Redis's
    # CLIENT_CLOSE_AFTER_REPLY), so the SET never happens.
    seen = []
    for srv in (raxdb, oracle):
        c = RawConnection(srv.port)
        me = c.call("CLIENT", "ID")[1:-2]
        c.send(encode_command(["CLIENT", "KILL", "ID", me, "SKIPME", "no"]) + encode_command(["SET", "killed:k", "1"]))
        seen.append(c.read_frame())
        assert _closed(c)
        check = RawConnection(srv.port)
        seen.append(check.call("EXISTS", "killed:k"))
        check.close()
    assert seen == [b":1\r\n", b":0\r\n"] * 2


def test_kill_filters_combine(raxdb):
    me = RawConnection(raxdb.port)
    other = RawConnection(raxdb.port)
    other.call("PING")
    mine = b"127.0.0.1:%d" % me.sock.getsockname()[1]
    theirs = b"127.0.0.1:%d" % other.sock.getsockname()[1]
    assert me.call("CLIENT", "KILL", "TYPE", "normal", "ADDR", mine) == b":0\r\n"  # SKIPME yes by default
    assert me.call("CLIENT", "KILL", "TYPE", "pubsub", "ADDR", theirs) == b":0\r\n"
    assert me.call("CLIENT", "KILL", "USER", "default", "TYPE", "normal", "ADDR", theirs) == b":1\r\n"
    assert me.call("PING") == b"+PONG\r\n"
    assert _closed(other)
    me.close()


def test_reply_modes(diff):
    diff("CLIENT", "REPLY", "foo")
    diff("CLIENT", "REPLY")
    diff("CLIENT", "REPLY", "ON")
    for conn in (diff.ours, diff.theirs):
        conn.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n"  # no reply
                  b"*2\r\n$4\r\nECHO\r\n$6\r\nhidden\r\n"  # no reply
                  b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n"  # +OK
                  b"*2\r\n$4\r\nECHO\r\n$5\r\nshown\r\n")
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"+OK\r\n"
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"$5\r\nshown\r\n"


def test_reply_skip(diff):
    for conn in (diff.ours, diff.theirs):
        conn.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n"  # no reply
                  b"*2\r\n$4\r\nECHO\r\n$6\r\nhidden\r\n"  # skipped
                  b"*2\r\n$4\r\nECHO\r\n$5\r\nshown\r\n")
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"$5\r\nshown\r\n"


def test_pause_errors_and_unpause(diff):
    for args in (["abc"], ["-1"], ["0", "FOO"], ["10", "write", "x"], []):
        diff("CLIENT", "PAUSE", *args)
    diff("CLIENT", "PAUSE", "0", "write")
    diff("CLIENT", "UNPAUSE")
    diff("CLIENT", "PAUSE", "0")
    diff("CLIENT", "PAUSE", "0", "ALL")
    diff("CLIENT", "UNPAUSE")
    diff("CLIENT", "UNPAUSE", "x")
    diff("PING")


def _held_by_pause(port: int, setup: list[tuple], args: tuple) -> bool | bytes:
    """Under CLIENT PAUSE WRITE, is `args` held (True) or answered (its reply)?  Awaits whichever
    happens: the server counting the client as blocked, or the reply arriving."""
    import select

    admin, c = RawConnection(port), RawConnection(port)
    try:
        admin.call("FLUSHALL")
        admin.call("SCRIPT", "FLUSH")
        admin.call("FUNCTION", "FLUSH")
        for cmd in setup:
            admin.call(*cmd)
        assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
        c.send(encode_command(args))
        while True:
            if select.select([c.sock], [], [], 0)[0]:
                return c.read_frame()
            if b"blocked_clients:1" in admin.call("INFO", "clients"):
                return True
    finally:
        admin.call("CLIENT", "UNPAUSE")
        admin.close()
        c.close()


def test_pause_write_holds_what_may_replicate(raxdb, oracle):
    """CLIENT PAUSE WRITE holds writes and the commands Redis lets replicate (PUBLISH, PFCOUNT, EVAL,
    EVALSHA, FCALL) though COMMAND INFO does not list that flag; a script that declares flags is
    judged by them (no-writes goes through, even through EVAL; EVAL_RO of a writing script waits)."""
    lib = "#!lua name=p\nredis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes'}}" \
          "\nredis.register_function('rw', function() return 2 end)"
    setup = [("PFADD", "h", "a"), ("FUNCTION", "LOAD", lib), ("SCRIPT", "LOAD", "return 3")]
    cases = [("PFCOUNT", "h"), ("PUBLISH", "ch", "m"), ("SPUBLISH", "ch", "m"), ("GET", "h"), ("SET", "k", "v"),
             ("EVAL", "return 1", "0"), ("EVAL", "#!lua flags=no-writes\nreturn 1", "0"),
             ("EVAL_RO", "#!lua\nreturn 1", "0"), ("EVAL_RO", "return 1", "0"),
             ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
             ("EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
             ("FCALL", "ro", "0"), ("FCALL", "rw", "0"), ("FCALL_RO", "rw", "0"), ("FCALL", "nosuch", "0"),
             ("PFADD", "h", "b"), ("PING",)]
    for args in cases:
        assert _held_by_pause(raxdb.port, setup, args) == _held_by_pause(oracle.port, setup, args), args


def test_tracking_and_caching(diff):
    for args in (["foo"], ["maybe"], ["on", "prefix", "a"], ["on", "bcast", "optin"], ["on", "redirect", "999999"],
                 ["on", "redirect", "abc"], ["on", "optin", "optout"], ["on", "foo"], ["off"], ["OFF", "noloop"],
                 ["on", "redirect"], ["on", "prefix"], ["off", "bogus"]):
        diff("CLIENT", "TRACKING", *args)
    diff("CLIENT", "TRACKING")
    diff("CLIENT", "CACHING", "maybe")
    diff("CLIENT", "CACHING", "yes")
    diff("CLIENT", "CACHING", "no")
    diff("CLIENT", "GETREDIR")
    diff("CLIENT", "TRACKINGINFO")


def test_unblock(diff):
    for args in (["99999999"], ["abc"], ["99999999", "timeout"], ["99999999", "ERROR"], ["99999999", "foo"],
                 ["1", "timeout", "x"], []):
        diff("CLIENT", "UNBLOCK", *args)
    ours, _ = diff.both("CLIENT", "ID")
    assert diff.ours.call("CLIENT", "UNBLOCK", ours[1:-2]) == b":0\r\n"  # a client that is not blocked


def test_unknown_subcommand_text(raw):
    reply = raw.call("CLIENT", "NOSUCH")
    assert reply.startswith(b"-ERR unknown")


def test_list_cmd_is_the_command_looked_up(raxdb, oracle):
    """cmd= in CLIENT LIST is set when the command is looked up, before anything refuses or
    queues it: a wrong arity, a MULTI queue, a RESP2 subscriber's refused command show that
    command; an unknown one shows NULL; a container without its subcommand shows its name."""
    scripts = [[("SET", "x")], [("MULTI",), ("GET", "a"), ("SET", "b", "c")], [("MULTI",), ("SET", "b")],
               [("MULTI",), ("NOSUCH",)], [("SUBSCRIBE", "z"), ("GET", "a")], [("CLIENT",)],
               [("CLIENT", "NOSUCH")], [("MULTI",), ("SET", "b", "c"), ("EXEC",)]]
    for script in scripts:
        shown = []
        for port in (raxdb.port, oracle.port):
            conn, admin = RawConnection(port), RawConnection(port)
            conn.call("CLIENT", "SETNAME", "probe")
            for cmd in script:
                conn.call(*cmd)
            lines = client_lines(admin.call("CLIENT", "LIST"))
            shown.append([f["cmd"] for f in map(fields, lines) if f["name"] == "probe"])
            conn.close()
            admin.close()
        assert shown[0] == shown[1], script


def test_qbuf_counts_the_running_command_and_what_follows(raxdb, oracle):
    """CLIENT LIST/INFO's qbuf= for the asking client holds the command running and whatever was
    pipelined behind it, as Redis's query buffer does (introspection.tcl expects qbuf=26)."""
    def qbufs(port: int) -> list[str]:
        c = RawConnection(port)
        out = []
        for batch in ([("CLIENT", "INFO")], [("CLIENT", "LIST", "ID", "1", "2")],
                      [("CLIENT", "INFO"), ("PING",), ("SET", "k", "v" * 100)]):
            c.send(b"".join(encode_command(a) for a in batch))
            frames = [c.read_frame() for _ in batch]
            out += re.findall(r"qbuf=(\d+)", parse(frames[0]).decode()) or ["none"]
        c.close()
        return out

    assert qbufs(raxdb.port) == qbufs(oracle.port)


def test_a_transaction_as_client_info_and_list_show_it(raxdb, oracle):
    """A client in MULTI, seen by another's CLIENT LIST (multi-mem= is mstate.argv_len_sums: the
    queued arguments' bytes and 8 per argument), and by its own CLIENT INFO run by EXEC: Redis's
    client is still in MULTI then (flags=x, multi= the queue), its argv and cmd EXEC's."""
    shown = []
    for port in (raxdb.port, oracle.port):
        conn, admin = RawConnection(port), RawConnection(port)
        conn.call("CLIENT", "SETNAME", "tx")
        conn.call("MULTI")
        conn.call("SET", "a", "bb")
        conn.call("GET", "a")
        listed = [f for f in map(fields, client_lines(admin.call("CLIENT", "LIST"))) if f["name"] == "tx"]
        conn.call("CLIENT", "INFO")
        own = fields(parse(conn.call("EXEC"))[2].splitlines()[0])
        keys = ("flags", "multi", "qbuf", "argv-mem", "multi-mem", "cmd")
        shown.append(([{k: f[k] for k in keys} for f in listed], {k: own[k] for k in keys}))
        conn.close()
        admin.close()
    assert shown[0] == shown[1]


def test_pause_holds_expiry(diff):
    """While clients are paused the dataset stays as it is: keys past their deadline read as
    missing but are neither deleted nor counted as expired until the pause ends."""
    diff("CONFIG", "RESETSTAT")
    diff.script("""
        MULTI
        SET foo bar PX 100
        SET bar foo PX 100
        CLIENT PAUSE 50000 WRITE
        EXEC
        DEBUG SLEEP 0.2
        GET foo
        EXISTS bar
        DBSIZE
        KEYS *
        SCAN 0
        TTL foo
    """)
    ours, theirs = diff.both("INFO", "stats")
    assert re.search(rb"expired_keys:\d+", ours)[0] == re.search(rb"expired_keys:\d+", theirs)[0] == b"expired_keys:0"
    # after the pause the keys go at their next access: the active cycle is off from here, or
    # either server's cron could delete them between UNPAUSE and DBSIZE on a loaded host
    diff("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        diff.script("""
            CLIENT UNPAUSE
            DBSIZE
            GET foo
            GET bar
            DBSIZE
        """)
    finally:
        diff("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    ours, theirs = diff.both("INFO", "stats")
    assert re.search(rb"expired_keys:\d+", ours)[0] == re.search(rb"expired_keys:\d+", theirs)[0] == b"expired_keys:2"


def test_randomkey_returns_while_every_key_is_dead_and_paused(raxdb):
    """Redis 7.0 loops forever in RANDOMKEY when every key has expired during a pause; raxdb
    returns one of them after 100 draws, as Redis 7.2 does."""
    c = RawConnection(raxdb.port)
    c.call("FLUSHALL")
    c.call("SET", "a", "1", "PX", "1")
    c.call("CLIENT", "PAUSE", "50000", "WRITE")
    c.call("DEBUG", "SLEEP", "0.01")
    assert c.call("RANDOMKEY") == b"$1\r\na\r\n"
    c.call("CLIENT", "UNPAUSE")
    assert c.call("RANDOMKEY") == b"$-1\r\n"
    c.close()


def _keepalive_timer(port: int) -> int | None:
    """Seconds left on the keepalive timer `ss` shows on the server's side of a connection to
    `port` (None: no keepalive)."""
    out = subprocess.run(["ss", "-tnoH", "state", "established", f"( sport = :{port} )"], capture_output=True,
                         text=True, timeout=30).stdout
    m = re.search(r"timer:\(keepalive,(?:(\d+)min)?(?:(\d+)sec)?", out)
    return int(m[1] or 0) * 60 + int(m[2] or 0) if m else None


@pytest.mark.oracle
@pytest.mark.parametrize("value", ["300", "60", "0"])
def test_tcp_keepalive_as_redis(value):
    """tcp-keepalive: a client's connection gets keepalive probes after that many idle seconds
    (ss shows the timer on the server's side), none with 0."""
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    timers = []
    for start in (start_raxdb, start_redis):
        srv = start("--tcp-keepalive", value)
        try:
            c = RawConnection(srv.port)
            c.call("PING")
            timers.append(_keepalive_timer(srv.port))
            c.close()
        finally:
            srv.stop()
    if value == "0":
        assert timers == [None, None]
    else:  # counting down from the option's value on both
        assert all(t is not None and int(value) - 10 <= t <= int(value) for t in timers), timers


@pytest.mark.oracle
def test_a_new_connections_socket_fields_as_redis(raxdb, oracle):
    """A connection's addr, laddr and fd, taken from the accepted socket when it is accepted
    (server/net/accept.py, issue #56): addr the client's own end, laddr the server's end (the
    port listened on), fd the server's descriptor (a number, each connection its own); the same
    on both servers, for connections opened together."""
    for srv in (raxdb, oracle):
        conns = [RawConnection(srv.port) for _ in range(4)]
        infos = [fields(client_lines(c.call("CLIENT", "INFO"))[0]) for c in conns]
        for c, info in zip(conns, infos, strict=True):
            host, port = c.sock.getsockname()[:2]
            assert info["addr"] == f"{host}:{port}"
            assert info["laddr"] == f"127.0.0.1:{srv.port}"
            assert int(info["fd"]) > 0
        assert len({info["fd"] for info in infos}) == len(conns)
        listed = client_lines(conns[0].call("CLIENT", "LIST"))
        for info in infos:
            assert any(fields(line)["id"] == info["id"] and fields(line)["addr"] == info["addr"]
                       and fields(line)["fd"] == info["fd"] for line in listed)
        for c in conns:
            c.close()
