"""rename-command, against redis-server started with the same directives: a renamed command answers
to its new name only (in any case, in MULTI, in scripts, COMMAND GETKEYS and INFO), one renamed to
"" is gone from dispatch and from COMMAND, its statistics keep its own name, and bad directives
stop start-up with Redis's errors."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile

import pytest

from tests.support.diff import Diff, parse
from tests.support.servers import COMMON, ROOT, redis_binary, start_raxdb, start_redis

RENAMES = ("--rename-command", "FLUSHALL", "", "--rename-command", "get", "fetch",
           "--rename-command", "CONFIG", "myconfig", "--rename-command", "fetch", "grab")


@pytest.fixture(scope="module")
def renamed():
    a, b = start_raxdb(*RENAMES), start_redis(*RENAMES)
    d = Diff(a.port, b.port)
    try:
        yield d
    finally:
        d.close()
        a.stop()
        b.stop()


@pytest.mark.oracle
def test_renamed_commands_answer_to_their_new_names(renamed):
    d = renamed
    d.script("""
        SET k v
        GRAB k
        grab k
        GET k
        FETCH k
        FLUSHALL
        flushall async
        myconfig GET maxmemory-policy
        CONFIG GET maxmemory-policy
        MULTI
        GRAB k
        GET k
        EXEC
        MULTI
        GRAB k
        EXEC
        EVAL "return redis.call('grab', KEYS[1])" 1 k
        EVAL "return redis.pcall('get', KEYS[1])" 1 k
        COMMAND GETKEYS grab k
        COMMAND GETKEYS get k
        COMMAND INFO grab
        COMMAND INFO get flushall
        COMMAND COUNT
        EXISTS k
    """)


@pytest.mark.oracle
def test_introspection_keeps_the_commands_own_names(renamed):
    d = renamed
    d("MYCONFIG", "RESETSTAT")
    d("GRAB", "k")
    ours, theirs = d.both("INFO", "commandstats")
    stats = [sorted(re.findall(r"cmdstat_(\w+):calls=(\d+)", parse(x).decode())) for x in (ours, theirs)]
    assert stats[0] == stats[1]
    assert ("get", "1") in stats[0]
    lists = [sorted(parse(x)) for x in d.both("COMMAND", "LIST")]
    assert b"get" in lists[0] and b"flushall" not in lists[0] and b"grab" not in lists[0]
    assert lists[0] == lists[1]


@pytest.mark.oracle
@pytest.mark.parametrize("directive", [["nosuch", "x"], ["get", "set"], ["get"]], ids=["unknown", "taken", "arity"])
def test_bad_rename_stops_start_up_as_redis(directive):
    outs = []
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("rename-command " + " ".join(f'"{w}"' for w in directive) + "\n")
    conf.close()
    for argv in ([sys.executable, "-m", "raxdb.server"], [redis_binary()]):
        proc = subprocess.run([*argv, conf.name, "--port", "0", *COMMON], capture_output=True, text=True,
                              timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        outs.append((proc.returncode, re.sub(r"\(Redis [^)]*\)", "", proc.stderr)))
    assert outs[0] == outs[1]
    assert outs[0][0] == 1


def test_subcommand_name_is_refused():
    """redis-server 7.0 asserts (crashes) on a subcommand's name; raxdb refuses it."""
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write('rename-command config|get x\n')
    conf.close()
    proc = subprocess.run([sys.executable, "-m", "raxdb.server", conf.name, "--port", "0"], capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "No such command in rename-command" in proc.stderr
