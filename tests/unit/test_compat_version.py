"""compat-version (#59): the Redis generation a server answers as.

7.0 (the default) answers as redis-server 7.0.15 (the `diff` fixture's oracle): the commands and
arguments of later generations are unknown there.  7.2 and 7.4 answer as the newer oracle,
valkey-server 9.1 (tests/support/servers.py start_newer), in RESP2 and RESP3.  Valkey is not Redis
7.4: what these tests tolerate of it, and why, is listed in docs/compatibility.md ("compat-version"):
its HELLO names itself (server valkey, version 9.1.2), its CLIENT INFO has fields of its own
(capa=, watch=, tot-net-in= ...), its command table has its own commands and flags (allow_busy on
CLIENT SETINFO / NO-TOUCH, WAITAOF flagged blocking where Redis 7.2 flags it noscript).  So the
tests compare what the two agree on and leave those parts out, naming them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import raxdb.server.commands  # noqa: F401  (registers the handlers in TABLE)
from raxdb.server.table import metadata
from raxdb.server.table.registry import TABLE
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import ServerProcess, newer_pair, start_newer, start_raxdb

pytestmark = pytest.mark.oracle


# ---- the pair of the newer modes --------------------------------------------------------------
@pytest.fixture(scope="module")
def pair72() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with newer_pair() as pair:
        yield pair


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def diff72(request, pair72) -> Iterator[Diff]:
    """`diff` against the newer oracle, raxdb in 7.2 mode, both flushed."""
    for srv in pair72:
        c = RawConnection(srv.port)
        c.call("FLUSHALL")
        c.close()
    d = Diff(pair72[0].port, pair72[1].port, request.param)
    yield d
    d.close()


def _info_field(conn: RawConnection, section: str, name: str) -> str:
    text = parse(conn.call("INFO", section)).decode()
    return next(line.split(":", 1)[1] for line in text.splitlines() if line.startswith(name + ":"))


# CLIENT LIST / INFO's fields in Redis 7.2.4 (catClientInfoString): 7.0's, then lib-name, lib-ver
REDIS_72_CLIENT_FIELDS = [
    "id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi", "qbuf",
    "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user",
    "redir", "resp", "lib-name", "lib-ver"]


def _flat(x):
    """A parsed reply with RESP3 maps as RESP2's flat arrays, to read both alike."""
    if isinstance(x, dict):
        return [y for kv in x.items() for y in map(_flat, kv)]
    if isinstance(x, list):
        return [_flat(y) for y in x]
    return x


def _client_fields(line: bytes) -> dict[str, str]:
    return dict(f.split("=", 1) for f in parse(line).decode().split())


# ---- the gate and the versions -----------------------------------------------------------------
def test_the_table_of_a_generation_follows_since(monkeypatch):
    """The contract: a command whose COMMAND DOCS `since` is later than the generation is not in
    its table (nor its subcommands in their container's); a generation's changes replace the entry."""
    assert metadata.since("client|setinfo") == (7, 2, 0) and metadata.since("get") == (1, 0, 0)
    v70, v72 = TABLE.view((7, 0)), TABLE.view((7, 2))
    assert v70.lookup_name(b"waitaof") is None and v72.lookup_name(b"waitaof") is not None
    assert v70.lookup_name(b"client|no-touch") is None and v72.lookup_name(b"client|no-touch") is not None
    assert (v70.lookup_name(b"zrank").arity, v72.lookup_name(b"zrank").arity) == (3, -3)
    assert v70.lookup_name(b"get") is TABLE.lookup_name(b"get")  # unchanged: the same record
    assert len(v72.commands) == len(v70.commands) + 1  # WAITAOF
    # a 7.4 command (as HEXPIRE will be): absent from 7.2's table, present in 7.4's
    metadata.since("get")
    monkeypatch.setitem(metadata._SINCE, "get", (7, 4, 0))
    monkeypatch.setitem(metadata._SINCE, "client|getname", (7, 4, 0))
    v72, v74 = TABLE.view((7, 2)), TABLE.view((7, 4))
    assert v72.lookup_name(b"get") is None and b"get" not in v72.fast_dispatch
    assert v72.lookup_name(b"client|getname") is None and v72.lookup_name(b"client|setinfo") is not None
    assert v74.lookup_name(b"get") is not None and v74.lookup_name(b"client|getname") is not None


def test_versions_follow_the_generation(raxdb, pair72, tmp_path):
    """INFO, HELLO, Lua's REDIS_VERSION(_NUM) and an RDB's redis-ver say the generation's version."""
    v74 = start_raxdb("--compat-version", "7.4", "--dir", str(tmp_path))
    try:
        for srv, version in ((raxdb, "7.0.15"), (pair72[0], "7.2.4"), (v74, "7.4.1")):
            c = RawConnection(srv.port)
            assert _info_field(c, "server", "redis_version") == version
            hello = parse(c.call("HELLO", "2"))
            assert hello[hello.index(b"version") + 1] == version.encode()
            assert c.call("EVAL", "return redis.REDIS_VERSION", "0") == b"$%d\r\n%s\r\n" % (len(version), version.encode())
            major, minor, patch = map(int, version.split("."))
            assert c.call("EVAL", "return redis.REDIS_VERSION_NUM", "0") == b":%d\r\n" % (major << 16 | minor << 8 | patch)
            c.close()
        c = RawConnection(v74.port)
        assert c.call("SAVE") == b"+OK\r\n"
        c.close()
        with open(tmp_path / "dump.rdb", "rb") as f:
            assert b"\x09redis-ver\x057.4.1" in f.read(64)
        # valkey reports 7.2.4 as its redis_version too: the version the oracle and 7.2 agree on
        c = RawConnection(pair72[1].port)
        assert _info_field(c, "server", "redis_version") == "7.2.4"
        c.close()
    finally:
        v74.stop()


# ---- 7.0: exactly 7.0.15 -----------------------------------------------------------------------
def test_later_commands_are_unknown_in_7_0(diff):
    diff.script("""
        CLIENT SETINFO lib-name redis-py
        CLIENT SETINFO LIB-VER 1.0
        CLIENT NO-TOUCH on
        CLIENT HELP
        WAITAOF 0 0 0
        WAITAOF 1 0 0
        ZADD z 1 a
        ZRANK z a WITHSCORE
        ZREVRANK z a WITHSCORE
        ZRANK z a
        COMMAND INFO waitaof client|setinfo client|no-touch zrank zrevrank
        COMMAND DOCS waitaof client|setinfo client|no-touch zrank
        COMMAND GETKEYS WAITAOF 0 0 0
        COMMAND COUNT
    """)
    diff.unordered("COMMAND", "LIST", "FILTERBY", "PATTERN", "client*")
    diff.unordered("COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection")
    ours, theirs = diff.both("CLIENT", "INFO")
    assert list(_client_fields(ours)) == list(_client_fields(theirs))  # no lib-name= / lib-ver=


def test_reset_keeps_no_evict_in_7_0(diff):
    """7.0.15's RESET leaves CLIENT NO-EVICT on (7.2 clears it)."""
    diff("CLIENT", "NO-EVICT", "on")
    diff("RESET")
    ours, theirs = diff.both("CLIENT", "INFO")
    assert _client_fields(ours)["flags"] == _client_fields(theirs)["flags"] == "e"


def test_consumers_in_7_0(diff):
    """7.0.15: XCLAIM / XAUTOCLAIM that claim nothing create no consumer; XINFO's consumers have
    no active-time / inactive."""
    diff.script("""
        XADD s 1-1 f v
        XGROUP CREATE s g 0
        XCLAIM s g alice 0 1-1
        XAUTOCLAIM s g bob 0 0
        XREADGROUP GROUP g carol COUNT 1 STREAMS s >
    """)
    ours, theirs = diff.both("XINFO", "CONSUMERS", "s", "g")
    assert [c[::2] for c in _flat(parse(ours))] == [c[::2] for c in _flat(parse(theirs))] == [
        [b"name", b"pending", b"idle"]]
    ours, theirs = diff.both("XINFO", "STREAM", "s", "FULL")
    full = [_flat(parse(x)) for x in (ours, theirs)]
    consumers = [f[f.index(b"groups") + 1][0][-1] for f in full]
    assert [c[0][::2] for c in consumers][0] == [c[0][::2] for c in consumers][1]
    assert b"active-time" not in consumers[0][0]


# ---- 7.2 against the newer oracle --------------------------------------------------------------
def test_client_setinfo(diff72, pair72):
    diff72.script("""
        CLIENT SETINFO lib-name redis-py
        CLIENT SETINFO LIB-VER 5.0.1
        CLIENT SETINFO foo bar
        CLIENT SETINFO lib-name "a\\x20b"
        CLIENT SETINFO lib-ver "caf\\xc3\\xa9"
        CLIENT SETINFO lib-name
        CLIENT SETINFO lib-name a b
    """)
    diff72("CLIENT", "SETINFO", "lib-name", "x\ny")
    ours, theirs = (_client_fields(x) for x in diff72.both("CLIENT", "INFO"))
    assert (ours["lib-name"], ours["lib-ver"]) == (theirs["lib-name"], theirs["lib-ver"]) == ("redis-py", "5.0.1")
    assert list(ours) == REDIS_72_CLIENT_FIELDS  # Valkey's line has fields of its own: Redis 7.2.4's order
    diff72("RESET")  # lib-name and lib-ver describe the library, not the connection's state: kept
    ours, theirs = (_client_fields(x) for x in diff72.both("CLIENT", "INFO"))
    assert (ours["lib-name"], ours["lib-ver"]) == (theirs["lib-name"], theirs["lib-ver"]) == ("redis-py", "5.0.1")
    # a connection that never set them shows them empty, in CLIENT LIST too
    for srv in (diff72.ours, diff72.theirs):
        line = [ln for ln in parse(srv.call("CLIENT", "LIST")).decode().splitlines() if "cmd=client|list" in ln][0]
        assert " lib-name=redis-py lib-ver=5.0.1" in line
    for conn in (RawConnection(srv.port) for srv in pair72):
        info = _client_fields(conn.call("CLIENT", "INFO"))
        assert info["lib-name"] == info["lib-ver"] == ""
        conn.close()


def test_client_help_72(pair72):
    """Redis 7.2.4's CLIENT HELP: 7.0's with SETINFO and NO-TOUCH (Valkey's has more: not compared)."""
    conn = RawConnection(pair72[0].port)
    lines = parse(conn.call("CLIENT", "HELP"))
    conn.close()
    i = lines.index(b"SETNAME <name>")
    assert lines[i + 2:i + 6] == [b"SETINFO <option> <value>", b"    Set client meta attr. Options are:",
                                  b"    * LIB-NAME: the client lib name.", b"    * LIB-VER: the client lib version."]
    assert lines[-6:-2] == [b"NO-EVICT (ON|OFF)", b"    Protect current client connection from eviction.",
                          b"NO-TOUCH (ON|OFF)", b"    Will not touch LRU/LFU stats when this mode is on."]


def test_client_no_touch(diff72):
    """NO-TOUCH: the client's reads are no accesses (an LFU counter stays), TOUCH still is one;
    CLIENT INFO's flags show T; RESET turns it off (and NO-EVICT, as 7.2 does)."""
    diff72("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    # a log factor of 0 makes every access count (at 10 an increment past 6 is a 1-in-11 draw)
    diff72("CONFIG", "SET", "lfu-log-factor", "0")
    diff72("CONFIG", "SET", "lfu-decay-time", "0")  # nor a minute turning between two reads
    try:
        diff72.script("""
            SET k v
            OBJECT FREQ k
            CLIENT NO-TOUCH on
            GET k
            OBJECT FREQ k
            MULTI
            GET k
            EXEC
            EVAL "return redis.call('get', KEYS[1])" 1 k
            OBJECT FREQ k
            TOUCH k
            OBJECT FREQ k
            CLIENT NO-TOUCH off
            GET k
            OBJECT FREQ k
            CLIENT NO-TOUCH maybe
            CLIENT NO-TOUCH
        """)
        diff72("CLIENT", "NO-TOUCH", "on")
        diff72("CLIENT", "NO-EVICT", "on")
        ours, theirs = (_client_fields(x)["flags"] for x in diff72.both("CLIENT", "INFO"))
        assert ours == theirs == "eT"
        diff72("RESET")
        ours, theirs = (_client_fields(x)["flags"] for x in diff72.both("CLIENT", "INFO"))
        assert ours == theirs == "N"
    finally:
        diff72("CONFIG", "SET", "maxmemory-policy", "noeviction")
        diff72("CONFIG", "SET", "lfu-log-factor", "10")
        diff72("CONFIG", "SET", "lfu-decay-time", "1")


def test_zrank_withscore(diff72):
    diff72.script("""
        ZADD z 1 a 2.5 b -3 c 10 d
        ZRANK z a WITHSCORE
        ZRANK z b withscore
        ZREVRANK z c WITHSCORE
        ZREVRANK z d WITHSCORE
        ZRANK z nosuch WITHSCORE
        ZRANK nokey a WITHSCORE
        ZREVRANK nokey a WITHSCORE
        ZRANK z a
        ZRANK z a WITHSCORES
        ZRANK z a WITHSCORE extra
        ZREVRANK z a foo
        SET str v
        ZRANK str a WITHSCORE
        ZRANK str a
        COMMAND INFO zrank zrevrank
        COMMAND DOCS zrank zrevrank
    """)


SCORES = ["1.1", "0.3", "2.5", "-0.001", "1e20", "1e-7", "1.5e-7", "123456.789", "3", "-2", "0.1", "1e22",
          "12345678901234567890", "4611686018427387904", "9223372036854775807", "5e-324", "1.7976931348623157e308",
          "-inf", "inf", "0.000123", "1234567.125", "-0"]


def test_doubles_72(diff72):
    """7.2 prints doubles in their shortest exact form (d2string's fpconv), 7.0 with %.17g.  Not
    here: the rare doubles for which grisu2 finds no shortest form (1e23 prints as
    99999999999999990000000 there, 1e+23 in raxdb; docs/compatibility.md)."""
    for i, score in enumerate(SCORES):
        diff72("ZADD", "z", score, f"m{i}")
        diff72("ZSCORE", "z", f"m{i}")
    diff72("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff72("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES")
    diff72("ZMSCORE", "z", "m0", "m1", "nosuch")
    diff72("ZINCRBY", "z", "0.1", "m1")
    diff72("ZADD", "z", "INCR", "0.2", "m1")
    diff72("ZRANK", "z", "m0", "WITHSCORE")
    diff72.unordered("ZSCAN", "z", "0", "COUNT", "100")
    diff72("ZPOPMIN", "z", "3")
    diff72("ZADD", "small", "1.1", "a", "0.3", "b")  # a listpack
    diff72("ZRANGE", "small", "0", "-1", "WITHSCORES")
    diff72("ZSCAN", "small", "0")


def test_waitaof_without_aof(diff72):
    diff72.script("""
        WAITAOF 0 0 0
        SET k v
        WAITAOF 0 0 0
        WAITAOF 1 0 0
        WAITAOF 2 0 0
        WAITAOF -1 0 0
        WAITAOF x 0 0
        WAITAOF 0 -1 0
        WAITAOF 0 x 0
        WAITAOF 0 0 -1
        WAITAOF 0 0 x
        WAITAOF 0 0
        MULTI
        WAITAOF 0 0 0
        EXEC
    """)


def test_waitaof_with_aof():
    """With the AOF on, WAITAOF 1 0 counts the local fsync of the client's last write: everysec
    gets there within a second or two, `always` before the reply; a replica count nobody reaches
    times out with what was reached."""
    for policy in ("everysec", "always"):
        servers = [start_raxdb("--compat-version", "7.2", "--appendonly", "yes", "--appendfsync", policy),
                   start_newer("--appendonly", "yes", "--appendfsync", policy)]
        try:
            for proto in (2, 3):
                d = Diff(servers[0].port, servers[1].port, proto)
                d("SET", "k", "v")
                d("WAITAOF", "1", "0", "5000")
                d("INCR", "n")
                if policy == "always":  # on disk before the reply (everysec's: when the clock says)
                    d("WAITAOF", "1", "1", "100")  # no replica: times out with [1, 0]
                    d("WAITAOF", "0", "0", "0")
                else:
                    d("WAITAOF", "1", "0", "5000")
                d.close()
            c = RawConnection(servers[0].port)
            assert _info_field(c, "replication", "repl_backlog_active") == "1"  # 7.2: AOF on keeps one
            c.close()
        finally:
            for s in servers:
                s.stop()


def test_xinfo_consumer_times(diff72):
    """7.2's consumers: seen-time (the last attempt) and active-time (the last success, -1 before
    any); XINFO CONSUMERS' inactive; XCLAIM / XAUTOCLAIM create the consumer even when they claim
    nothing.  The times themselves are clock readings: compared as -1 or not."""
    diff72.script("""
        XADD s 1-1 f v
        XGROUP CREATE s g 0
        XGROUP CREATECONSUMER s g idle
        XCLAIM s g alice 0 1-1
        XAUTOCLAIM s g bob 0 0
        XREADGROUP GROUP g carol COUNT 1 STREAMS s >
    """)

    def shape(reply: bytes) -> list:
        out = []
        for c in _flat(parse(reply)):
            fields = dict(zip(c[::2], c[1::2], strict=True))
            out.append([c[::2], fields[b"name"], fields[b"pending"], fields[b"inactive"] == -1])
        return out

    ours, theirs = diff72.both("XINFO", "CONSUMERS", "s", "g")
    assert shape(ours) == shape(theirs)
    assert [row[1] for row in shape(ours)] == [b"alice", b"bob", b"carol", b"idle"]

    def full_shape(reply: bytes) -> list:
        f = _flat(parse(reply))
        f = dict(zip(f[::2], f[1::2], strict=True))
        out = []
        for cons in f[b"groups"][0][-1]:
            c = dict(zip(cons[::2], cons[1::2], strict=True))
            out.append([cons[::2], c[b"name"], c[b"active-time"] == -1, c[b"pel-count"]])
        return out

    ours, theirs = diff72.both("XINFO", "STREAM", "s", "FULL")
    assert full_shape(ours) == full_shape(theirs)
    assert full_shape(ours)[0][0] == [b"name", b"seen-time", b"active-time", b"pel-count", b"pending"]


def test_acl_log_72(diff72):
    """7.2's ACL LOG entries: entry-id (the server's count of entries made before, which ACL LOG
    RESET keeps), timestamp-created and timestamp-last-updated (clock readings: compared as such)."""
    diff72("ACL", "LOG", "RESET")
    ids = []
    for user in ("nobody", "nobody", "other"):
        diff72("AUTH", user, "wrong")
    for reply in diff72.both("ACL", "LOG"):
        entries = [dict(zip(e[::2], e[1::2], strict=True)) for e in _flat(parse(reply))]
        assert [list(e)[7:] for e in entries] == [[b"entry-id", b"timestamp-created", b"timestamp-last-updated"]] * 2
        assert [e[b"count"] for e in entries] == [1, 2]
        assert entries[1][b"timestamp-last-updated"] >= entries[1][b"timestamp-created"] > 1e12
        ids.append([e[b"entry-id"] - entries[1][b"entry-id"] for e in entries])
    assert ids[0] == ids[1] == [1, 0]


def test_new_commands_in_the_table(diff72):
    """COMMAND's entries of 7.2's commands, as far as Valkey keeps Redis 7.2's (its own flags on
    CLIENT SETINFO / NO-TOUCH and WAITAOF aside: arity and keys compared there)."""
    for name in ("client|setinfo", "client|no-touch", "waitaof"):
        ours, theirs = (parse(x)[0] for x in diff72.both("COMMAND", "INFO", name))
        assert ours[:2] == theirs[:2] and ours[3:6] == theirs[3:6]
    ours = set(parse(diff72.ours.call("COMMAND", "LIST")))
    assert {b"client|setinfo", b"client|no-touch", b"waitaof"} <= ours
    diff72("COMMAND", "DOCS", "client|no-touch", "client|setinfo")  # WAITAOF's: Valkey's summary says "primary" for "master"


def test_two_generations_in_one_process():
    """Servers in threads of one process keep their own tables (7.0's refuses what 7.2's serves)
    and their own RDB formats."""
    import raxdb

    with raxdb.serve(mode="thread") as old, raxdb.serve({"compat-version": "7.2"}, mode="thread") as new:
        a, b = RawConnection(old.port), RawConnection(new.port)
        assert a.call("WAITAOF", "0", "0", "0").startswith(b"-ERR unknown command 'WAITAOF'")
        assert b.call("WAITAOF", "0", "0", "0") == b"*2\r\n:0\r\n:0\r\n"
        assert a.call("CLIENT", "NO-TOUCH", "on").startswith(b"-ERR unknown subcommand 'NO-TOUCH'")
        assert b.call("CLIENT", "NO-TOUCH", "on") == b"+OK\r\n"
        assert parse(a.call("COMMAND", "COUNT")) + 1 == parse(b.call("COMMAND", "COUNT"))
        # and their own RDB formats: DUMP payloads of version 10 and 11, each read as its Redis reads them
        for conn in (a, b):
            conn.call("SET", "k", "v")
        old_payload, new_payload = parse(a.call("DUMP", "k")), parse(b.call("DUMP", "k"))
        assert (old_payload[-10], new_payload[-10]) == (10, 11)
        assert b.call("RESTORE", "k2", "0", old_payload) == b"+OK\r\n"
        assert a.call("RESTORE", "k2", "0", new_payload) == b"-ERR DUMP payload version or checksum are wrong\r\n"
        a.close()
        b.close()



def _display_texts(docs, path: str = "", out: dict | None = None) -> dict[str, tuple]:
    """argument path ("client|kill/filter/old-format") -> (its type, its display_text or None),
    from a COMMAND DOCS reply read flat (_flat)."""
    out = {} if out is None else out
    for i in range(0, len(docs), 2):
        name, entry = docs[i].decode(), docs[i + 1]
        fields = dict(zip(entry[::2], entry[1::2], strict=True))
        _arg_texts(fields.get(b"arguments", []), f"{path}{name}", out)
        _display_texts(fields.get(b"subcommands", []), "", out)
    return out


def _arg_texts(args, path: str, out: dict) -> None:
    for arg in args:
        fields = dict(zip(arg[::2], arg[1::2], strict=True))
        here = f"{path}/{fields[b'name'].decode()}"
        out[here] = (fields[b"type"], fields.get(b"display_text"))
        _arg_texts(fields.get(b"arguments", []), here, out)


def test_display_text_72(diff72):
    """COMMAND DOCS in 7.2 mode: every argument but a oneof or a block has a display_text (its
    name, or the old name 7.2 kept where it renamed one), as Valkey shows it; compared on the
    arguments both have with the same name and type (Valkey has arguments and commands of its own,
    and renamed XGROUP CREATE's entries-read)."""
    ours, theirs = (_display_texts(_flat(parse(x))) for x in diff72.both("COMMAND", "DOCS"))
    common = [p for p in ours.keys() & theirs.keys() if ours[p][0] == theirs[p][0]]
    assert len(common) > 1000
    assert {p: ours[p] for p in common} == {p: theirs[p] for p in common}
    assert ours["client|kill/filter/old-format"] == (b"string", b"ip:port")  # 7.0's ip:port, renamed
    assert ours["set/condition"] == (b"oneof", None)


# The entries Redis 7.2 changed (server/table/commands/7.2/docs, tools/gen_generation_docs.py) that
# Valkey 9.1 shows otherwise, each for a reason of Valkey's own; every other changed entry is
# compared whole.  Containers are compared through their subcommands: Redis lists those in its
# dict's order, raxdb sorted.
VALKEY_OWN_DOCS = {
    # its rewordings: "Redis" -> "server" / "Valkey", "master" -> "primary", grammar
    "reworded": "append bzpopmax cluster|count-failure-reports cluster|replicas cluster|replicate cluster|slaves "
                "command|list decrby dump flushdb hello incrbyfloat lolwut lpop ltrim migrate object|encoding "
                "object|freq object|idletime readonly readwrite replicaof restore restore-asking rpop rpushx "
                "slaveof swapdb xautoclaim xclaim xlen",
    # no longer deprecated in Valkey (no doc_flags, deprecated_since, replaced_by)
    "undeprecated": "brpoplpush cluster|slots georadius georadius_ro georadiusbymember georadiusbymember_ro "
                    "getset hmset psetex quit rpoplpush setex setnx substr zrangebylex zrangebyscore "
                    "zrevrange zrevrangebylex zrevrangebyscore",
    # arguments and history entries of Valkey 8 / 9 (BYPOLYGON, NOSCORES, ...) and of Redis 7.4
    # (CLIENT KILL's MAXAGE, XGROUP CREATE's entriesread: test_docs_changed_in_7_4)
    "later": "acl|getuser acl|setuser bgsave bitcount client|kill client|list cluster|setslot cluster|shards "
             "geosearch geosearchstore hscan script|debug set shutdown xgroup|create xinfo|consumers zscan",
}


def test_docs_changed_in_7_2(diff72):
    """COMMAND DOCS in 7.2 mode follows Redis 7.2.4 where it changed 7.0's entries (renamed and
    reshaped arguments, reworded summaries, history, complexity), as Valkey shows them."""
    changed = set(metadata.changes((7, 2)))
    own = {name for names in VALKEY_OWN_DOCS.values() for name in names.split()}
    assert own <= changed
    names = sorted(n for n in changed - own if n in TABLE.meta and TABLE.meta[n].subcommands == {} or "|" in n)
    assert len(names) > 250 and {"get", "psubscribe", "config|get", "bitop", "xadd"} <= set(names)
    diff72("COMMAND", "DOCS", *names)
    ours = _flat(parse(diff72.ours.call("COMMAND", "DOCS", "get", "client|kill")))
    assert ours[1][1] == b"Returns the string value of a key."  # 7.0: "Get the value of a key"
    assert _display_texts(ours)["client|kill/filter/old-format"] == (b"string", b"ip:port")


def test_no_display_text_in_7_0(diff):
    diff("COMMAND", "DOCS", "get", "client|kill", "sort", "migrate")


def test_docs_changed_in_7_4():
    """7.4's COMMAND DOCS entries over 7.2's (no 7.4 oracle to compare with): XGROUP CREATE's
    argument renamed entriesread; HSCAN keeps 7.2's entry, as raxdb does not serve NOVALUES."""
    import json

    def docs(version, container, name):
        meta = TABLE.view(version).meta[container]
        return json.dumps(meta.subcommands[name].docs if name else meta.docs)

    assert '"entries-read"' in docs((7, 2), "xgroup", "xgroup|create")
    assert '"entriesread"' in docs((7, 4), "xgroup", "xgroup|create")
    assert docs((7, 4), "hscan", "") == docs((7, 2), "hscan", "") and "NOVALUES" not in docs((7, 4), "hscan", "")
    assert "Get the value of a key" in docs((7, 0), "get", "")
    assert "Returns the string value of a key." in docs((7, 4), "get", "")
