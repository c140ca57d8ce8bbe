"""The Lua debugger (SCRIPT DEBUG YES|SYNC, redis-cli --ldb) against redis-server 7.0.15: the same
session, command by command, gives the same transcript (the debugger's log arrays, the EVAL's
reply, the connection closed after it); a forked session leaves the dataset as it was, a
synchronous one keeps its changes; the server goes on serving meanwhile and after."""

from __future__ import annotations

import re
import socket
import subprocess

import hiredis
import pytest

from tests.support.servers import start_raxdb, start_redis

_POINTER = re.compile(rb"0x[0-9a-f]+")


def _encode(*args: bytes | str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def _shown(reply):
    """A reply as compared: errors as their text, pointers masked (they differ between servers)."""
    if isinstance(reply, list):
        return [_shown(r) for r in reply]
    if isinstance(reply, hiredis.ReplyError):
        return ("error", _POINTER.sub(b"0xPTR", str(reply).encode()))
    if isinstance(reply, bytes):
        return _POINTER.sub(b"0xPTR", reply)
    return reply


class Conn:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(20)
        self.reader = hiredis.Reader()

    def read(self):
        while True:
            r = self.reader.gets()
            if r is not False:
                return _shown(r)
            data = self.sock.recv(65536)
            if not data:
                return "closed"
            self.reader.feed(data)

    def call(self, *args):
        self.sock.sendall(_encode(*args))
        return self.read()

    def closed(self) -> bool:
        return self.sock.recv(1) == b""


def session(port: int, mode: str, script: str, keys=(), args=(), commands=(), raw: bytes = b"",
            numkeys: str | None = None) -> list:
    """SCRIPT DEBUG `mode`, EVAL `script`, then each debugger command in turn (`raw` sent as is
    after them): everything the server answered, in order, ending with "closed"."""
    c = Conn(port)
    out = [c.call("SCRIPT", "DEBUG", mode)]

    def after(reply) -> bool:  # True once the session ended (its EVAL reply read)
        out.append(reply)
        if isinstance(reply, list) and b"<endsession>" in reply:
            out.append(c.read())
            return True
        return reply == "closed"

    done = after(c.call("EVAL", script, numkeys or str(len(keys)), *keys, *args))
    for cmd in commands:
        if done:
            break
        done = after(c.call(*cmd.split(" ")) if isinstance(cmd, str) else c.call(*cmd))
    if raw and not done:
        c.sock.sendall(raw)
        done = after(c.read())
    while not done:  # let the script finish
        done = after(c.call("c"))
    out.append("closed" if c.closed() else "open")
    return out


def both(raxdb, oracle, *a, **kw) -> list:
    ours, theirs = session(raxdb.port, *a, **kw), session(oracle.port, *a, **kw)
    assert ours == theirs
    return ours


WALK = """local a = 5
local t = {1, 2, "x", {nested = true}}
local f = 1 / 3
redis.call('set', KEYS[1], ARGV[1])
local v = redis.call('get', KEYS[1])
redis.debug(a, t, v, nil, {k = "v"}, f)
redis.breakpoint()
local z = a + 1
return {v, z}
"""


@pytest.mark.parametrize("mode", ["yes", "sync"])
def test_a_walk_through_the_debugger(raxdb, oracle, mode):
    for port in (raxdb.port, oracle.port):
        Conn(port).call("DEL", "ldb:k")
    out = both(raxdb, oracle, mode, WALK, ["ldb:k"], ["hello"], [
        "step", "print", "p t", "step", "step", "p", "p KEYS", "p ARGV", "p nope", "list", "l 2 1", "l 0 0",
        "whole", "trace", "e a * 2", "e redis.call('get', KEYS[1])", "e local x = 1", "e error('boom')",
        "e (", "r get ldb:k", "r incr ldb:k", "r nosuchcmd", "r", "m", "m 10", "m 0", "m 256", "h", "help",
        "what", "STEP", "b 9", "b", "c", "print", "c",
    ])
    assert out[-1] == "closed"
    assert out[-2] == [b"hello", 6]
    # a forked session's changes die with its child; a synchronous one's stay
    expected = b"hello" if mode == "sync" else None
    for port in (raxdb.port, oracle.port):
        assert Conn(port).call("GET", "ldb:k") == expected


def test_breakpoints(raxdb, oracle):
    script = "\n".join(f"local v{i} = {i}" for i in range(1, 10)) + "\nreturn v9"
    both(raxdb, oracle, "yes", script, commands=[
        "b 3 5 7", "b", "b -3", "b", "b -5", "b -4", "b 0", "b", "b 99", "b -1", "b abc", "b 03", "b 4",
        "b 4", "b 8", "c", "list", "c",
    ])


def test_a_nested_function_in_the_trace_and_print(raxdb, oracle):
    script = """local function inner(x)
  local y = x * 2
  redis.breakpoint()
  return y
end
local function outer(n)
  return inner(n + 1)
end
return outer(1)"""
    both(raxdb, oracle, "yes", script, commands=["c", "trace", "print", "p n", "p y", "p x", "s", "s", "trace", "c"])


def test_abort_and_errors_under_the_debugger(raxdb, oracle):
    both(raxdb, oracle, "yes", "local a = 1\nreturn a", commands=["s", "abort"])
    both(raxdb, oracle, "sync", "local a = 1\nreturn a", commands=["a"])
    # a script that fails, one that does not compile, and one that errors from redis.call
    both(raxdb, oracle, "yes", "local a = 1\nerror('mine')", commands=["s", "s"])
    both(raxdb, oracle, "yes", "return +", commands=["s"])
    both(raxdb, oracle, "yes", "return redis.call('incr', KEYS[1])", keys=["ldb:str"], commands=["s"])
    # numkeys is checked under the debugger too: the session ends before the error reply
    both(raxdb, oracle, "yes", "return 1", numkeys="3")
    both(raxdb, oracle, "sync", "return 1", numkeys="x")


def test_trimmed_replies_and_values(raxdb, oracle):
    script = """local big = {}
for i = 1, 60 do big[i] = 'item' .. i end
redis.call('rpush', KEYS[1], unpack(big))
local r = redis.call('lrange', KEYS[1], 0, -1)
return #r"""
    for port in (raxdb.port, oracle.port):
        Conn(port).call("DEL", "ldb:list")
    both(raxdb, oracle, "yes", script, keys=["ldb:list"], commands=[
        "s", "s", "p big", "s", "s", "m 0", "p big", "r lrange ldb:list 0 3", "r hgetall nokey", "c",
    ])


def test_protocol_quirks_of_the_debugger(raxdb, oracle):
    """The debugger's own parser: C strings (a NUL ends a command name), a command of 100
    arguments, a request with no '*' ends the script with a protocol error."""
    both(raxdb, oracle, "sync", "return 'hello'", commands=[
        ["hello\0world"], ["hello\0"], ["\0hello"], ["s\0x"], ["redis", *["test"] * 100],
    ])
    both(raxdb, oracle, "yes", "local a = 1\nreturn a", raw=b"no star here\r\n")


def test_a_script_that_runs_too_long_stops_with_a_timeout(fresh):
    a, b = fresh
    for srv in (a, b):
        Conn(srv.port).call("CONFIG", "SET", "busy-reply-threshold", "50")
    script = "local i = 0\nwhile true do i = i + 1 end"
    ours, theirs = (session(srv.port, "yes", script, commands=["c", "p", "a"]) for srv in (a, b))
    assert ours[2] == theirs[2] == [b"* Stopped at 2, stop reason = timeout reached, infinite loop?",
                                    b"-> 2   while true do i = i + 1 end"]
    # where the loop stopped varies (the value of i printed); the abort and its end match
    assert ours[3][0].startswith(b"<value> i = ") and theirs[3][0].startswith(b"<value> i = ")
    assert ours[4:] == theirs[4:]
    assert ours[4] == [b"<endsession>"]


def test_refusals(raxdb, oracle, diff2):
    for port in (raxdb.port, oracle.port):
        c = Conn(port)
        assert c.call("SCRIPT", "DEBUG", "yes") == b"OK"
        ours = c.call("EVALSHA", "a" * 40, "0")
        assert ours == ("error", b"ERR Please use EVAL instead of EVALSHA for debugging")
        assert c.call("EVALSHA", "short", "x") == ("error", b"NOSCRIPT No matching script. Please use EVAL.")
        assert c.call("SCRIPT", "DEBUG", "maybe") == ("error", b"ERR Use SCRIPT DEBUG YES/SYNC/NO")
        assert c.call("SCRIPT", "DEBUG", "no") == b"OK"
        assert c.call("EVAL", "return 1", "0") == 1
        # pending replies (of the same read, of EXEC) are refused
        c.sock.sendall(_encode("PING") + _encode("SCRIPT", "DEBUG", "yes"))
        assert c.read() == b"PONG"
        assert c.read() == ("error", b"ERR SCRIPT DEBUG must be called outside a pipeline")
        assert c.call("MULTI") == b"OK"
        assert c.call("SCRIPT", "DEBUG", "yes") == b"QUEUED"
        assert c.call("EXEC") == [("error", b"ERR SCRIPT DEBUG must be called outside a pipeline")]
    diff2("EVALSHA", "short", "notanumber")


@pytest.mark.parametrize("mode", ["yes", "sync"])
def test_a_client_that_leaves_mid_session(fresh, mode):
    """The script then runs to its end without stopping; the server keeps serving."""
    for srv in fresh:
        c = Conn(srv.port)
        assert c.call("SCRIPT", "DEBUG", mode) == b"OK"
        first = c.call("EVAL", "redis.call('set', 'ldb:gone', 'v')\nreturn 1", "0")
        assert first == [b"* Stopped at 1, stop reason = step over", b"-> 1   redis.call('set', 'ldb:gone', 'v')"]
        c.sock.close()
        other = Conn(srv.port)
        # the synchronous session blocked the server: it has ended when the next command is answered
        assert other.call("PING") == b"PONG"
        if mode == "sync":
            assert other.call("GET", "ldb:gone") == b"v"
        else:
            assert other.call("GET", "ldb:gone") is None


def test_forked_sessions_run_beside_each_other_and_the_server(raxdb):
    first, second = Conn(raxdb.port), Conn(raxdb.port)
    for c in (first, second):
        assert c.call("SCRIPT", "DEBUG", "yes") == b"OK"
        assert c.call("EVAL", "return 'mine'", "0")[0] == b"* Stopped at 1, stop reason = step over"
    assert Conn(raxdb.port).call("PING") == b"PONG"
    for c in (first, second):
        assert c.call("c") == [b"<endsession>"]
        assert c.read() == b"mine"
        assert c.closed()
    info = Conn(raxdb.port).call("INFO", "stats").decode()
    assert "total_forks:" in info


def test_redis_cli_ldb(raxdb, oracle, tmp_path):
    """redis-cli --ldb and --ldb-sync-mode, as a user runs them."""
    script = tmp_path / "s.lua"
    script.write_text("local x = redis.call('incr', KEYS[1])\nreturn {x, ARGV[1]}\n")
    outputs = []
    for srv in (raxdb, oracle):
        Conn(srv.port).call("SET", "ldb:cnt", "10")
        runs = []
        for flag in ("--ldb", "--ldb-sync-mode"):
            p = subprocess.run(["redis-cli", "-p", str(srv.port), flag, "--eval", str(script), "ldb:cnt", ",", "hi"],
                               input="step\nprint\nstep\ncontinue\n", capture_output=True, text=True, timeout=30)
            runs.append(p.stdout)
        runs.append(Conn(srv.port).call("GET", "ldb:cnt"))
        outputs.append(runs)
    assert outputs[0] == outputs[1]
    assert outputs[0][2] == b"11"  # the forked run rolled back, the synchronous one kept its INCR
    assert "<value> x = 11" in outputs[0][0] and "(Lua debugging session ended -- dataset changes rolled back)" in outputs[0][0]


@pytest.mark.parametrize("start", [start_raxdb, pytest.param(start_redis, marks=pytest.mark.oracle)], ids=["raxdb", "redis"])
def test_shutdown_ends_forked_sessions(start):
    srv = start()
    try:
        c = Conn(srv.port)
        assert c.call("SCRIPT", "DEBUG", "yes") == b"OK"
        assert c.call("EVAL", "return 1", "0")[0] == b"* Stopped at 1, stop reason = step over"
        Conn(srv.port).call("SHUTDOWN", "NOSAVE")
        assert c.read() == "closed"  # the child was killed with its server
        assert srv.wait_log("Killing debugging session")
    finally:
        srv.stop()
