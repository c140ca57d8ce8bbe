"""Modules and data start-up leaves to their first use (#56).

hashlib and hmac (a password's hash and comparison, a script's SHA1: server/security/acl.py,
server/table/scriptflags.py), glob (an `include` with wildcards: server/config/options.py) and the
idna codec (a `bind` host name given as str: server/core.py resolves ASCII names as bytes) are not
imported by a server's start (hashlib and hmac come once it serves, after the idle imports of the
command families: server/main.py's `_ready`). Nor, with no AOF, no dump file and no replicaof, are
the AOF loader, the replica side and the RDB format (server/core.py, server/persistence/
snapshot.py's `rdb_format`), nor are the command table's JSON trees decoded
(server/table/infoheads.py holds what start-up reads), nor is the memory account
(server/memory/overhead.py, a first INFO memory or MEMORY STATS) or the dataclasses module (the
configuration's option rows are a plain class), nor base/interfaces.py (declarations for the type
checker: not even once every family is imported), nor is one of listpack's small integer entries
made before a value needs it, nor, compiled, ctypes (protocol/hiredis_limits.py reads the hiredis
reader's struct with C loads; the heap policy imports ctypes once the server serves). Nor any
command family (MULTI's and CLIENT's hooks are events/watch.py's and events/tracking.py's), the
DEBUG test controls (the first DEBUG imports them), or the list, sorted-set and set types' modules
(their families'; a blocked key's write takes their classes from sys.modules, an AOF rewrite imports
set_type), nor is a module-level regular expression compiled (server/base/lazyre.py), nor one of
protocol/reply.py's tables made (the first reply that reads one makes it), nor the json module
imported (the option table is server/config/optiontable.py, generated from config_defaults.json; the
command table's trees import json on first use). What must hold: a started server has not imported
or decoded them, and their first use gives what they gave at once (the same hashes on the first call
and on later ones; a host name, not only an address, binds; a SAVE that a restart loads, an AOF
turned on by CONFIG SET, a replica of redis-server, COMMAND INFO and DOCS as redis-server's; a first
float argument, transaction, tracking client or blocked pop as redis-server's).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster import until
from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import free_port, start_raxdb, start_redis

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("hashlib", "hmac", "glob", "encodings.idna", "json", "copy", "raxdb.server.persistence.aofload",
        "raxdb.server.persistence.aofmanifest", "raxdb.server.replication.replica", "raxdb.storage.rdb",
        "raxdb.storage.rdbwalk", "dataclasses", "raxdb.server.memory.overhead", "raxdb.server.base.interfaces",
        # every command family (MULTI's and CLIENT's among them), and the DEBUG test controls
        "raxdb.server.commands.t_multi", "raxdb.server.commands.t_client", "raxdb.server.commands.t_config",
        "raxdb.server.commands.t_testclock", "raxdb.server.commands.t_testcluster",
        "raxdb.server.commands.t_testfaults", "raxdb.server.commands.testcontrols",
        # the list, sorted-set and set types' modules (their families', and a blocked key's first
        # write, an AOF rewrite's first set)
        "raxdb.storage.quicklist", "raxdb.storage.zset", "raxdb.storage.set_type", "raxdb.storage.intset",
        "raxdb.storage.hashscan")
# The module-level regular expressions compiled on first use (server/base/lazyre.py), by module
PATTERNS = {"raxdb.server.base.numparse": ("_FLOAT_RX", "_INT_PREFIX_RX"),
            "raxdb.server.conn.clientbufs": ("_BIG_HEADER",), "raxdb.server.config.options": ("_OCTAL",),
            "raxdb.server.net.tls": ("_SSL_TEXT",), "raxdb.server.scripting.functions": ("_NAME_OK",)}

# reply.py's tables by their first entry (made by their first use: no reply is written before the
# first command)
REPLY_TABLES = {b":-1\r\n": "reply.small_ints", b"$0\r\n": "reply.bulk_headers", b"\r\n$0\r\n": "reply._bulk_seps",
                b"*0\r\n": "reply._array_headers"}

# A server started as main() starts one (a config from argv, the listeners bound), the modules
# imported once it serves, and then the first use of each lazy import, in the same interpreter.
_PROBE = r"""
import os, sys
from raxdb.server.main import main

def ready():
    serving = sorted(m for m in sys.modules if m in LAZY)
    from raxdb.server.table import metadata
    serving += sorted(metadata._GROUP_INFOS) + sorted(metadata._DOCS)  # the trees decoded
    # listpack's small integer entries made (interpreted: compiled, the list is a C global)
    entries = getattr(sys.modules["raxdb.storage.listpack"], "SMALL_INT_ENTRIES", [])
    serving += [f"entry {i - 4096}" for i, e in enumerate(entries) if e is not None]
    # the regular expressions compiled (each module is imported: an unimported one would be a
    # KeyError here, and the list below names every one)
    serving += [f"{m}.{p}" for m, names in PATTERNS.items() for p in names
                if getattr(sys.modules[m], p)._compiled is not None]
    # reply.py's tables (C globals compiled): found among the collector's objects, unfrozen first
    import gc
    gc.unfreeze()
    serving += [REPLY_TABLES[o[0]] for o in gc.get_objects()
                if type(o) is list and len(o) in (10002, 4096, 1024) and type(o[0]) is bytes and o[0] in REPLY_TABLES]
    import json  # after the look at sys.modules: json is one of LAZY
    from raxdb.server.security.acl import User, hash_password
    from raxdb.server.table.scriptflags import sha1hex
    first = [sha1hex(b"return 1").decode(), hash_password(b"secret").decode()]
    again = [sha1hex(b"return 1").decode(), hash_password(b"secret").decode()]
    print(json.dumps({"serving": serving, "first": first, "again": again}), flush=True)
    os._exit(0)

main(["--port", sys.argv[1], "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], on_ready=ready)
"""


def test_start_up_leaves_them_and_first_use_imports_them(tmp_path):
    code = f"LAZY = {LAZY!r}\nPATTERNS = {PATTERNS!r}\nREPLY_TABLES = {REPLY_TABLES!r}\n{_PROBE}"
    out = subprocess.run([sys.executable, "-c", code, str(free_port())], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["serving"] == []
    expected = [hashlib.sha1(b"return 1").hexdigest(), hashlib.sha256(b"secret").hexdigest()]
    assert seen["first"] == expected and seen["again"] == expected


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_first_password_and_script_after_start():
    """requirepass on the command line (hashed while the configuration loads), AUTH against it,
    and a script's SHA1 (EVAL then EVALSHA of the same body) in a server started afresh."""
    srv = start_raxdb("--requirepass", "s3cret")
    try:
        c = RawConnection(srv.port)
        assert c.call("AUTH", "wrong").startswith(b"-WRONGPASS")
        assert parse(c.call("AUTH", "s3cret")) == b"OK"
        assert parse(c.call("EVAL", "return 7", "0")) == 7
        sha = hashlib.sha1(b"return 7").hexdigest()
        assert parse(c.call("SCRIPT", "EXISTS", sha)) == [1]
        assert parse(c.call("EVALSHA", sha, "0")) == 7
        c.close()
    finally:
        srv.stop()


def test_bind_by_host_name():
    """`bind localhost`: a name, resolved as bytes (no idna codec), binds as an address does."""
    srv = start_raxdb(bind="localhost")
    try:
        with socket.create_connection(("localhost", srv.port), timeout=30) as s:  # whichever it resolved to
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            assert s.recv(16) == b"+PONG\r\n"
    finally:
        srv.stop()


# ---- the persistence and replication modules, and the command table's trees, on first use ----
def _info(c: RawConnection, section: str) -> dict[str, str]:
    text = parse(c.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_option_table_is_up_to_date():
    """server/config/optiontable.py is what tools/gen_option_table.py makes of config_defaults.json
    (the configuration's rows at start, no json module imported)."""
    out = subprocess.run([sys.executable, "tools/gen_option_table.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr


def test_infoheads_is_up_to_date():
    """server/table/infoheads.py is what tools/gen_infoheads.py makes of today's JSON files."""
    out = subprocess.run([sys.executable, "tools/gen_infoheads.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_first_save_is_loaded_by_a_restart():
    """A fresh server's first SAVE (the RDB format imported by it) writes what a restart loads;
    the restart's load imports it at start-up, and DEBUG RELOAD's save and load work after."""
    srv = start_raxdb()
    try:
        c = RawConnection(srv.port)
        assert parse(c.call("RPUSH", "l", "a", "b")) == 2 and parse(c.call("SET", "s", "v")) == b"OK"
        assert parse(c.call("SAVE")) == b"OK"
        c.close()
        srv.stop()
        srv = srv.restarted()
        c = RawConnection(srv.port)
        assert parse(c.call("GET", "s")) == b"v" and parse(c.call("LRANGE", "l", "0", "-1")) == [b"a", b"b"]
        assert parse(c.call("DEBUG", "RELOAD")) == b"OK" and parse(c.call("GET", "s")) == b"v"
        c.close()
    finally:
        srv.stop()


def test_appendonly_set_at_run_time_writes_an_aof(tmp_path):
    """CONFIG SET appendonly yes in a server started with it off (no AOF loader imported at start)
    rewrites the dataset into an AOF and appends to it; a restart with appendonly yes loads both."""
    srv = start_raxdb(cwd=str(tmp_path))
    try:
        c = RawConnection(srv.port)
        assert parse(c.call("SET", "before", "1")) == b"OK"
        assert parse(c.call("SADD", "set", "1", "2", "x")) == 3  # the rewrite's first set (set_type, #56)
        assert parse(c.call("CONFIG", "SET", "appendonly", "yes")) == b"OK"
        until("the first rewrite", lambda: _info(c, "persistence")["aof_rewrite_in_progress"] == "0"
              and _info(c, "persistence")["aof_enabled"] == "1")
        assert parse(c.call("SET", "after", "2")) == b"OK"
        c.close()
        assert any(name.endswith(".manifest") for name in os.listdir(tmp_path / "appendonlydir"))
        srv.stop()
        srv = start_raxdb("--appendonly", "yes", cwd=str(tmp_path))
        c = RawConnection(srv.port)
        assert parse(c.call("MGET", "before", "after")) == [b"1", b"2"]
        assert sorted(parse(c.call("SMEMBERS", "set"))) == [b"1", b"2", b"x"]
        c.close()
    finally:
        srv.stop()


def test_replica_of_redis_server_from_the_command_and_the_config():
    """REPLICAOF (the replica side imported by the command) and `replicaof` at start-up (imported
    by the start) both sync from a real redis-server."""
    master = start_redis()
    replicas = []
    try:
        m = RawConnection(master.port)
        assert parse(m.call("SET", "k", "from-master")) == b"OK"
        replicas.append(start_raxdb())
        replicas.append(start_raxdb("--replicaof", "127.0.0.1", str(master.port)))
        c = RawConnection(replicas[0].port)
        assert parse(c.call("REPLICAOF", "127.0.0.1", str(master.port))) == b"OK"
        c.close()
        for srv in replicas:
            c = RawConnection(srv.port)
            until("the link up", lambda c=c: _info(c, "replication").get("master_link_status") == "up")
            until("the key", lambda c=c: parse(c.call("GET", "k")) == b"from-master")
            c.close()
        m.close()
    finally:
        for srv in replicas:
            srv.stop()
        master.stop()


def test_command_info_and_docs_first_use_match_redis():
    """A fresh server's first COMMAND INFO and DOCS (the trees decoded then) answer as
    redis-server's, in RESP2 and RESP3; COMMAND COUNT and LIST as the table holds them."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        for proto in ("2", "3"):
            a, b = RawConnection(ours.port), RawConnection(theirs.port)
            a.call("HELLO", proto)
            b.call("HELLO", proto)
            for args in (("COMMAND", "INFO", "get", "set", "client|kill", "xadd", "config|get", "nosuch"),
                         ("COMMAND", "DOCS", "get", "client|kill", "sort", "migrate", "zadd"),
                         ("COMMAND", "INFO", "georadius_ro", "eval", "object|encoding")):
                assert a.call(*args) == b.call(*args), args
            a.close()
            b.close()
        fresh = start_raxdb()
        try:
            c = RawConnection(fresh.port)
            names = parse(c.call("COMMAND", "LIST"))
            assert parse(c.call("COMMAND", "COUNT")) == len([n for n in names if b"|" not in n])
            c.close()
        finally:
            fresh.stop()
    finally:
        ours.stop()
        theirs.stop()


def test_first_info_memory_and_memory_stats():
    """A fresh server's first INFO memory and MEMORY STATS (the memory account imported by them)
    name the fields redis-server's do, in its order."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        a, b = RawConnection(ours.port), RawConnection(theirs.port)
        mine, redis = _info(a, "memory"), _info(b, "memory")
        assert {"used_memory", "used_memory_overhead", "used_memory_startup", "used_memory_dataset"} <= set(mine)
        assert set(mine) == set(redis), set(mine) ^ set(redis)
        stats = parse(a.call("MEMORY", "STATS"))
        fields = dict(zip(stats[::2], stats[1::2], strict=True))
        names = parse(b.call("MEMORY", "STATS"))[::2]
        assert list(fields) == names
        assert fields[b"overhead.total"] > 0 and int(mine["used_memory_overhead"]) > 0
        a.close()
        b.close()
    finally:
        ours.stop()
        theirs.stop()


def test_config_get_all_in_a_fresh_server_matches_redis():
    """The option rows (a plain class, not a dataclass): a fresh server's CONFIG GET * names every
    option redis-server's does, with its default value where the two servers were started alike."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        a, b = RawConnection(ours.port), RawConnection(theirs.port)
        mine, redis = parse(a.call("CONFIG", "GET", "*")), parse(b.call("CONFIG", "GET", "*"))
        mine_d, redis_d = dict(zip(mine[::2], mine[1::2], strict=True)), dict(zip(redis[::2], redis[1::2], strict=True))
        assert set(mine_d) == set(redis_d), set(mine_d) ^ set(redis_d)
        for name in (b"maxmemory-policy", b"hz", b"list-max-listpack-size", b"client-output-buffer-limit", b"save"):
            assert mine_d[name] == redis_d[name], name
        assert a.call("CONFIG", "SET", "hz", "0") == b.call("CONFIG", "SET", "hz", "0")
        assert a.call("CONFIG", "SET", "maxmemory-policy", "nosuch") == b.call("CONFIG", "SET", "maxmemory-policy", "nosuch")
        a.close()
        b.close()
    finally:
        ours.stop()
        theirs.stop()


# ---- tables every start builds, made without their per-entry formula ----
def test_reply_tables_are_their_formula():
    from raxdb.protocol import reply as R

    assert R.small_ints() == [b":%d\r\n" % i for i in range(-1, 10001)]
    assert R.bulk_headers() == [b"$%d\r\n" % i for i in range(4096)]
    assert R._bulk_seps() == [b"\r\n$%d\r\n" % i for i in range(4096)]
    assert R._array_headers() == [b"*%d\r\n" % i for i in range(1024)]
    assert R.small_ints() is R.small_ints() and R.bulk_headers() is R.bulk_headers()  # made once
    for head, tail, stop in ((b"", b"", 0), (b"x", b"", 1), (b"", b"y", 11), (b"a", b"bc", 100), (b"a", b"b", 101),
                             (b":", b"\r\n", 123457)):
        assert R.decimals(head, tail, stop) == [head + b"%d" % i + tail for i in range(stop)], (head, tail, stop)


# Each writer that reads a table, first in a fresh interpreter (no table made yet), then again
_FIRST_REPLIES = r"""
import gc, json
from raxdb.protocol import reply as R
tables = lambda: sorted(REPLY_TABLES[o[0]] for o in gc.get_objects() if type(o) is list
                        and len(o) in (10002, 4096, 1024) and type(o[0]) is bytes and o[0] in REPLY_TABLES)
before = tables()
calls = lambda: [R.integer(-1), R.integer(0), R.integer(10000), R.integer(10001), R.length(7), R.length(10000),
                 R.bulk(bytearray(b"abc")), R.bulk(b"xy"), R.bulks_body([b"a", b"bc"]), R.bulks_body([b"ab", b"cd"]),
                 R.bulks_body([b"x" * 5000, b"y"]), R.bulk_strings((b"a", bytearray(b"b")), 1), R.bulk_strings([b"a", b"bcd"]),
                 R.bulk_array(iter([b"q"])), R.stream_entry_flat(1, 2, [b"f", b"v"])]
first = [r.decode() for r in calls()]
print(json.dumps({"before": before, "first": first, "again": [r.decode() for r in calls()], "after": tables()}))
"""


def test_reply_tables_first_use_in_a_fresh_interpreter(tmp_path):
    """No table is made by reply's import; the first call of each writer that reads one makes it
    and writes what the formula spells, as later calls do."""
    code = f"REPLY_TABLES = {REPLY_TABLES!r}\n{_FIRST_REPLIES}"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env=_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == []
    want = [":-1\r\n", ":0\r\n", ":10000\r\n", ":10001\r\n", ":7\r\n", ":10000\r\n", "$3\r\nabc\r\n",
            "$2\r\nxy\r\n", "$1\r\na\r\n$2\r\nbc\r\n", "$2\r\nab\r\n$2\r\ncd\r\n",
            "$5000\r\n" + "x" * 5000 + "\r\n$1\r\ny\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
            "*2\r\n$1\r\na\r\n$3\r\nbcd\r\n", "*1\r\n$1\r\nq\r\n",
            "*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"]
    assert seen["first"] == want and seen["again"] == want
    assert "reply.small_ints" in seen["after"] and "reply._bulk_seps" in seen["after"]


def test_first_replies_of_a_fresh_server_match_redis():
    """A fresh server's first commands, each reply written from a table its first use makes
    (integers, bulk headers, arrays of bulks, a script's integer), answer as redis-server's."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        script = [("DEL", "k"), ("EXISTS", "k"), ("INCR", "n"), ("INCRBY", "n", "9999"), ("INCR", "n"),
                  ("APPEND", "s", "abc"), ("GET", "s"), ("MGET", "s", "nosuch", "n"),
                  ("RPUSH", "l", "a", "bb", "ccc"), ("LRANGE", "l", "0", "-1"), ("HSET", "h", "f", "v", "g", "ww"),
                  ("HGETALL", "h"), ("HVALS", "h"), ("SADD", "t", "x"), ("SMEMBERS", "t"),
                  ("XADD", "x", "1-1", "f", "v"), ("XRANGE", "x", "-", "+"), ("EVAL", "return 42", "0"),
                  ("EVAL", "return 12345", "0"), ("STRLEN", "s")]
        _same_replies(ours.port, theirs.port, script)
    finally:
        ours.stop()
        theirs.stop()


def test_sds_table_is_its_formula():
    from raxdb.storage import alloc

    def formula(stop: int) -> tuple[int, ...]:
        return tuple(alloc.size_class(alloc.sds_header(n) + n + 1) for n in range(stop))

    assert alloc._SDS_TABLE == formula(alloc._SDS_TABLE_LEN)
    for stop in (0, 1, 31, 32, 33, 255, 256, 257, 70000):
        assert alloc._sds_table(stop) == formula(stop), stop


def test_every_family_imported_leaves_the_interfaces_unimported():
    """base/interfaces.py is for the type checker: importing every module a server may run (all
    the command families, the persistence and replication modules) never imports it."""
    code = ("import sys\nimport raxdb.server.main, raxdb.server.core\nfrom raxdb.server import commands\n"
            "commands.import_all()\n"
            "import raxdb.server.persistence.aofload, raxdb.server.replication.replica, raxdb.storage.rdb\n"
            "print('raxdb.server.base.interfaces' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


def test_small_int_entries_are_their_encoding():
    """Each small integer's entry, made on its first use, is Redis's 7- or 13-bit listpack
    encoding with its back-length (lpEncodeIntegerGetType), the same object at every later use."""
    from raxdb.storage import listpack

    def encoding(v: int) -> bytes:
        if 0 <= v <= 127:
            return bytes((v, 1))
        u = v & 0x1FFF
        return bytes((0xC0 | u >> 8, u & 0xFF, 2))

    for v in range(-4096, 4096):
        first = listpack.encode_int_entry(v)
        assert first == encoding(v), v
        assert listpack.encode_int_entry(v) is first
        assert listpack.encode_entry(b"%d" % v) == first
    assert listpack.encode_int_entry(4096) == bytes((0xF1,)) + (4096).to_bytes(2, "little") + bytes((3,))
    assert listpack.encode_int_entry(-4097) == bytes((0xF1,)) + (-4097).to_bytes(2, "little", signed=True) + bytes((3,))


def test_small_integers_in_a_fresh_server_match_redis():
    """A fresh server's first small integers (stream IDs' deltas and fields, hash and sorted-set
    listpacks) read back as redis-server's, by value and by encoding."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        script = [("XADD", "s", "5-1", "0", "-1", "127", "128", "-4096", "4095"),
                  ("XADD", "s", "5-2", "-4097", "4096", "7", "x"),
                  ("XRANGE", "s", "-", "+"),
                  ("HSET", "h", "-1", "0", "4095", "-4096"), ("HGETALL", "h"), ("OBJECT", "ENCODING", "h"),
                  ("ZADD", "z", "1", "-7", "2", "127", "3", "4095"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
                  ("OBJECT", "ENCODING", "z"), ("RPUSH", "l", "0", "-4096", "128"), ("LRANGE", "l", "0", "-1"),
                  ("OBJECT", "ENCODING", "l")]
        _same_replies(ours.port, theirs.port, script)
    finally:
        ours.stop()
        theirs.stop()


_CTYPES_PROBE = r"""
import json, os, sys
from raxdb.server.main import main
from raxdb.protocol import hiredis_limits

def ready():
    compiled = not hiredis_limits.__file__.endswith(".py")
    print(json.dumps({"compiled": compiled, "ctypes": "ctypes" in sys.modules,
                      "available": hiredis_limits.AVAILABLE}), flush=True)
    os._exit(0)

main(["--port", sys.argv[1], "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], on_ready=ready)
"""


def test_compiled_start_leaves_ctypes(tmp_path):
    """Compiled, the reader limits need no ctypes: a started server has not imported it, and the
    struct's layout check passed (the limits are in force)."""
    out = subprocess.run([sys.executable, "-c", _CTYPES_PROBE, str(free_port())], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["available"]
    if not seen["compiled"]:
        pytest.skip("hiredis_limits runs interpreted (through ctypes)")
    assert not seen["ctypes"]


def test_reader_limits_in_either_build():
    """The limits read and write the reader's struct alike compiled and interpreted: an array over
    the limit is refused, what a partial command holds unparsed is counted (by `unconsumed` and by
    a probe), and a first client's huge header gets redis-server's reply."""
    import hiredis

    from raxdb.protocol import hiredis_limits

    assert hiredis_limits.AVAILABLE
    reader = hiredis.Reader()
    assert hiredis_limits.limit_elements(reader, 10)
    reader.feed(b"*10\r\n" + b"$1\r\nx\r\n" * 10)
    assert reader.gets() == [b"x"] * 10
    reader.feed(b"*11\r\n")
    with pytest.raises(hiredis.ProtocolError):
        reader.gets()
    reader = hiredis.Reader()
    probe = hiredis_limits.unconsumed_probe(reader)
    assert probe is not None and probe() == 0
    reader.feed(b"*1\r\n$5\r\nab")
    assert reader.gets() is False
    assert hiredis_limits.unconsumed(reader) == probe() > 0
    reader.feed(b"cde\r\n")
    assert reader.gets() == [b"abcde"] and probe() == 0 == hiredis_limits.unconsumed(reader)
    ours, theirs = start_raxdb(), start_redis()
    try:
        for port in (ours.port, theirs.port):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"*3000000000\r\n")
                replies = s.recv(256)
            assert replies == b"-ERR Protocol error: invalid multibulk length\r\n", (port, replies)
    finally:
        ours.stop()
        theirs.stop()


# ---- the regular expressions, MULTI's and CLIENT's families and the test controls on first use ----
def test_lazy_pattern_answers_as_the_compiled_one():
    """A LazyPattern compiles on its first attribute read and then answers as re.compile's."""
    import re

    from raxdb.server.base.lazyre import LazyPattern

    lazy, rx = LazyPattern(rb"[ \t]*([+-]?[0-7]+)", re.IGNORECASE), re.compile(rb"[ \t]*([+-]?[0-7]+)", re.IGNORECASE)
    assert lazy._compiled is None
    for text in (b" 017", b"-7x", b"8", b"", b"+0"):
        got, want = lazy.match(text), rx.match(text)
        assert (got and got.groups()) == (want and want.groups())
        assert bool(lazy.fullmatch(text)) == bool(rx.fullmatch(text))
    assert lazy.findall(b"1 22 9 -3") == rx.findall(b"1 22 9 -3")
    assert lazy._compiled is not None and lazy.match == lazy.match  # kept: read once per name


def test_first_uses_of_the_lazy_patterns_match_redis(tmp_path):
    """A fresh server's first float and octal arguments, function name, and big argument (the
    patterns compiled by them) answer as redis-server's."""
    ours = start_raxdb("--unixsocketperm", "0750", cwd=str(tmp_path))
    theirs = start_redis("--unixsocketperm", "0750")
    try:
        big = "x" * 100_000  # a read of 32 KiB or more: the big-argument scan (clientbufs)
        script = [("INCRBYFLOAT", "f", "1.5e3"), ("INCRBYFLOAT", "f", "0x10"), ("INCRBYFLOAT", "f", "abc"),
                  ("INCRBYFLOAT", "f", " 1"), ("ZADD", "z", "inf", "m"), ("ZADD", "z", "1e", "n"),
                  ("CONFIG", "GET", "unixsocketperm"),
                  ("FUNCTION", "LOAD", "#!lua name=bad-name\nredis.register_function('f', function() return 1 end)"),
                  ("FUNCTION", "LOAD", "#!lua name=ok_1\nredis.register_function('f', function() return 1 end)"),
                  ("SET", "big", big), ("STRLEN", "big")]
        _same_replies(ours.port, theirs.port, script)
    finally:
        ours.stop()
        theirs.stop()


def test_first_transaction_tracking_and_reset_match_redis():
    """A fresh server's first MULTI / WATCH / EXEC, RESET inside a transaction, and CLIENT TRACKING
    (their families imported by them; their hooks registered at start) answer as redis-server's,
    and a disconnect turns the tracking off as Redis's does."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        for first in ([("WATCH", "k"), ("MULTI",), ("SET", "k", "1"), ("EXEC",), ("GET", "k")],
                      [("MULTI",), ("SET", "k", "2"), ("RESET",), ("EXEC",), ("GET", "k")],
                      [("CLIENT", "TRACKING", "on"), ("CLIENT", "TRACKINGINFO"), ("CLIENT", "INFO")]):
            a, b = RawConnection(ours.port), RawConnection(theirs.port)
            for cmd in first:
                got, want = a.call(*cmd), b.call(*cmd)
                if cmd == ("CLIENT", "INFO"):  # ids, addresses and ages differ: the flags do not
                    got, want = (bytes(x).split(b" flags=")[1].split(b" ")[0] for x in (got, want))
                assert got == want, cmd
            a.close()
            b.close()
        # the tracking client above has gone: its disconnect turned tracking off, as Redis's does
        for srv in (ours, theirs):
            c = RawConnection(srv.port)
            _wait_for_clients_line(c, "tracking_clients:0")
            c.close()
    finally:
        ours.stop()
        theirs.stop()


def _same_replies(ours: int, theirs: int, script: list[tuple[str, ...]]) -> None:
    """Each command of `script` gets the same reply from both servers, on one connection each."""
    a, b = RawConnection(ours), RawConnection(theirs)
    for cmd in script:
        assert a.call(*cmd) == b.call(*cmd), cmd
    a.close()
    b.close()


def _wait_for_clients_line(c: RawConnection, line: str) -> None:
    """Until INFO clients shows `line` ("blocked_clients:1")."""
    field = line.split(":")[0]
    until(line, lambda: _info_line(c.call("INFO", "clients"), field) == line)


def _info_line(reply: bytes, field: str) -> str | None:
    text = parse(reply).decode()
    return next((line.strip() for line in text.splitlines() if line.startswith(field + ":")), None)


def test_first_blocked_pops_served_by_a_write_match_redis():
    """A fresh server's first BLPOP and BZPOPMIN, served by another client's RPUSH and ZADD (the
    list and sorted-set types imported by them, the blocked keys' types known from the first)."""
    ours, theirs = start_raxdb(), start_redis()
    try:
        for block, write in ((("BLPOP", "l", "0"), ("RPUSH", "l", "a", "b")),
                             (("BZPOPMIN", "z", "0"), ("ZADD", "z", "2", "m", "1", "n"))):
            replies = []
            for srv in (ours, theirs):
                waiter, writer = RawConnection(srv.port), RawConnection(srv.port)
                waiter.send(encode_command(block))
                _wait_for_clients_line(writer, "blocked_clients:1")
                replies.append((writer.call(*write), waiter.read_frame()))
                waiter.close()
                writer.close()
            assert replies[0] == replies[1], block
    finally:
        ours.stop()
        theirs.stop()
