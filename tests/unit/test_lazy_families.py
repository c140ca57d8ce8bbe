"""Command families imported on first use (server/commands/__init__.py, #56).

Start-up registers a placeholder for every command from server/commands/families.py and imports
no family; a family's first command imports it (the DEBUG test controls, the first DEBUG).  What
must hold: the file is what the families register; importing a family at first use changes nothing
but its handlers (no hook, option or command appears, the table keeps its order); the first call through
a placeholder is counted and answered like any other, in a server's own table as in TABLE.  (A
server started from the shell imports the rest while it serves: which of the calls below meets a
placeholder depends on timing, and either way must answer the same.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.diff import RawConnection, parse
from tests.support.servers import start_raxdb

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: what start-up imports, a snapshot of what the imports registered,
# then every family, and the snapshot again.
_PROBE = r"""
import json, sys
import raxdb.server.commands as commands
import raxdb.server.core, raxdb.server.events.notify
from raxdb.server.commands import testcontrols
from raxdb.server.config.options import OPTIONS
from raxdb.server.conn import lifecycle
from raxdb.server.table.registry import TABLE

def snapshot():
    name = lambda f: f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', f)}"
    return {
        "disconnect": [name(f) for f in lifecycle.DISCONNECT_HOOKS],
        "reset": [name(f) for f in lifecycle.RESET_HOOKS],
        "unblock": [name(f) for f in lifecycle.UNBLOCK_HOOK],
        "options": sorted(OPTIONS),
        "commands": [c.fullname for c in TABLE.every_command()],
        "records": [id(c) for c in TABLE.every_command()],  # the handlers go into the same records
    }

def placeholders():
    return sorted(c.fullname for c in TABLE.every_command() if commands.is_placeholder(c.proc))

families = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("raxdb.server.commands.t_"))
before, lazy = snapshot(), placeholders()
controls = sorted(name.decode() for name in testcontrols.CONTROLS)
commands.import_all()
print(json.dumps({"families": families, "before": before, "lazy": lazy, "controls": controls,
                  "after": snapshot(), "left": placeholders(),
                  "loaded": sorted(name.decode() for name in testcontrols.CONTROLS)}))
"""


def test_families_file_is_current():
    """server/commands/families.py is what tools/gen_families.py makes of today's families."""
    out = subprocess.run([sys.executable, "tools/gen_families.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_first_use_imports_register_nothing_else():
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    # start-up imported no family: MULTI's and CLIENT's hooks are the event modules' (watch,
    # tracking), the DEBUG test controls come with the first DEBUG (or import_all)
    assert seen["families"] == []
    assert "get" in seen["lazy"] and "client|list" in seen["lazy"] and "multi" in seen["lazy"]
    # hooks (in order), options, the commands (in order) and their records
    assert seen["after"] == seen["before"]
    assert seen["left"] == []
    assert seen["controls"] == [] and seen["loaded"] == ["clock", "cluster-writable-now", "fault"]


def test_first_call_through_a_placeholder_is_served_and_counted():
    """A lazy family's first command, a container's subcommand and a record a generation copied
    into the server's own table (ZRANK at compat-version 7.2): answered, and counted from the
    first call (INFO commandstats), the second call going straight to the real handler."""
    srv = start_raxdb("--compat-version", "7.2")
    try:
        c = RawConnection(srv.port)
        assert parse(c.call("ZADD", "z", "1", "a")) == 1
        for _ in range(2):
            assert parse(c.call("ZRANK", "z", "a", "WITHSCORE")) == [0, b"1"]
            assert parse(c.call("OBJECT", "ENCODING", "z")) == b"listpack"
            assert parse(c.call("GEOADD", "g", "13.361389", "38.115556", "Palermo")) in (0, 1)
        stats = parse(c.call("INFO", "commandstats")).decode()
        for name in ("zrank", "object|encoding", "geoadd"):
            assert f"cmdstat_{name}:calls=2," in stats
        c.close()
    finally:
        srv.stop()


_FIRST_CALL = r"""
import sys
from types import SimpleNamespace
import raxdb.server.commands
from raxdb.server.table.registry import TABLE

def placeholder(proc):
    return raxdb.server.commands.is_placeholder(proc)

view = TABLE.view((7, 2))  # at 7.2 the server's table copies ECHO's record (its generation's entry)
c = SimpleNamespace(server=SimpleNamespace(table=view))
echo = view.lookup_name(b"echo")
assert echo is not TABLE.lookup_name(b"echo") and placeholder(echo.proc)
assert "raxdb.server.commands.t_connection" not in sys.modules
assert echo.proc(c, [b"echo", b"hi"]) == b"$2\r\nhi\r\n"
assert not placeholder(echo.proc) and echo.proc is TABLE.lookup_name(b"echo").proc
print("ok")
"""


def test_a_placeholder_puts_the_real_handler_in_place():
    """In TABLE's record, and in the server's own copy of a record a generation changed."""
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_ready_freezes_the_families_only_without_a_loaded_dataset(monkeypatch):
    """Once serving, the families load and are frozen with the start-up objects, unless a dataset
    was loaded before: the freeze would take its keys, whose cycles (a stream's consumer groups)
    the collector would then never reclaim once deleted."""
    import gc
    from types import SimpleNamespace

    import raxdb.server.commands as commands
    from raxdb.server import main

    seen: list = []
    monkeypatch.setattr(commands, "import_when_idle", lambda loop, then: seen.append(then))
    monkeypatch.setattr(main.asyncio, "get_running_loop", lambda: None)
    called: list = []
    for sizes in ([0, 0], [0, 3]):
        srv = SimpleNamespace(dbs=[range(n) for n in sizes])
        main._ready(srv, lambda: called.append(1))()  # type: ignore[arg-type]
    assert called == [1, 1]
    from raxdb.server.base import heap
    freezes: list = []
    heaps: list = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1))
    monkeypatch.setattr(heap, "keep_big_blocks", lambda: heaps.append(1))
    seen[0]()
    assert freezes == [1] and heaps == [1]
    seen[1]()
    assert freezes == [1] and heaps == [1, 1]  # the heap's policy either way, no freeze


def test_idle_imports_begin_with_the_data_families():
    import raxdb.server.commands as commands
    from raxdb.server.commands.families import FAMILIES

    order = sorted(set(FAMILIES.values()), key=commands._idle_order)
    assert order[:3] == ["t_connection", "t_string", "t_keys"]
    assert set(commands.IDLE_FIRST) <= set(FAMILIES.values())  # no misspelt name
    assert sorted(order[len(commands.IDLE_FIRST):]) == order[len(commands.IDLE_FIRST):]
