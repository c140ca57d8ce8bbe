"""Client-side caching (CLIENT TRACKING) against redis-server 7.0: the same scenario runs on both
servers, with several connections each, and the frames every connection received must match:
invalidation pushes and their place among replies, BCAST prefixes, NOLOOP, OPTIN/OPTOUT with
CLIENT CACHING, REDIRECT to RESP2 Pub/Sub and RESP3 connections, broken redirects, FLUSH*,
scripts, expiry, eviction, the table's size limit, INFO counters.  (redis-py 8's client-side
cache refuses servers older than 7.4, raxdb as Redis 7.0; its protocol is what is tested here.)"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.support.diff import RawConnection, encode_command

Opener = Callable[..., RawConnection]


def _run(port: int, scenario: Callable[[Opener], list]) -> list:
    conns: list[RawConnection] = []

    def open_conn(protocol: int = 3) -> RawConnection:
        c = RawConnection(port, timeout=10)
        conns.append(c)
        if protocol == 3:
            c.call("HELLO", "3")
        return c

    try:
        admin = RawConnection(port)
        admin.call("FLUSHALL")  # empties the tracking table too
        admin.close()
        return scenario(open_conn)
    finally:
        for c in conns:
            c.close()


def both(raxdb, oracle, scenario: Callable[[Opener], list]) -> list:
    ours = _run(raxdb.port, scenario)
    theirs = _run(oracle.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    return ours


def pipeline(c: RawConnection, *commands: tuple, replies: int) -> list[bytes]:
    """Send commands in one write (one read event on the server) and read `replies` frames."""
    c.send(b"".join(encode_command(cmd) for cmd in commands))
    return [c.read_frame() for _ in range(replies)]


def until_pong(t: RawConnection) -> list[bytes]:
    """What `t` was sent so far, then its PING's reply: the pushes of writes that finished before
    this PING was sent come ahead of its +PONG."""
    t.send(encode_command(("PING",)))
    out = [t.read_frame()]
    while out[-1] != b"+PONG\r\n":
        out.append(t.read_frame())
    return out


def client_id(c: RawConnection) -> int:
    return int(c.call("CLIENT", "ID")[1:-2])


def wait_gone(c: RawConnection, cid: int) -> None:
    """Until the server has handled the close of client `cid` (it answers CLIENT LIST ID with
    nothing): the close and a later command of another connection may come in either order."""
    for _ in range(100_000):
        if b"id=" not in c.call("CLIENT", "LIST", "ID", str(cid)):
            return
    raise AssertionError(f"client {cid} still listed")


def tracking_info(c: RawConnection) -> dict[str, str]:
    text = c.call("INFO", "everything").decode()
    return {k: v for k, v in re.findall(r"^(tracking_\w+):(\d+)", text, re.M)}


def list_fields(c: RawConnection) -> tuple[str, str]:
    """This connection's CLIENT LIST flags= and whether redir= names a client (ids differ)."""
    line = c.call("CLIENT", "INFO").decode()
    flags = re.search(r" flags=(\S+)", line).group(1)  # type: ignore[union-attr]
    redir = re.search(r" redir=(-?\d+)", line).group(1)  # type: ignore[union-attr]
    return flags, redir if redir in ("-1", "0") else "id"


# ---- the command's options and errors ----------------------------------------------------------

def test_options_and_errors(diff):
    diff("CLIENT", "TRACKING", "maybe")
    diff("CLIENT", "TRACKING", "on", "BOGUS")
    diff("CLIENT", "TRACKING", "on", "PREFIX")
    diff("CLIENT", "TRACKING", "on", "PREFIX", "a")
    diff("CLIENT", "TRACKING", "on", "REDIRECT", "notanumber")
    diff("CLIENT", "TRACKING", "on", "REDIRECT", "987654")
    diff("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT")
    diff("CLIENT", "TRACKING", "on", "BCAST", "OPTIN")
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a")
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "a")
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", b"\xc3\xa9t\xe9", "PREFIX", b"\xc3\xa9")  # raw bytes
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", b"p\x00q", "PREFIX", b"p")  # cut at the NUL
    diff("CLIENT", "TRACKING", "off", "PREFIX", "p")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "GETREDIR")
    diff("CLIENT", "CACHING", "yes")
    diff("CLIENT", "TRACKING", "on")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "GETREDIR")
    diff("CLIENT", "CACHING", "yes")
    diff("CLIENT", "CACHING", "no")
    diff("CLIENT", "CACHING", "maybe")
    diff("CLIENT", "TRACKING", "on", "BCAST")  # no switching while on
    diff("CLIENT", "TRACKING", "on", "NOLOOP", "OPTIN")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "TRACKING", "on", "OPTOUT")
    diff("CLIENT", "CACHING", "no")
    diff("CLIENT", "CACHING", "yes")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "TRACKING", "on")  # back to the default mode: options are set afresh
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "TRACKING", "off")
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "job:")
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:1")  # overlaps an existing one
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "job:")  # equal prefixes overlap
    diff("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x:")  # prefixes accumulate
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "TRACKING", "on")
    diff("CLIENT", "TRACKING", "on", "BCAST")  # the empty prefix: no overlap check, as in Redis
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "TRACKING", "off")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "CACHING")
    diff("CLIENT", "TRACKING")


def test_client_list_flags(raxdb, oracle):
    def scenario(open_conn):
        a, b = open_conn(), open_conn(2)
        out = [list_fields(a)]
        a.call("CLIENT", "TRACKING", "on")
        out.append(list_fields(a))
        a.call("CLIENT", "TRACKING", "off")
        bid = client_id(b)
        a.call("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", str(bid))
        out.append(list_fields(a))
        b.close()
        w = open_conn()
        wait_gone(w, bid)
        w.call("SET", "k", "1")
        out.append(re.sub(rb":\d+\r\n$", b":ID\r\n", a.read_frame()))  # broken redirect: told in RESP3
        out.append(list_fields(a))
        return out

    both(raxdb, oracle, scenario)


# ---- default mode ------------------------------------------------------------------------------

def test_reads_are_remembered_once(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn(2)
        w.call("SET", "s", "1")
        w.call("RPUSH", "l", "a")
        w.call("HSET", "h", "f", "v")
        w.call("XADD", "x", "1-1", "f", "v")
        out = [t.call("CLIENT", "TRACKING", "on")]
        out += [t.call("GET", "s"), t.call("MGET", "m1", "m2"), t.call("LRANGE", "l", "0", "-1"),
                t.call("HGET", "h", "f"), t.call("LLEN", "s"), t.call("EXISTS", "e1", "e2"),
                t.call("XRANGE", "x", "-", "+"), t.call("GET", "missing"), t.call("SORT_RO", "l", "ALPHA")]
        # a write command that reads is not remembered: its key is not tracked
        out.append(t.call("GETDEL", "nottracked"))
        for cmd in (("SET", "s", "2"), ("SET", "m2", "x"), ("LPUSH", "l", "b"), ("HDEL", "h", "f"),
                    ("DEL", "e1", "e2"), ("XDEL", "x", "1-1"), ("SET", "missing", "now"),
                    ("SET", "nottracked", "1"), ("SET", "s", "3"), ("SET", "m1", "y")):
            out.append(w.call(*cmd))
        out += until_pong(t)
        return out

    out = both(raxdb, oracle, scenario)
    # s, m2, l, h, x, missing, m1: DEL of keys that do not exist changes nothing
    assert sum(1 for f in out if f.startswith(b">2\r\n$10\r\ninvalidate")) == 7


def test_own_writes_and_pipelines(raxdb, oracle):
    def scenario(open_conn):
        t = open_conn()
        t.call("CLIENT", "TRACKING", "on")
        t.call("GET", "a")
        out = pipeline(t, ("PING",), ("SET", "a", "1"), ("PING",), replies=4)
        t.call("GET", "a")
        t.call("GET", "b")
        # the push follows EXEC's array; DEL of a missing key changes nothing
        out += pipeline(t, ("MULTI",), ("SET", "a", "2"), ("GET", "a"), ("DEL", "b"), ("EXEC",), ("PING",),
                        replies=7)
        # NOLOOP: a client's own writes are not sent back to it
        t.call("CLIENT", "TRACKING", "on", "NOLOOP")
        t.call("GET", "a")
        out += pipeline(t, ("SET", "a", "3"), ("PING",), replies=2)
        w = open_conn()
        t.call("GET", "a")
        out.append(w.call("SET", "a", "4"))
        out.append(t.read_frame())
        return out

    both(raxdb, oracle, scenario)


def test_optin_optout_and_caching(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        out = [t.call("CLIENT", "TRACKING", "on", "OPTIN")]
        t.call("GET", "not-opted")
        t.call("CLIENT", "CACHING", "yes")
        t.call("CLIENT", "ID")  # a CLIENT subcommand keeps the flag standing
        t.call("GET", "opted")
        t.call("GET", "after")  # the flag lasted one command
        t.call("CLIENT", "CACHING", "yes")
        out += pipeline(t, ("MULTI",), ("GET", "m1"), ("GET", "m2"), ("EXEC",), replies=4)
        t.call("GET", "m3")
        for key in ("not-opted", "opted", "after", "m1", "m2", "m3"):
            out.append(w.call("SET", key, "v"))
        out += until_pong(t)
        out.append(t.call("CLIENT", "TRACKING", "off"))
        out.append(t.call("CLIENT", "TRACKING", "on", "OPTOUT"))
        t.call("GET", "o1")
        t.call("CLIENT", "CACHING", "no")
        t.call("GET", "o2")
        t.call("GET", "o3")
        for key in ("o1", "o2", "o3"):
            out.append(w.call("SET", key, "v"))
        out += until_pong(t)
        return out

    both(raxdb, oracle, scenario)


def test_scripts_remember_their_declared_keys(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        out = [t.call("EVAL", "redis.call('get', 'inner') return 1", "1", "declared"),
               t.call("EVAL", "return 1", "1", "noread"),
               t.call("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "ro"),
               t.call("EVAL_RO", "return 1", "1", "ro-noread")]
        for key in ("inner", "declared", "noread", "ro", "ro-noread"):
            out.append(w.call("SET", key, "v"))
        out += until_pong(t)
        return out

    both(raxdb, oracle, scenario)


def test_swapdb_is_no_change_to_tracking(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        w.call("SET", "swapped", "v")
        out = [t.call("GET", "swapped"), w.call("SWAPDB", "0", "1"), w.call("SWAPDB", "0", "1")]
        out.append(t.call("PING"))  # no push came first
        out.append(w.call("SET", "swapped", "w"))
        out.append(t.read_frame())  # still tracked
        return out

    both(raxdb, oracle, scenario)


def test_expiry_invalidates(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        w.call("SET", "later", "v", "PX", "300")
        if t.call("GET", "later") == b"_\r\n":
            return ["expired before it was read: nothing to compare"]
        return [t.read_frame()]  # the active expire cycle reclaims it, and t is told

    both(raxdb, oracle, scenario)


def test_a_blocked_read_is_remembered_when_it_blocks(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        tid = client_id(t)
        t.send(encode_command(("XREAD", "BLOCK", "0", "STREAMS", "s", "$")))
        wait_blocked(w, tid)
        out = [w.call("XADD", "s", "1-1", "f", "v")]
        out += [t.read_frame(), t.read_frame()]  # the push (XADD changed s), then XREAD's reply
        return out

    both(raxdb, oracle, scenario)


def test_noloop_spares_what_the_clients_own_command_changes(raxdb, oracle):
    """NOLOOP is judged against the client whose command runs (Redis's current_client): a write by
    its script, and a key its own read finds expired, send it nothing."""
    def scenario(open_conn):
        t = open_conn()
        out = [t.call("CLIENT", "TRACKING", "on", "NOLOOP"), t.call("SET", "key1", "1"), t.call("GET", "key1")]
        out += [t.call("EVAL", "return redis.call('set', KEYS[1], '2')", "1", "key1"), t.call("GET", "key1")]
        out += [t.call("DEBUG", "SET-ACTIVE-EXPIRE", "0"), t.call("SET", "e", "1", "PX", "200"), t.call("GET", "e")]
        out += [t.call("DEBUG", "SLEEP", "0.25"), t.call("GET", "e"), t.call("SET", "e", "2")]
        out += [t.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")]
        return out + until_pong(t)

    both(raxdb, oracle, scenario)


def test_a_served_blocked_client_hears_after_its_reply(raxdb, oracle):
    """BLMOVE woken by a push moves the element onto a key its client tracks: the invalidation
    follows the BLMOVE's reply (afterCommand(receiver)), and the pusher hears nothing of it."""
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        out = [w.call("RPUSH", "list2", "a"), t.call("CLIENT", "TRACKING", "on"), t.call("LRANGE", "list2", "0", "-1")]
        tid = client_id(t)
        t.send(encode_command(("BLMOVE", "list1", "list2", "LEFT", "LEFT", "0")))
        wait_blocked(w, tid)
        out += [w.call("RPUSH", "list1", "foo"), t.read_frame(), t.read_frame()]
        return out + until_pong(t) + until_pong(w)

    both(raxdb, oracle, scenario)


def wait_blocked(w: RawConnection, cid: int) -> None:
    """Until client `cid` is blocked (its CLIENT LIST flags show b)."""
    for _ in range(100_000):
        line = w.call("CLIENT", "LIST", "ID", str(cid)).decode(errors="replace")
        if re.search(r"flags=\w*b", line):
            return
    raise AssertionError(f"client {cid} never blocked")


def test_eviction_invalidates(raxdb, oracle):
    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        w.call("SET", "k", "v")
        out = [t.call("GET", "k")]
        policy = w.call("CONFIG", "GET", "maxmemory-policy")
        w.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
        try:
            w.call("CONFIG", "SET", "maxmemory", "1")
            out.append(w.call("SET", "other", "v"))  # evicts k before it runs
        finally:
            w.call("CONFIG", "SET", "maxmemory", "0")
            w.call("CONFIG", "SET", "maxmemory-policy", policy.split(b"\r\n")[-2].decode())
        out.append(t.read_frame())
        return out

    both(raxdb, oracle, scenario)


# ---- flushes and redirection -------------------------------------------------------------------

def test_flush_sends_null(raxdb, oracle):
    def scenario(open_conn):
        t, other, w = open_conn(), open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on")
        other.call("CLIENT", "TRACKING", "on", "BCAST")
        t.call("GET", "a")
        out = pipeline(t, ("FLUSHDB",), ("PING",), replies=3)  # its own null after +OK
        out.append(other.read_frame())
        out.append(w.call("FLUSHALL", "SYNC"))
        out += [t.read_frame(), other.read_frame()]
        out.append(w.call("SET", "a", "1"))  # the flush emptied the table: no message for t
        out.append(other.read_frame())  # BCAST hears of it
        out.append(t.call("PING"))
        return out

    both(raxdb, oracle, scenario)


def test_redirect_to_resp2_pubsub_and_resp3(raxdb, oracle):
    def scenario(open_conn):
        sub, w = open_conn(2), open_conn()
        sub_id = client_id(sub)
        out = [sub.call("SUBSCRIBE", "__redis__:invalidate")]
        # RESP2: invalidations reach a subscribed connection as Pub/Sub messages
        t3 = open_conn(2)
        t3.call("CLIENT", "TRACKING", "on", "REDIRECT", str(sub_id))
        t3.call("GET", "r")
        out.append(w.call("SET", "r", "1"))
        out.append(sub.read_frame())
        out.append(t3.call("FLUSHALL"))
        out.append(sub.read_frame())  # the null of a RESP2 tracking client: $-1
        # RESP3 target
        target = open_conn()
        t4 = open_conn(2)
        t4.call("CLIENT", "TRACKING", "on", "REDIRECT", str(client_id(target)))
        t4.call("GET", "q")
        out.append(w.call("SET", "q", "1"))
        out.append(target.read_frame())
        # a RESP2 tracking client without a redirect is told nothing, but its keys are tracked
        t5 = open_conn(2)
        t5.call("CLIENT", "TRACKING", "on")
        t5.call("GET", "silent")
        out.append(w.call("SET", "silent", "1"))
        out.append(t5.call("PING"))
        return out

    both(raxdb, oracle, scenario)


def test_broken_redirect(raxdb, oracle):
    def scenario(open_conn):
        t, target, w = open_conn(), open_conn(), open_conn()
        tid = client_id(target)
        t.call("CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
        t.call("GET", "k")
        target.close()
        wait_gone(w, tid)
        out = [w.call("SET", "k", "1")]
        out.append(re.sub(rb":\d+\r\n$", b":ID\r\n", t.read_frame()))
        info = t.call("CLIENT", "TRACKINGINFO")
        out.append(re.sub(rb"redirect\r\n:\d+", b"redirect\r\n:ID", info))
        out.append(t.call("CLIENT", "GETREDIR") == b":%d\r\n" % _int_after(info))
        return out

    both(raxdb, oracle, scenario)


def _int_after(info: bytes) -> int:
    return int(re.search(rb"redirect\r\n:(\d+)", info).group(1))  # type: ignore[union-attr]


# ---- BCAST -------------------------------------------------------------------------------------

def test_bcast_prefixes(raxdb, oracle):
    def scenario(open_conn):
        b, n, w = open_conn(), open_conn(), open_conn()
        out = [b.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "job:")]
        out.append(n.call("CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "PREFIX", "user:"))
        # one event-loop iteration: each prefix's keys go out once, in byte order
        out += pipeline(w, ("SET", "user:b", "1"), ("SET", "user:a", "1"), ("SET", "job:1", "x"),
                        ("SET", "other", "x"), ("DEL", "user:b"), replies=5)
        out += [b.read_frame(), b.read_frame(), n.read_frame()]
        # NOLOOP: n's own change is left out, w's kept
        out += pipeline(n, ("SET", "user:mine", "1"), ("PING",), replies=2)
        out.append(b.read_frame())
        out += pipeline(w, ("MSET", "user:x", "1", "user:y", "2"), replies=1)
        out += [b.read_frame(), n.read_frame()]
        out += pipeline(n, ("SET", "user:only-mine", "1"), ("PING",), replies=2)
        out.append(b.read_frame())
        out.append(n.call("PING"))  # nothing left for n: its own change alone is not sent
        return out

    both(raxdb, oracle, scenario)


def test_bcast_without_prefix_hears_everything(raxdb, oracle):
    def scenario(open_conn):
        b, w = open_conn(), open_conn()
        b.call("CLIENT", "TRACKING", "on", "BCAST")
        out = pipeline(w, ("SET", "z", "1"), ("HSET", "h", "f", "v"), ("EXPIRE", "z", "100"), replies=3)
        out.append(b.read_frame())
        out.append(b.call("GET", "z"))  # reads are not remembered in BCAST mode
        return out

    both(raxdb, oracle, scenario)


# ---- counters and limits -----------------------------------------------------------------------

def test_info_counters_and_lifecycle(fresh):
    a, b = fresh

    def scenario(open_conn):
        t, bc, w = open_conn(), open_conn(), open_conn()
        out = [tracking_info(w)]
        t.call("CLIENT", "TRACKING", "on")
        bc.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b")
        t.call("MGET", "k1", "k2", "k3")
        out.append(tracking_info(w))
        w.call("SET", "k1", "v")
        t.read_frame()
        out.append(tracking_info(w))
        t.call("RESET")  # tracking off; its keys stay until they change
        bc.call("CLIENT", "TRACKING", "off")
        out.append(tracking_info(w))
        w.call("DEL", "k2")
        out.append(tracking_info(w))
        out.append(t.call("CLIENT", "TRACKINGINFO"))
        return out

    ours, theirs = _run(a.port, scenario), _run(b.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"


def test_a_disconnected_client_stops_tracking(fresh):
    a, b = fresh

    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        t.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p")
        t2 = open_conn()
        t2.call("CLIENT", "TRACKING", "on")
        t2.call("GET", "kept")
        out = [tracking_info(w)]
        for c in (t, t2):
            cid = client_id(c)
            c.close()
            wait_gone(w, cid)
        out.append(tracking_info(w))  # no clients, no prefixes; the key stays until it changes
        w.call("SET", "kept", "v")
        out.append(tracking_info(w))
        return out

    ours, theirs = _run(a.port, scenario), _run(b.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"


def test_table_limit_forgets_keys(fresh):
    a, b = fresh

    def scenario(open_conn):
        t, w = open_conn(), open_conn()
        w.call("CONFIG", "SET", "tracking-table-max-keys", "2")
        t.call("CLIENT", "TRACKING", "on")
        t.call("MGET", "a", "b", "c", "d", "e")
        # before PING runs, the table is cut back to 2 keys and t told of the 3 it forgot
        # (which ones: Redis picks at random, raxdb the longest remembered)
        frames = pipeline(t, ("PING",), replies=4)
        out = [[f if f == b"+PONG\r\n" else f[:21] for f in frames]]
        out.append(tracking_info(w)["tracking_total_keys"])
        return out

    ours, theirs = _run(a.port, scenario), _run(b.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    assert ours[-1] == "2"


def test_lowering_the_limit_forgets_keys_at_once(fresh):
    a, b = fresh

    def scenario(open_conn):
        t, w = open_conn(), open_conn(2)
        t.call("CLIENT", "TRACKING", "on")
        t.call("MGET", "a", "b", "c", "d", "e")
        out = [w.call("CONFIG", "SET", "tracking-table-max-keys", "2")]
        out.append(tracking_info(w)["tracking_total_keys"])  # the next command sees the table cut
        frames = [t.read_frame() for _ in range(3)]  # t is told of the three keys it may not cache
        out.append([f[:21] for f in frames])
        out.append(t.call("PING"))
        return out

    ours, theirs = _run(a.port, scenario), _run(b.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    assert ours[1] == "2"


def test_a_noloop_client_lowering_the_limit_is_told(fresh):
    """A NOLOOP client that lowers tracking-table-max-keys itself still hears of the keys the
    table forgets: Redis cuts the table once the CONFIG SET is over (serverCron), when no
    command is running, so NOLOOP spares no one (tracking.tcl's table key eviction test)."""
    a, b = fresh

    def scenario(open_conn):
        t, r = open_conn(), open_conn(2)
        rid = client_id(r)
        out = [r.call("SUBSCRIBE", "__redis__:invalidate")]
        out += [t.call("CLIENT", "TRACKING", "on", "REDIRECT", str(rid), "NOLOOP"), t.call("MSET", "k1", "1", "k2", "2")]
        out += [t.call("MGET", "k1", "k2"), t.call("CONFIG", "SET", "tracking-table-max-keys", "1")]
        frame = r.read_frame()  # Redis forgets a random key, raxdb the longest-remembered one
        out.append(frame.replace(b"k2", b"k1"))
        out += [t.call("CONFIG", "SET", "tracking-table-max-keys", "0")]
        return out

    ours, theirs = _run(a.port, scenario), _run(b.port, scenario)
    assert ours == theirs, f"\n  raxdb: {ours!r}\n  redis: {theirs!r}"
