"""ACL users (server/security/acl.py), differential against redis-server 7.0.

Redis lists single-command rules ("+get -hset") in its command dict's order, which is seeded at
random per process, so rule strings are compared with each run of single-command rules sorted
(`norm`, which keeps every length, so whole RESP frames still compare byte for byte).
ACL LOG entries are compared with age-seconds and client-info masked.
"""

from __future__ import annotations

import os
import random
import re
import tempfile

import pytest

from tests.support.diff import Diff, parse
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.oracle

_BULK = re.compile(rb"\$(\d+)\r\n")


def _norm_rules(payload: bytes) -> bytes:
    tokens = payload.split(b" ")
    parts = []
    for t in tokens:
        pre = t[:1] if t[:1] == b"(" else b""
        core = t[len(pre):]
        post = b")" if core[-1:] == b")" else b""
        core = core[: len(core) - len(post)]
        parts.append([pre, core, post])
    i = 0
    while i < len(parts):
        j = i
        while (j < len(parts) and parts[j][1][:1] in (b"+", b"-") and parts[j][1][1:2] != b"@"
               and (j == i or not parts[j][0])):
            j += 1
            if parts[j - 1][2]:
                break
        if j - i > 1:
            cores = sorted(p[1] for p in parts[i:j])
            for p, core in zip(parts[i:j], cores, strict=True):
                p[1] = core
        i = max(j, i + 1)
    return b" ".join(p[0] + p[1] + p[2] for p in parts)


def norm(frame: bytes) -> bytes:
    """Sort runs of single-command rules inside every bulk string that holds command rules."""
    out = bytearray(frame)
    for m in _BULK.finditer(frame):
        start, n = m.end(), int(m.group(1))
        payload = frame[start : start + n]
        if b"@all" in payload:
            out[start : start + n] = _norm_rules(payload)
    return bytes(out)


def same(d: Diff, *args: object) -> bytes:
    ours, theirs = d.both(*args)
    assert norm(ours) == norm(theirs), f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    return ours


@pytest.fixture
def acl(diff):
    """`diff` with the ACL state of both servers cleared (users besides default, the log)."""
    _reset(diff)
    yield diff
    _reset(diff)


def _reset(d: Diff) -> None:
    for conn in (d.ours, d.theirs):
        extra = [u for u in parse(conn.call("ACL", "USERS")) if u != b"default"]
        if extra:
            conn.call("ACL", "DELUSER", *extra)
    d.both("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all")
    d.both("ACL", "LOG", "RESET")


def _assert_closed(d: Diff) -> None:
    """Both servers closed this pair's connections."""
    for conn in (d.ours, d.theirs):
        with pytest.raises((ConnectionError, OSError)):
            conn.call("PING")


def _login(raxdb_port: int, redis_port: int, user: str, password: str, protocol: int = 2) -> Diff:
    d = Diff(raxdb_port, redis_port, protocol)
    d("AUTH", user, password)
    return d


# ---- rule parsing ------------------------------------------------------------------------------
def test_setuser_rules_and_errors(acl):
    d = acl
    for rules in (
        ["on", ">pw", "~k*", "%R~r*", "%W~w*", "%RW~rw*", "&ch*", "+@hash", "-hset", "+get"],
        ["off", "nopass", "allkeys", "allchannels", "allcommands", "-@dangerous"],
        ["reset", "on", "#" + "a" * 64, "+select|0", "+select|1", "+SELECT|1", "+config|get", "-@all", "+client|id"],
        ["resetkeys", "~a", "~a", "%R~a", "resetchannels", "&x", "&x", "nocommands", "+@read", "-@fast"],
        ["(~sel* +get)", "(", "+set", "%R~x", ")", "clearselectors", "(+@string ~s*)"],
        ["resetpass", ">one", ">two", "<one", "skip-sanitize-payload"],
        ["sanitize-payload", "+@all", "-@keyspace", "+del", "-client|kill", "-config"],
        ["", "on", ""],
    ):
        same(d, "ACL", "SETUSER", "u", *rules)
        same(d, "ACL", "GETUSER", "u")
        same(d, "ACL", "LIST")
    for bad in (["foo"], ["+nosuchcmd"], ["+@nosuchcat"], ["-@nosuchcat"], ["+config|nosuch"],
                ["+config|get|x"], ["+select|"], ["<notapassword"], ["#abc"], ["!" + "b" * 64], ["#" + "A" * 64],
                ["~*", "~x"], ["allkeys", "%R~x"], ["&*", "&y"], ["~a b"], ["%X~a"], ["%RR~a"], ["(+get", "~x"],
                ["(foo)"], ["(+nosuch)"], ["-select|0"], ["+acl|setuser|x"], ["on", "+@all", "bad"]):
        same(d, "ACL", "SETUSER", "u", *bad)
        same(d, "ACL", "GETUSER", "u")  # a refused rule changes nothing
    d("ACL", "SETUSER", "bad name")
    d("ACL", "SETUSER", "bad\x00name")
    d("ACL", "GETUSER", "nosuch")
    d("ACL", "SETUSER")
    d("ACL", "NOSUCH")


_CMDS = ["get", "set", "hset", "hget", "del", "lpush", "zadd", "publish", "subscribe", "info", "config", "client",
         "keys", "scan", "eval", "multi", "exec", "xadd", "ping", "debug", "flushall", "select", "object"]
_SUBS = ["config|get", "config|set", "client|id", "client|kill", "client|list", "object|encoding", "acl|whoami",
         "command|info", "xinfo|stream", "memory|usage"]


_CATS = ["read", "write", "keyspace", "string", "hash", "list", "set", "sortedset", "fast", "slow", "admin",
         "dangerous", "pubsub", "connection", "scripting", "geo", "stream", "bitmap", "hyperloglog", "blocking",
         "transaction"]
_PATTERNS = ["a*", "b?", "c[xy]", "*", "key:1", "x"]


def _random_rule(rng: random.Random, in_selector: bool = False) -> str:
    """One rule; those that wipe state (reset, +@all, -@all, ...) are rare, so users grow rich."""
    pat = rng.choice(_PATTERNS)
    table = [
        (2, lambda: rng.choice(["on", "off"])),
        (2, lambda: ">" + rng.choice(["p1", "p2", "p3"])),
        (1, lambda: "<" + rng.choice(["p1", "p2"])),
        (1, lambda: rng.choice(["nopass", "resetpass"])),
        (8, lambda: "+" + rng.choice(_CMDS)),
        (8, lambda: "-" + rng.choice(_CMDS)),
        (8, lambda: "+@" + rng.choice(_CATS)),
        (8, lambda: "-@" + rng.choice(_CATS)),
        (5, lambda: "+" + rng.choice(_SUBS)),
        (5, lambda: "-" + rng.choice(_SUBS)),
        (3, lambda: "+" + rng.choice(["select|0", "select|1", "debug|object", "flushall|async", "SELECT|1"])),
        (1, lambda: rng.choice(["allcommands", "nocommands", "+@all", "-@all"])),
        (4, lambda: "~" + pat),
        (4, lambda: rng.choice(["%R~", "%W~", "%RW~", "%WR~"]) + pat),
        (1, lambda: rng.choice(["allkeys", "resetkeys"])),
        (3, lambda: "&" + pat),
        (1, lambda: rng.choice(["allchannels", "resetchannels"])),
        (0 if in_selector else 2,
         lambda: "(" + " ".join(_random_rule(rng, True) for _ in range(rng.randrange(1, 5))) + ")"),
        (0 if in_selector else 1, lambda: rng.choice(["clearselectors", "reset"])),
    ]
    weights = [w for w, _ in table]
    return rng.choices([f for _, f in table], weights)[0]()


def test_random_rules_describe_like_redis(diff2):
    """Seeded random rule sequences: every SETUSER reply, GETUSER and LIST as Redis has them."""
    d = diff2
    _reset(d)
    rng = random.Random(20240)
    try:
        for user in range(12):
            name = f"r{user}"
            for _ in range(15):
                rules = [_random_rule(rng) for _ in range(rng.randrange(1, 7))]
                same(d, "ACL", "SETUSER", name, *rules)
                same(d, "ACL", "GETUSER", name)
            same(d, "ACL", "LIST")
    finally:
        _reset(d)


def test_getuser_resp3_and_selectors(acl):
    d = acl
    d("ACL", "SETUSER", "s", "on", "nopass", "%R~r*", "&c", "+get", "(~a* +set &d)", "(%W~w* +@hash)")
    same(d, "ACL", "GETUSER", "s")
    same(d, "ACL", "GETUSER", "default")
    d("ACL", "USERS")
    d("ACL", "DELUSER", "s", "nosuch", "s")
    d("ACL", "DELUSER", "default")
    d("ACL", "DELUSER", "x", "default")
    d("ACL", "USERS")
    d("ACL", "WHOAMI")


def test_cat(acl):
    d = acl
    d("ACL", "CAT")
    for cat in ("read", "WRITE", "keyspace", "dangerous", "pubsub", "scripting", "connection"):
        d.unordered("ACL", "CAT", cat)
    d("ACL", "CAT", "nosuch")
    d("ACL", "CAT", "a", "b")


# ---- enforcement -------------------------------------------------------------------------------
def test_denials_by_command_category_subcommand_key_channel(acl, raxdb, oracle):
    acl("ACL", "SETUSER", "w", "on", ">pw", "-@all", "+@string", "-set", "+del", "+config|get", "+select|0",
        "+publish", "+subscribe", "+psubscribe", "+ping", "+multi", "+exec", "~k*", "%R~r*", "%W~w*", "&ch*")
    u = _login(raxdb.port, oracle.port, "w", "pw", acl.protocol)
    try:
        u.script("""
            GET k1
            GET r1
            GET w1
            GET other
            SET k1 v
            APPEND k1 v
            APPEND r1 v
            APPEND w1 v
            MSET k1 a k2 b
            MSET k1 a other b
            DEL k1 r1
            DEL k1 w1
            COPY k1 k2
            HSET k1 f v
            CONFIG GET maxmemory
            CONFIG SET maxmemory 0
            CONFIG RESETSTAT
            SELECT 0
            SELECT 1
            PUBLISH ch1 m
            PUBLISH other m
            PSUBSCRIBE ch*
            PING
            ACL WHOAMI
            AUTH w wrong
        """)
        u("SUBSCRIBE", "ch1", "x")
    finally:
        u.close()
    acl.unordered("ACL", "LOG", "RESET")


def test_sort_by_and_get_need_every_key_readable(acl, raxdb, oracle):
    """SORT's BY (with a '*') and GET name keys no key spec declares: refused unless a selector
    that allows the call may read every key (allkeys, %R~*), as in acl-v2.tcl."""
    acl("RPUSH", "l", "2", "1")
    acl("ACL", "SETUSER", "k", "on", ">pw", "+@all", "~l", "~w*")
    acl("ACL", "SETUSER", "r", "on", ">pw", "+@all", "%R~*", "%W~l")
    acl("ACL", "SETUSER", "s", "on", ">pw", "+@all", "~l", "(+sort %R~*)")
    for user in ("k", "r", "s"):
        u = _login(raxdb.port, oracle.port, user, "pw", acl.protocol)
        try:
            u.script("""
                SORT l
                SORT l BY nosort
                SORT l BY w_*
                SORT l GET #
                SORT l GET w_* BY nosort
                SORT_RO l BY w_*
                SORT l BY w_* STORE l
            """)
        finally:
            u.close()


def test_denials_in_multi_and_scripts(acl, raxdb, oracle):
    acl("ACL", "SETUSER", "m", "on", ">pw", "+@all", "-hset", "%R~r*", "~k*", "&c")
    u = _login(raxdb.port, oracle.port, "m", "pw", acl.protocol)
    try:
        u.script("""
            MULTI
            SET k1 v
            HSET k2 f v
            SET r1 v
            EXEC
            MULTI
            SET k1 v
            GET r1
        """)
        # the rules change between queueing and EXEC
        acl("ACL", "SETUSER", "m", "resetkeys", "~r*")
        u("EXEC")
        u("EVAL", "return redis.call('set', 'r1', 'x')", "0")
        u("EVAL", "return redis.pcall('hset', 'r1', 'f', 'x')", "0")
        u("EVAL", "return redis.call('get', 'k9')", "0")
        u("EVAL", "return redis.call('publish', 'zz', 'x')", "0")
        u("EVAL", "return redis.call('get', KEYS[1])", "1", "k9")
        # refused after the script has written (checks that only a first write runs must not
        # skip the ACL's)
        u("EVAL", "redis.call('set', 'r2', 'x') return redis.call('set', 'k1', 'x')", "0")
        u("EVAL", "redis.call('set', 'r2', 'y') return redis.pcall('get', 'k1')", "0")
        u("EVAL", "return {redis.acl_check_cmd('get', 'r1'), redis.acl_check_cmd('hset', 'r1', 'f', 'v')}", "0")
    finally:
        u.close()
    _compare_log(acl)


def _masked_log(raw: bytes) -> list:
    entries = parse(raw)
    out = []
    for e in entries:
        e = list(e) if isinstance(e, list) else [x for kv in e.items() for x in kv]
        for i in range(0, len(e), 2):
            if e[i] in (b"age-seconds", b"client-info"):
                e[i + 1] = None
        out.append(e)
    return out


def _compare_log(d: Diff, *args: str) -> None:
    ours, theirs = d.both("ACL", "LOG", *args)
    assert _masked_log(ours) == _masked_log(theirs), f"raxdb: {ours!r}\nredis: {theirs!r}"


def test_acl_log(acl, raxdb, oracle):
    d = acl
    d("ACL", "SETUSER", "l", "on", ">pw", "-@all", "+get", "~a*", "&c")
    d("ACL", "SETUSER", "off", "off", ">pw", "+@all")
    u = _login(raxdb.port, oracle.port, "l", "pw", 2)
    try:
        for args in (("GET", "b"), ("GET", "b"), ("SET", "a", "1"), ("GET", "c"), ("AUTH", "l", "bad"),
                     ("AUTH", "nosuch", "x"), ("auth", "off", "pw"), ("HELLO", "2", "AUTH", "l", "bad"),
                     ("GET", "b")):
            u(*args)
        u("MULTI")
        u("SET", "a", "1")
        u("AUTH", "l", "bad")
        u("EXEC")
    finally:
        u.close()
    _compare_log(d)
    _compare_log(d, "2")
    _compare_log(d, "0")
    _compare_log(d, "-5")
    d("ACL", "LOG", "notanumber")
    d("ACL", "LOG", "1", "2")
    ours, theirs = d.both("ACL", "LOG", "1")
    assert b"user=l" in ours and b"cmd=exec" in ours
    d("ACL", "LOG", "RESET")
    d("ACL", "LOG")


_INFO_FIELDS = (b"flags", b"db", b"multi", b"argv-mem", b"cmd", b"user", b"resp")


def _logged_client(raw: bytes) -> dict[bytes, bytes]:
    """The newest ACL LOG entry's client-info, the fields that do not vary between two servers."""
    entry = parse(raw)[0]
    flat = list(entry) if isinstance(entry, list) else [x for kv in entry.items() for x in kv]
    info = flat[flat.index(b"client-info") + 1]
    fields = dict(f.split(b"=", 1) for f in info.split(b" "))
    return {k: fields[k] for k in _INFO_FIELDS}


def test_acl_log_auth_failure_shows_the_auth(acl):
    """A failed AUTH or HELLO AUTH after other commands on a connection: its log entry's
    client-info names the AUTH (cmd=, argv-mem=) as Redis's does, not the command before it."""
    for failing in (("AUTH", "nosuch", "secret"), ("HELLO", str(acl.protocol), "AUTH", "nosuch", "pw"),
                    ("AUTH", "default", "wrong")):
        acl("SET", "a", "b")
        acl("GET", "a")
        acl(*failing)
        ours, theirs = acl.both("ACL", "LOG", "1")
        assert _logged_client(ours) == _logged_client(theirs), (failing, ours, theirs)
    # run by EXEC: the client is in MULTI still, and its argv and cmd are EXEC's
    acl("MULTI")
    acl("SET", "a", "b")
    acl("AUTH", "nosuch", "secret")
    acl("EXEC")
    ours, theirs = acl.both("ACL", "LOG", "1")
    assert _logged_client(ours) == _logged_client(theirs), (ours, theirs)


def test_dryrun(acl):
    d = acl
    d("ACL", "SETUSER", "dr", "on", "nopass", "-@all", "+get", "+publish", "%R~r*", "&c*", "(+set ~s*)")
    for args in (("GET", "r1"), ("GET", "x"), ("SET", "r1", "v"), ("SET", "s1", "v"), ("SET", "x", "v"),
                 ("PUBLISH", "c1", "m"), ("PUBLISH", "d", "m"), ("HSET", "r", "f", "v"), ("GET",),
                 ("NOSUCH", "x"), ("CONFIG", "GET", "x"), ("CONFIG",), ("CONFIG", "NOSUCH")):
        d("ACL", "DRYRUN", "dr", *args)
    d("ACL", "DRYRUN", "nosuch", "GET", "x")


def test_genpass_and_help(acl):
    d = acl
    for args in ((), ("1",), ("5",), ("4096",)):
        ours, theirs = d.both("ACL", "GENPASS", *args)
        assert len(ours) == len(theirs) and ours[:1] == b"$"
        assert re.fullmatch(rb"\$\d+\r\n[0-9a-f]*\r\n", ours)
    for bad in ("0", "4097", "-1", "x"):
        d("ACL", "GENPASS", bad)
    d("ACL", "HELP")
    d("ACL", "LOAD")
    d("ACL", "SAVE")


def test_auth_and_hello_with_users(acl, raxdb, oracle):
    d = acl
    d("ACL", "SETUSER", "a", "on", ">secret", ">other", "+@all", "~*")
    d("ACL", "SETUSER", "dis", "off", ">secret", "+@all")
    d("ACL", "SETUSER", "np", "on", "nopass", "+@all", "~*", "&*")
    u = Diff(raxdb.port, oracle.port, 2)
    try:
        u.script("""
            AUTH a wrong
            AUTH nosuch secret
            AUTH dis secret
            ACL WHOAMI
            AUTH a secret
            ACL WHOAMI
            AUTH a other
            AUTH np anything
            ACL WHOAMI
            AUTH onlypassword
            AUTH a b c
            HELLO 3 AUTH a wrong
        """)
        ours, theirs = u.both("HELLO", "2", "AUTH", "a", "secret", "SETNAME", "x")
        assert ours.split(b"id")[0] == theirs.split(b"id")[0]
        u.script("""
            ACL WHOAMI
            RESET
            ACL WHOAMI
        """)
        ours, theirs = u.both("HELLO", "3", "AUTH", "np", "x")
        assert ours.split(b"id")[0] == theirs.split(b"id")[0]
        assert b"user=np" in parse(u.ours.call("CLIENT", "INFO"))
    finally:
        u.close()
    _compare_log(d)


def test_deleting_or_changing_a_user_disconnects(acl, raxdb, oracle):
    d = acl
    d("ACL", "SETUSER", "gone", "on", "nopass", "+@all", "~*", "&*")
    u = _login(raxdb.port, oracle.port, "gone", "x", 2)
    s = _login(raxdb.port, oracle.port, "gone", "x", 2)
    try:
        s("SUBSCRIBE", "a", "b")
        assert s.ours.read_frame() == s.theirs.read_frame()  # b's confirmation
        d("CLIENT", "KILL", "USER", "nosuch")
        d("ACL", "SETUSER", "gone", "resetchannels", "&a", "&b", "&c")  # still allowed: stays
        d("ACL", "SETUSER", "gone", "resetchannels", "&a")  # b revoked: the subscriber goes
        _assert_closed(s)
        u("PING")
        d("ACL", "DELUSER", "gone")
        _assert_closed(u)
    finally:
        u.close()
        s.close()
    # deleting the user of the current connection: its reply first, then the close
    d("ACL", "SETUSER", "self", "on", "nopass", "+@all")
    me = _login(raxdb.port, oracle.port, "self", "x", 2)
    try:
        me("ACL", "DELUSER", "self")
        _assert_closed(me)
    finally:
        me.close()


def test_default_user_with_requirepass():
    a, b = start_raxdb("--requirepass", "pw"), start_redis("--requirepass", "pw")
    try:
        d = Diff(a.port, b.port, 2)
        d.script("""
            GET x
            ACL WHOAMI
            AUTH wrong
            AUTH default wrong
            AUTH pw
            ACL LIST
            ACL SETUSER default -flushall
            FLUSHALL
            ACL SETUSER default +flushall
            CONFIG SET requirepass other
            ACL LIST
            ACL SETUSER default nopass
        """)
        n = Diff(a.port, b.port, 2)
        n("GET", "x")  # nopass: a new connection needs no AUTH
        n("AUTH", "x")
        d("CONFIG", "SET", "requirepass", "pw")
        late = Diff(a.port, b.port, 2)
        late("GET", "x")  # connected while a password is required
        n("GET", "x")  # connected while there was none: stays in
        d("CONFIG", "SET", "requirepass", "")
        late("GET", "x")  # no password any more: in without AUTH
        late.close()
        n.close()
        d.close()
    finally:
        a.stop()
        b.stop()


# ---- files and configuration -------------------------------------------------------------------
def test_aclfile_load_and_save():
    tmp = tempfile.mkdtemp(prefix="acl-")
    paths = [os.path.join(tmp, f"{n}.acl") for n in ("ours", "theirs")]
    text = "user default on nopass ~* &* +@all\nuser f on >pw ~f* resetchannels -@all +get\n"
    for p in paths:
        with open(p, "w") as fh:
            fh.write(text)
    a, b = start_raxdb("--aclfile", paths[0]), start_redis("--aclfile", paths[1])
    try:
        d = Diff(a.port, b.port, 2)
        u = Diff(a.port, b.port, 2)
        same(d, "ACL", "LIST")
        u("AUTH", "f", "pw")
        u("GET", "f1")
        d("ACL", "SETUSER", "g", "on", "nopass", "+@hash", "(~x +get)")
        d("ACL", "SAVE")
        saved = [open(p, "rb").read() for p in paths]
        assert norm(b"$%d\r\n%s\r\n" % (len(saved[0]), saved[0])) == norm(b"$%d\r\n%s\r\n" % (len(saved[1]), saved[1]))
        for p in paths:
            with open(p, "w") as fh:
                fh.write("user default on nopass ~* &* +@all\nuser h on nopass +@all ~*\n")
        d("ACL", "LOAD")
        same(d, "ACL", "LIST")
        _assert_closed(u)  # f's connection goes with the old users
        for bad in ("user h on +nosuch badrule\nuser h on\nnotuser x\n", "user x (+get\n", "user a b\tc\n"):
            for p in paths:
                with open(p, "w") as fh:
                    fh.write(bad.replace("PATH", p))
            ours, theirs = d.both("ACL", "LOAD")
            assert ours.replace(paths[0].encode(), b"F") == theirs.replace(paths[1].encode(), b"F"), (ours, theirs)
            same(d, "ACL", "LIST")
        u.close()
        d.close()
    finally:
        a.stop()
        b.stop()


def test_user_directive():
    args = ("--user", "cfg", "on", ">pw", "~c*", "+@read", "(+set ~s*)",
            "--user", "default", "on", "nopass", "+@all", "-debug", "~*")
    a, b = start_raxdb(*args), start_redis(*args)
    try:
        d = Diff(a.port, b.port, 2)
        same(d, "ACL", "LIST")
        d("DEBUG", "SLEEP", "0")
        d("AUTH", "cfg", "pw")
        d("GET", "c1")
        d("SET", "s1", "v")
        d("SET", "c1", "v")
        d.close()
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("bad", [("--user", "u", "on", "badrule"), ("--user", "u", "on", "~*", "~x")])
def test_user_directive_errors(bad):
    import subprocess
    import sys

    from tests.support.servers import ROOT, free_port, redis_binary

    port = str(free_port())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ours = subprocess.run([sys.executable, "-m", "raxdb.server", "--port", port, *bad], capture_output=True, text=True,
                          env=env, timeout=60)
    theirs = subprocess.run([redis_binary(), "--port", port, *bad], capture_output=True, text=True, timeout=60)
    assert ours.returncode == theirs.returncode == 1
    line = [x for x in theirs.stderr.splitlines() + theirs.stdout.splitlines() if "Error in user" in x]
    assert line and line[0] in ours.stderr


def test_config_rewrite_writes_users():
    """CONFIG REWRITE replaces the file's `user` lines in place and appends the rest, every user."""
    import sys

    from tests.support.servers import ROOT, ServerProcess, free_port, redis_binary

    procs = []
    confs = []
    for name in ("raxdb", "redis"):
        d = tempfile.mkdtemp(prefix=f"acl-rw-{name}-")
        conf = os.path.join(d, "redis.conf")
        with open(conf, "w") as fh:
            fh.write("# kept\nuser old on nopass +@all ~*\nhz 10\n")
        confs.append(conf)
        port = free_port()
        if name == "raxdb":
            os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
            argv = [sys.executable, "-m", "raxdb.server", conf, "--port", str(port), "--save", ""]
        else:
            argv = [redis_binary(), conf, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        procs.append(ServerProcess(argv, port, d, name))
    try:
        d = Diff(procs[0].port, procs[1].port, 2)
        d("ACL", "SETUSER", "new", "on", ">pw", "%R~r*", "-@all", "+@read", "-get", "(+set ~s*)")
        d("ACL", "DELUSER", "old")
        d("ACL", "SETUSER", "zed", "off")
        d("CONFIG", "REWRITE")
        d.close()
        texts = []
        for conf in confs:
            with open(conf, "rb") as fh:
                text = fh.read()
            users = b"\n".join(line for line in text.split(b"\n") if line.startswith(b"user "))
            texts.append((text.split(b"\n")[1], norm(b"$%d\r\n%s\r\n" % (len(users), users))))
        assert texts[0] == texts[1]  # the first user line takes the old one's place
    finally:
        for p in procs:
            p.stop()
