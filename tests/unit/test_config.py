"""CONFIG GET / SET / RESETSTAT / REWRITE against redis-server 7.0, and options taking effect."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time

import pytest

from tests.support.diff import RawConnection, parse
from tests.support.servers import ROOT, ServerProcess, free_port, start_raxdb


def start_with_conf(conf: str, cwd: str, *extra: str) -> ServerProcess:
    """raxdb started as `raxdb-server /path/redis.conf --port N ...` (the file must come first)."""
    port = free_port()
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return ServerProcess([sys.executable, "-m", "raxdb.server", conf, "--port", str(port), *extra], port, cwd, "raxdb")


def as_dict(frame: bytes) -> dict[bytes, bytes]:
    """A CONFIG GET reply (RESP2 flat array or RESP3 map) as a dict."""
    v = parse(frame)
    if isinstance(v, dict):
        return v
    assert isinstance(v, list) and len(v) % 2 == 0, frame
    return {v[i]: v[i + 1] for i in range(0, len(v), 2)}


def get_both(diff, *patterns) -> dict[bytes, bytes]:
    ours, theirs = diff.both("CONFIG", "GET", *patterns)
    assert ours[:1] == theirs[:1]  # same reply type in this protocol
    a, b = as_dict(ours), as_dict(theirs)
    assert a == b, f"{patterns}\n raxdb: {a}\n redis: {b}"
    return a


@pytest.fixture
def restore(raxdb, oracle):
    """Records options to put back on both servers after the test."""
    saved: dict[str, bytes] = {}

    def keep(*names: str) -> None:
        c = RawConnection(raxdb.port)
        for n in names:
            saved[n] = as_dict(c.call("CONFIG", "GET", n))[n.encode()]
        c.close()

    yield keep
    for port in (raxdb.port, oracle.port):
        c = RawConnection(port)
        for n, v in saved.items():
            assert c.call("CONFIG", "SET", n, v) == b"+OK\r\n", n
        c.close()


# Options whose values legitimately differ between two live servers (ports, paths, how each
# was started) or that raxdb reports as an estimate.
INSTANCE_SPECIFIC = {b"port", b"dir", b"bind", b"logfile", b"pidfile", b"daemonize", b"save", b"appendonly",
                     b"enable-debug-command"}


def test_every_option_and_default(diff2):
    ours, theirs = diff2.both("CONFIG", "GET", "*")
    a, b = as_dict(ours), as_dict(theirs)
    assert set(a) == set(b)
    assert len(a) >= 190
    for name in a:
        if name not in INSTANCE_SPECIFIC:
            assert a[name] == b[name], name


def test_get_patterns(diff):
    get_both(diff, "maxmemory")
    get_both(diff, "maxmemory*")
    get_both(diff, "maxmemory*", "hz", "HZ", "hz")
    get_both(diff, "MAXMEMORY-POLICY")
    get_both(diff, "hash-max-ziplist-entries")  # an alias, named as asked
    get_both(diff, "hash-max-*-entries")  # aliases match globs too
    get_both(diff, "*max-*-entries*")
    get_both(diff, "nonexistent")
    get_both(diff, "nonexistent*")
    get_both(diff, "?z")
    get_both(diff, "[hz]z")
    get_both(diff, "slowlog-*", "*-max-len")
    diff("CONFIG", "GET")
    diff("CONFIG")




def test_unknown_subcommand(diff):
    diff("CONFIG", "FOO")
    diff("config", "foo", "bar")


SET_ERRORS = [
    ["hz", "abc"], ["HZ", "abc"], ["hz", "+5"], ["hz", "05"], ["hz", " 5"], ["hz", "-1"],
    ["hz", "9223372036854775808"], ["timeout", "-1"], ["maxclients", "0"], ["maxclients", "4294967296"],
    ["maxmemory", "abc"], ["maxmemory", "-1"], ["maxmemory", "1.5mb"], ["maxmemory", " 1"], ["maxmemory", "+1"],
    ["maxmemory", "1zb"], ["proto-max-bulk-len", "10"], ["proto-max-bulk-len", "9223372036854775808"],
    ["client-query-buffer-limit", "1000"], ["client-query-buffer-limit", ""],
    ["maxmemory-clients", "101%"], ["maxmemory-clients", "-1%"], ["maxmemory-clients", "x%"],
    ["appendonly", "maybe"], ["activerehashing", ""], ["loglevel", "foo"], ["maxmemory-policy", "lru"],
    ["appendfsync", "sometimes"], ["save", "100 1 abc"], ["save", "100"], ["save", "0 0"], ["save", "-1 1"],
    ["save", "   "], ["save", "100  1"], ["notify-keyspace-events", "abc"], ["notify-keyspace-events", "KEA!"],
    ["client-output-buffer-limit", "abc"], ["client-output-buffer-limit", "foo 1 2 3"],
    ["client-output-buffer-limit", "normal 1 2 x"], ["client-output-buffer-limit", "normal -1 2 3"],
    ["client-output-buffer-limit", "normal 0 0 0 foo 1 2 3"], ["oom-score-adj-values", "0 200"],
    ["oom-score-adj-values", "0 200 2001"], ["oom-score-adj-values", "0 200 x"], ["oom-score-adj-values", ""],
    ["latency-tracking-info-percentiles", "50 101"], ["latency-tracking-info-percentiles", "50 abc"],
    ["cluster-announce-hostname", "a_b"], ["proc-title-template", ""], ["proc-title-template", "{foo}"],
    ["slowlog-log-slower-than", "-2"], ["list-max-listpack-size", "2147483648"], ["active-expire-effort", "11"],
    ["hash-max-ziplist-entries", "abc"], ["HASH-MAX-ZIPLIST-entries", "-1"], ["lua-time-limit", "x"],
    ["activedefrag", "maybe"], ["repl-backlog-size", "0"], ["tls-port", "65536"],
    ["daemonize", "yes"], ["DAEMONIZE", "no"], ["databases", "1"], ["unixsocketperm", "700"],
    ["replicaof", "no one"], ["dir", "/tmp"], ["dbfilename", "x.rdb"],
    ["foo", "bar"], ["FOO", "bar"],
    ["hz", "10", "hz", "11"], ["hz", "10", "HZ", "11"], ["hz", "12", "foo", "1"],
    ["foo", "bar", "daemonize", "yes"], ["hz", "11", "daemonize", "yes", "foo", "bar"],
    ["hz", "abc", "daemonize", "yes"], ["daemonize", "yes", "hz", "abc"], ["hz", "12", "hz", "abc"],
    ["maxmemory", "1mb", "hz", "abc"], ["save", "100 1", "save", "200 2"],
    ["hz", "11", "maxclients"], ["hz"],
    # size_t options stop at LONG_MAX; a percent option reads a wrapped byte count as a percentage
    ["hll-sparse-max-bytes", "9223372036854775808"], ["stream-node-max-bytes", "18446744073709551615"],
    ["zset-max-listpack-value", "18446744073709551616"], ["auto-aof-rewrite-min-size", "9223372036854775808"],
    ["maxmemory-clients", "9223372036854775808"],
    # an alias is a config of its own in Redis 7.0: next to its primary it is no duplicate
    ["hash-max-listpack-entries", "1", "hash-max-ziplist-entries", "abc"],
    ["zset-max-listpack-entries", "x", "hash-max-listpack-entries", "1", "hash-max-ziplist-entries", "1"],
    ["replica-lazy-flush", "yes", "REPLICA-LAZY-FLUSH", "no"],
]


@pytest.mark.parametrize("args", SET_ERRORS, ids=lambda a: " ".join(a))
def test_set_errors(diff2, args):
    diff2("CONFIG", "SET", *args)


def test_set_is_atomic(diff, restore):
    restore("hz", "maxmemory", "maxmemory-policy")
    diff("CONFIG", "SET", "maxmemory", "1mb", "maxmemory-policy", "allkeys-lru", "hz", "abc")
    get_both(diff, "maxmemory", "maxmemory-policy", "hz")
    diff("CONFIG", "SET", "maxmemory", "2mb", "daemonize", "yes")
    get_both(diff, "maxmemory")
    diff("CONFIG", "SET", "maxmemory", "3mb", "maxmemory-policy", "allkeys-lfu", "hz", "20")
    get_both(diff, "maxmemory", "maxmemory-policy", "hz")


NORMALISED = [
    ("maxmemory", "1GB"), ("maxmemory", "1k"), ("maxmemory", "1Kb"), ("maxmemory", "k"),
    ("maxmemory", "99999999999999999999"), ("maxmemory", "18446744073709551615"),
    ("maxmemory", "9223372036854775808"), ("hz", "600"), ("hz", "0"), ("hz", "25"),
    ("appendfsync", "ALWAYS"), ("loglevel", "NOTICE"), ("activerehashing", "NO"),
    ("maxmemory-clients", "10%"), ("maxmemory-clients", "0%"), ("maxmemory-clients", "1mb"),
    ("save", "100 1 200 2"), ("save", "07 1"), ("save", ""),
    ("notify-keyspace-events", "KEA"), ("notify-keyspace-events", "Ex"), ("notify-keyspace-events", "KEAmn"),
    ("notify-keyspace-events", "ndtexzhsl$gmEK"), ("notify-keyspace-events", "K"), ("notify-keyspace-events", "g$"),
    ("notify-keyspace-events", ""),
    ("client-output-buffer-limit", "normal 1k 2K 3"), ("client-output-buffer-limit", "replica 1mb 2mb 30"),
    ("client-output-buffer-limit", "NORMAL 0 0 0 pubsub 1 2 3"), ("client-output-buffer-limit", ""),
    ("oom-score-adj-values", "-10 200 2000"), ("latency-tracking-info-percentiles", "50.5 99"),
    ("latency-tracking-info-percentiles", ""), ("list-max-listpack-size", "-6"),
    ("hash-max-ziplist-entries", "100"), ("lua-time-limit", "100"), ("slave-read-only", "no"),
    ("requirepass", ""), ("cluster-announce-hostname", "a-b.c"), ("proc-title-template", "{title} {port}"),
    ("slowlog-log-slower-than", "-1"),
    ("maxmemory-clients", "18446744073709551615"), ("repl-backlog-size", "1"), ("repl-backlog-size", "20000"),
    ("latency-tracking-info-percentiles", "0x10 1e1 .5"),
]


@pytest.mark.parametrize("name,value", NORMALISED, ids=lambda x: str(x))
def test_set_then_get(diff, restore, name, value):
    aliases = {"hash-max-ziplist-entries": "hash-max-listpack-entries", "lua-time-limit": "busy-reply-threshold",
               "slave-read-only": "replica-read-only"}
    restore(name)
    diff("CONFIG", "SET", name, value)
    get_both(diff, name)
    if name in aliases:  # the alias and its primary move together
        get_both(diff, aliases[name])


def test_set_alias_and_primary_together(diff, restore):
    restore("hash-max-listpack-entries")
    diff("CONFIG", "SET", "hash-max-listpack-entries", "100", "hash-max-ziplist-entries", "7")
    get_both(diff, "hash-max-listpack-entries", "hash-max-ziplist-entries")


def test_set_several(diff, restore):
    restore("hz", "maxmemory", "slowlog-max-len", "notify-keyspace-events")
    diff("CONFIG", "SET", "hz", "20", "maxmemory", "5mb", "slowlog-max-len", "64", "notify-keyspace-events", "Kx")
    get_both(diff, "hz", "maxmemory", "slowlog-max-len", "notify-keyspace-events")


def test_help_resetstat_rewrite_without_file(diff):
    diff("CONFIG", "HELP")
    diff("CONFIG", "HELP", "x")
    diff("CONFIG", "RESETSTAT", "x")
    diff("CONFIG", "RESETSTAT")
    diff("CONFIG", "REWRITE")
    diff("CONFIG", "REWRITE", "x")


def _info(conn: RawConnection, section: str) -> dict[str, str]:
    text = parse(conn.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if line and not line.startswith("#"))


def test_resetstat_clears_command_and_error_stats(raw):
    raw.call("GET", "a")
    raw.call("GET")  # rejected: arity
    raw.call("NOSUCHCOMMAND")
    assert _info(raw, "commandstats")
    assert _info(raw, "errorstats")
    assert raw.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
    stats = _info(raw, "commandstats")
    assert set(stats) <= {"cmdstat_config|resetstat", "cmdstat_info"}, stats
    assert "cmdstat_get" not in stats
    assert _info(raw, "errorstats") == {}
    s = _info(raw, "stats")
    assert s["total_error_replies"] == "0"
    assert s["keyspace_misses"] == "0"


def test_settings_take_effect(raxdb, restore):
    restore("hz", "slowlog-max-len")
    c = RawConnection(raxdb.port)
    assert c.call("CONFIG", "SET", "hz", "100") == b"+OK\r\n"
    assert _info(c, "server")["hz"] == "100"
    c.close()


ENCODING_OPTIONS = ("zset-max-listpack-entries", "zset-max-listpack-value", "hash-max-listpack-entries",
                    "hash-max-listpack-value", "set-max-intset-entries", "list-max-listpack-size",
                    "stream-node-max-entries", "stream-node-max-bytes")


def test_encoding_thresholds_take_effect_at_once(diff, restore):
    """CONFIG SET of an encoding threshold governs the next write (the parsed values are kept on
    the config object and refreshed by every change)."""
    restore(*ENCODING_OPTIONS)
    for name, value in (("zset-max-listpack-entries", "2"), ("zset-max-listpack-value", "3"),
                        ("hash-max-listpack-entries", "2"), ("hash-max-listpack-value", "3"),
                        ("set-max-intset-entries", "2"), ("list-max-listpack-size", "2"),
                        ("stream-node-max-entries", "2"), ("stream-node-max-bytes", "60")):
        diff("CONFIG", "SET", name, value)
    for args in (("ZADD", "z", "1", "a", "2", "b"), ("ZADD", "z", "3", "c"), ("ZADD", "y", "1", "long"),
                 ("HSET", "h", "a", "1", "b", "2"), ("HSET", "h", "c", "3"), ("HSET", "g", "long", "1"),
                 ("SADD", "s", "1", "2"), ("SADD", "s", "3"), ("RPUSH", "l", "a", "b", "c", "d", "e")):
        diff(*args)
    for key in "zyhgsl":
        diff("OBJECT", "ENCODING", key)
    for i in range(1, 8):
        diff("XADD", "x", f"{i}-1", "f", "v" * (i * 7))
    ours, theirs = diff.both("XINFO", "STREAM", "x")
    pos = ours.index(b"radix-tree-keys")
    assert ours[pos:pos + 25] == theirs[theirs.index(b"radix-tree-keys"):][:25]
    diff("CONFIG", "SET", "zset-max-listpack-entries", "128")
    diff("ZADD", "w", "1", "a", "2", "b", "3", "c")
    diff("OBJECT", "ENCODING", "w")


def test_requirepass_applies_to_new_connections(raxdb):
    admin = RawConnection(raxdb.port)
    try:
        assert admin.call("CONFIG", "SET", "requirepass", "s3cret") == b"+OK\r\n"
        assert admin.call("PING") == b"+PONG\r\n"  # already authenticated connections stay so
        other = RawConnection(raxdb.port)
        assert other.call("GET", "x") == b"-NOAUTH Authentication required.\r\n"
        assert other.call("AUTH", "s3cret") == b"+OK\r\n"
        assert other.call("PING") == b"+PONG\r\n"
        other.close()
    finally:
        assert admin.call("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
        admin.close()


def test_maxclients(raxdb, restore):
    restore("maxclients")
    admin = RawConnection(raxdb.port)
    original = parse(admin.call("CONFIG", "GET", "maxclients"))[1]
    try:
        n = len(parse(admin.call("CLIENT", "LIST")).splitlines())
        assert admin.call("CONFIG", "SET", "maxclients", str(n)) == b"+OK\r\n"
        extra = RawConnection(raxdb.port)
        assert extra.read_frame() == b"-ERR max number of clients reached\r\n"
        extra.close()
    finally:
        # on this connection: a new one could itself be refused while closes are in flight,
        # leaving the shared server full for every later test
        admin.call("CONFIG", "SET", "maxclients", original)
        admin.close()


def test_proto_max_bulk_len(diff2, restore):
    restore("proto-max-bulk-len")
    diff2("CONFIG", "SET", "proto-max-bulk-len", "1mb")
    ours, theirs = diff2.raw(b"*2\r\n$3\r\nGET\r\n$2000000\r\n")
    assert ours == theirs == b"-ERR Protocol error: invalid bulk length\r\n"


def _closed(conn: RawConnection) -> bool:
    """Read until the peer closes; True if it did (a timeout means it stayed open)."""
    try:
        while conn.sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_client_query_buffer_limit(raxdb, oracle, restore):
    restore("client-query-buffer-limit")
    for port in (raxdb.port, oracle.port):
        admin = RawConnection(port)
        assert admin.call("CONFIG", "SET", "client-query-buffer-limit", "1mb") == b"+OK\r\n"
        c = RawConnection(port, timeout=20)
        # a command that never ends, growing past the limit: the server closes the connection
        try:
            c.send(b"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n" + b"*1\r\n$1\r\nx" + b"x" * (2 * 1024 * 1024))
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we were still sending: that is the point
        assert _closed(c), port
        c.close()
        admin.close()


def test_bind_failure_keeps_listening(diff2, restore):
    restore("bind")
    diff2("CONFIG", "SET", "bind", "192.0.2.1")  # TEST-NET address: not on this host
    diff2("PING")


@pytest.fixture(scope="module")
def own_server():
    """A raxdb of this module's own, for settings that would disturb the shared one."""
    srv = start_raxdb("--enable-protected-configs", "yes")
    yield srv
    srv.stop()


def test_timeout_closes_idle_clients(own_server):
    admin = RawConnection(own_server.port)
    assert admin.call("CONFIG", "SET", "timeout", "1") == b"+OK\r\n"
    admin.close()
    try:
        idle = RawConnection(own_server.port, timeout=30)
        assert idle.call("PING") == b"+PONG\r\n"
        assert _closed(idle)  # the cron closes it once it has been idle for more than a second
        idle.close()
    finally:
        fresh = RawConnection(own_server.port)
        assert fresh.call("CONFIG", "SET", "timeout", "0") == b"+OK\r\n"
        fresh.close()


def test_protected_configs_when_enabled(own_server):
    c = RawConnection(own_server.port)
    here = as_dict(c.call("CONFIG", "GET", "dir"))[b"dir"]
    target = tempfile.mkdtemp(prefix="raxdb-dir-")
    try:
        assert c.call("CONFIG", "SET", "dir", target) == b"+OK\r\n"
        assert as_dict(c.call("CONFIG", "GET", "dir"))[b"dir"] == os.path.realpath(target).encode()
        assert c.call("CONFIG", "SET", "dir", "/nonexistent/raxdb") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory\r\n")
        assert c.call("CONFIG", "SET", "dbfilename", "x.rdb") == b"+OK\r\n"
    finally:
        assert c.call("CONFIG", "SET", "dir", here, "dbfilename", "dump.rdb") == b"+OK\r\n"
        c.close()


def test_port_change_moves_the_listener():
    srv = start_raxdb()
    try:
        new_port = free_port()
        c = RawConnection(srv.port)
        assert c.call("CONFIG", "SET", "port", str(new_port)) == b"+OK\r\n"
        assert c.call("PING") == b"+PONG\r\n"  # existing connections stay
        moved = RawConnection(new_port)
        assert moved.call("CONFIG", "GET", "port") == b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (
            len(str(new_port)), new_port)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = busy.getsockname()[1]
        assert moved.call("CONFIG", "SET", "port", str(taken)) == (
            b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. "
            b"Check server logs.\r\n")
        # With other options around it, the error still names the one whose apply failed, and every
        # option is rolled back (introspection.tcl's "CONFIG SET rollback on apply error").
        before = [moved.call("CONFIG", "GET", n) for n in ("maxmemory", "client-query-buffer-limit")]
        assert moved.call("CONFIG", "SET", "maxmemory", "10000001", "port", str(taken),
                          "client-query-buffer-limit", "10m").startswith(
            b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen")
        assert [moved.call("CONFIG", "GET", n) for n in ("maxmemory", "client-query-buffer-limit")] == before
        busy.close()
        assert RawConnection(new_port).call("PING") == b"+PONG\r\n"
        srv.port = new_port
        moved.close()
        c.close()
    finally:
        srv.stop()


REWRITE_CONF = """# a comment that must survive
port {port}
hz 15{trailing}
save 900 1
save 300 10
Maxmemory 10mb
include {include}
rename-command DEBUG ""
loglevel verbose
timeout 0
"""


def test_rewrite_with_config_file():
    d = tempfile.mkdtemp(prefix="raxdb-rw-")
    inc = os.path.join(d, "inc.conf")
    with open(inc, "w") as fh:
        fh.write("slowlog-max-len 99\n")
    conf = os.path.join(d, "redis.conf")
    port = free_port()
    with open(conf, "w") as fh:
        fh.write(REWRITE_CONF.format(port=port, include=inc, trailing="   "))
    srv = start_with_conf(conf, d)
    try:
        # --port on the command line comes after the file's `port` line: the command line wins
        c = RawConnection(srv.port)
        assert as_dict(c.call("CONFIG", "GET", "hz", "maxmemory", "slowlog-max-len", "save", "loglevel")) == {
            b"hz": b"15", b"maxmemory": b"10485760", b"slowlog-max-len": b"99", b"save": b"900 1 300 10",
            b"loglevel": b"verbose"}
        assert c.call("CONFIG", "SET", "hz", "20", "maxmemory", "0", "save", "100 2", "loglevel", "notice",
                      "client-output-buffer-limit", "pubsub 1mb 2mb 3", "notify-keyspace-events", "KEA",
                      "requirepass", "a b") == b"+OK\r\n"
        assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
        with open(conf) as fh:
            text = fh.read()
        lines = text.splitlines()
        assert lines[0] == "# a comment that must survive"
        assert "hz 20" in lines and "hz 15   " not in lines
        assert "save 100 2" in lines and "save 300 10" not in lines and "save 900 1" not in lines
        assert "maxmemory 0" in lines
        assert f"include {inc}" in lines and 'rename-command DEBUG ""' in lines
        assert "loglevel notice" in lines and "timeout 0" in lines
        tail = lines[lines.index("# Generated by CONFIG REWRITE"):]
        assert "client-output-buffer-limit pubsub 1mb 2mb 3" in tail
        assert 'notify-keyspace-events "AKE"' in tail
        assert 'requirepass "a b"' in tail
        c.close()
    finally:
        srv.stop()
    # the rewritten file starts a server with the same settings
    again = start_with_conf(conf, d)
    try:
        c = RawConnection(again.port)
        assert c.call("AUTH", "a b") == b"+OK\r\n"
        assert as_dict(c.call("CONFIG", "GET", "hz", "save", "client-output-buffer-limit")) == {
            b"hz": b"20", b"save": b"100 2",
            b"client-output-buffer-limit": b"normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 3"}
        c.close()
    finally:
        again.stop()


def test_hidden_configs_answer_only_to_their_exact_names(diff):
    """Redis's HIDDEN_CONFIG options (test-suite knobs): CONFIG GET finds them by exact name, in
    any case, never by a pattern; CONFIG SET checks them like any option."""
    for name in ("key-load-delay", "rdb-key-save-delay", "watchdog-period", "use-exit-on-panic",
                 "loading-process-events-interval-bytes", "KEY-LOAD-DELAY"):
        diff("CONFIG", "GET", name)
    for pattern in ("*key-load*", "*delay*", "w*", "use-*", "loading-*"):
        ours, theirs = (parse(r) for r in diff.both("CONFIG", "GET", pattern))
        pairs = [sorted(r.items()) if isinstance(r, dict) else sorted(zip(r[::2], r[1::2], strict=True)) for r in (ours, theirs)]
        assert pairs[0] == pairs[1], pattern
    for name, value in (("key-load-delay", "5"), ("rdb-key-save-delay", "x"), ("watchdog-period", "-1"),
                        ("loading-process-events-interval-bytes", "10"), ("use-exit-on-panic", "maybe")):
        diff("CONFIG", "SET", name, value)
        diff("CONFIG", "GET", name)
    diff("CONFIG", "SET", "key-load-delay", "0")


def test_oom_score_adj_sets_the_process_score(fresh):
    """unit/oom-score-adj: the score in /proc follows oom-score-adj-values for the role (relative
    to the score before, or absolute), a BGSAVE child takes the third value, and turning it off
    restores the score the process had; the same sequence on redis-server gives the same scores."""
    from tests.support.diff import Diff

    ours, theirs = fresh
    d = Diff(ours.port, theirs.port, 2)

    def scores(pid_of=lambda s: s.proc.pid) -> list[int]:
        return [int(open(f"/proc/{pid_of(s)}/oom_score_adj").read()) for s in (ours, theirs)]

    def set_scores(value: int) -> None:
        for s in (ours, theirs):
            with open(f"/proc/{s.proc.pid}/oom_score_adj", "w") as f:
                f.write(f"{value}\n")

    def child(s) -> int:
        path = f"/proc/{s.proc.pid}/task/{s.proc.pid}/children"
        deadline = time.monotonic() + 10
        while not open(path).read().split():
            assert time.monotonic() < deadline, "no BGSAVE child"
            time.sleep(0.02)
        return int(open(path).read().split()[0])

    seen = [scores()]
    d("CONFIG", "SET", "oom-score-adj-values", "10 20 30")
    d("CONFIG", "SET", "oom-score-adj", "yes")
    seen.append(scores())
    d("REPLICAOF", "localhost", "1")
    seen.append(scores())
    d("REPLICAOF", "NO", "ONE")
    seen.append(scores())
    d("SET", "k", "v")
    d("CONFIG", "SET", "rdb-key-save-delay", "1000000")
    d("BGSAVE")
    child_pids = {s.port: child(s) for s in (ours, theirs)}
    deadline = time.monotonic() + 10  # the child sets its score as it starts
    while scores(lambda s: child_pids[s.port]) != [30, 30] and time.monotonic() < deadline:
        time.sleep(0.02)
    seen.append(scores(lambda s: child_pids[s.port]))
    d("CONFIG", "SET", "rdb-key-save-delay", "0")
    d("FLUSHALL")  # ends the child
    d("CONFIG", "SET", "oom-score-adj", "no")
    seen.append(scores())
    set_scores(22)
    d("CONFIG", "SET", "oom-score-adj-values", "9 9 9", "oom-score-adj", "relative")
    seen.append(scores())
    d("CONFIG", "SET", "oom-score-adj", "absolute")
    seen.append(scores())
    d("CONFIG", "SET", "oom-score-adj", "no")
    seen.append(scores())
    assert [a for a, _ in seen] == [b for _, b in seen]
    base = seen[0][0]
    assert [a for a, _ in seen] == [base, base + 10, base + 20, base + 10, base + 30, base, 31, 9, 22]


def test_shutdown_on_signal_options_take_flags(diff):
    """shutdown-on-sigint / -sigterm are enums of flags, several at once (raxdb took one word)."""
    try:
        for value in ("nosave now", "now nosave", "default now", "NOW force", "save nosave", "", "bogus",
                      "default"):
            diff("CONFIG", "SET", "shutdown-on-sigterm", value)
            diff("CONFIG", "GET", "shutdown-on-sigterm")
        diff("CONFIG", "SET", "shutdown-on-sigint", "save force")
        diff("CONFIG", "GET", "shutdown-on-sigint")
    finally:
        diff.both("CONFIG", "SET", "shutdown-on-sigterm", "default", "shutdown-on-sigint", "default")


def test_debug_config_rewrite_force_all_round_trips():
    """DEBUG CONFIG-REWRITE-FORCE-ALL writes every option, defaults too, and a server starts from
    that file with the same configuration (Redis's 'CONFIG REWRITE sanity'; raxdb lacked it)."""
    d = tempfile.mkdtemp(prefix="raxdb-rwall-")
    conf = os.path.join(d, "redis.conf")
    with open(conf, "w") as fh:
        fh.write(f"port {free_port()}\nenable-debug-command yes\n")
    srv = start_with_conf(conf, d)
    try:
        c = RawConnection(srv.port)
        assert c.call("CONFIG", "SET", "shutdown-on-sigterm", "nosave now") == b"+OK\r\n"
        assert c.call("DEBUG", "CONFIG-REWRITE-FORCE-ALL") == b"+OK\r\n"
        before = as_dict(c.call("CONFIG", "GET", "*"))
        c.close()
    finally:
        srv.stop()
    with open(conf) as fh:
        lines = fh.read().splitlines()
    assert "shutdown-on-sigterm nosave now" in lines and "hz 10" in lines and "maxclients 10000" in lines
    again = start_with_conf(conf, d)
    try:
        c = RawConnection(again.port)
        after = as_dict(c.call("CONFIG", "GET", "*"))
        c.close()
    finally:
        again.stop()
    apart = (b"dir", b"port")  # start_with_conf gives each start its own port
    assert {k: v for k, v in after.items() if k not in apart} == {k: v for k, v in before.items() if k not in apart}
