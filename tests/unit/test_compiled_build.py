"""The compiled build proves itself: where raxdb is built (`make build`, which `make test` runs
first), every module of server/base/compiled.py's lists has its compiled copy, setup.py compiles
exactly those lists, and a mixed build is told from a whole one (the server names, at start-up,
the modules that run interpreted).  An interpreted tree (`make test-pure`'s copy) is checked by the Makefile's own assert."""

from __future__ import annotations

import runpy
import subprocess
import sys

import pytest

from raxdb.server.base import compiled
from tests.support.servers import ROOT

ALL = compiled.HOT_MODULES + compiled.C_MODULES
BUILT = len(compiled.interpreted_hot_modules()) < len(ALL)


def test_setup_compiles_the_listed_modules(monkeypatch):
    """setup.py's extensions are compiled.py's lists, read from the file, not a copy of them."""
    monkeypatch.setattr(sys, "argv", ["setup.py", "--name"])
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("RAXDB_PURE", "1")  # read the lists only: no cythonize
    names = runpy.run_path(str(ROOT / "setup.py"), run_name="not_main")
    assert tuple(names["HOT_MODULES"]) == compiled.HOT_MODULES
    assert {names["CBRIDGE"].name, names["RDBWALK"].name} == set(compiled.C_MODULES)


@pytest.mark.skipif(not BUILT, reason="an interpreted tree: nothing was compiled")
def test_every_listed_module_is_compiled():
    assert compiled.interpreted_hot_modules() == []


@pytest.mark.skipif(not BUILT, reason="an interpreted tree: nothing was compiled")
def test_every_compiled_module_agrees_with_the_types_it_cimports():
    """A module compiled against an older .pxd of a type it cimports (a field added to
    storage/hashtype.pxd's HashTable while server/commands/t_hash kept its old C file) still
    imports, with Cython's "size changed, may indicate binary incompatibility" warning, and reads
    the type's fields at the offsets it was compiled with.  A clean build never has one; an in-place
    build whose .c files outlived such a change can (a worktree's copied build directory: the
    mtimes stale_modules reads cannot tell).  Each compiled module is imported in a fresh
    interpreter, Cython's warning an error."""
    code = ("import importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    importlib.import_module(name)\n")
    names = [n for n in ALL if n not in compiled.interpreted_hot_modules()]
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code, *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_mixed_build_is_told_from_a_whole_one(tmp_path):
    """The start-up check (server/main.py warns with the list) on a tree of empty files: compiled
    copies for all but one module, then for none."""
    suffix = compiled._SUFFIXES[0]
    for name in ALL:
        path = tmp_path.joinpath(*name.split(".")[1:])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(path.name + suffix).touch()
    assert compiled.interpreted_hot_modules(str(tmp_path)) == []
    tmp_path.joinpath("storage", "lzf" + suffix).unlink()
    assert compiled.interpreted_hot_modules(str(tmp_path)) == ["raxdb.storage.lzf"]
    for path in tmp_path.rglob("*" + suffix):
        path.unlink()
    assert compiled.interpreted_hot_modules(str(tmp_path)) == list(ALL)


# The common workloads' whole path, read to reply, compiled: no interpreted function runs per
# command (bench/pycalls.py).  One costs ~400 instructions to enter; `typing.cast` in a compiled
# module is such a call (EXEC's and scripts' replies paid three to five of them until it was
# noticed), as is any helper of an interpreted module.  Not listed: workloads whose commands
# still call interpreted code by design (GEOSEARCH's sort, the SCAN family's argument parsing),
# and those whose replies span several reads.  PUBLISH_100 leaves one interpreted call per flush,
# Server.flush_writes (once per loop iteration live; at -P 16 once per 16 PUBLISHes, under `least`).
NO_INTERPRETED_CALLS = ["SET", "GET", "SET_PX", "INCR", "MSET", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD",
                        "HSET", "HGET", "SPOP", "ZADD", "ZADD_SMALL", "LRANGE_100", "XADD", "XADD_NEW",
                        "XRANGE_10", "EVALSHA_INCR", "EVALSHA_MIX", "FCALL_INCR", "GEOADD", "BITFIELD",
                        "HGETALL_100", "ZRANGE_100_WS", "ZRANGEBYSCORE_100", "SMEMBERS_100", "SINTER_100",
                        "SUNION_100", "SET_10K", "MULTI_EXEC", "PUBLISH_100"]


@pytest.mark.skipif(not BUILT, reason="an interpreted tree: everything is interpreted")
def test_hot_paths_call_no_interpreted_function(monkeypatch):
    monkeypatch.setenv("HOTPATH_LIGHT", "1")  # the 100k keys are not needed to see what runs
    from bench import pycalls

    found = {name: calls for name in NO_INTERPRETED_CALLS if (calls := pycalls.per_command(name, 16, 320))}
    assert found == {}


# At -P 1 a loop iteration is about a command: what runs once an iteration (the before-sleep
# flush, scheduled by the first queued reply; Redis's beforeSleep) counts a whole call a command
# here.  Server.flush_writes was such a call until it moved into net/client.py (flush_pending),
# and so was the reply list's bookkeeping after a flush bigger than the reply buffer (LRANGE_600,
# HGETALL_100's -P 1 replies) that the kernel took whole.
ONE_A_BATCH = ["SET", "GET", "INCR", "MULTI_EXEC", "LRANGE_600", "HGETALL_100"]


@pytest.mark.skipif(not BUILT, reason="an interpreted tree: everything is interpreted")
def test_once_an_iteration_calls_no_interpreted_function(monkeypatch):
    monkeypatch.setenv("HOTPATH_LIGHT", "1")
    from bench import pycalls

    found = {name: calls for name in ONE_A_BATCH if (calls := pycalls.per_command(name, 1, 200))}
    assert found == {}
