"""Interpreted Python functions the hot path calls per command, by workload (bench/hotpath.py's).

Compiled, a command's path from the read to its reply should run no interpreted function: one
costs ~400 instructions to enter (a frame, its arguments), a tenth of a SET's whole cost at -P 16.
Such a call hides easily: `typing.cast` is a call of typing.py's function even in a compiled module
(Cython does not elide it), and a helper of an interpreted module called from a compiled one
counts the same.  `sys.setprofile` sees every interpreted call and none of the compiled ones, so
what it counts inside the measured loop is exactly the interpreted work.

    .venv/bin/python bench/pycalls.py [WORKLOAD ...]      # all of hotpath's by default
    (HOTPATH_LIGHT=1 for a quicker set-up; -P 16 unless PIPELINE=1)

tests/unit/test_compiled_build.py runs `per_command` over the common workloads and expects nothing.
"""

from __future__ import annotations

import collections
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import hotpath  # noqa: E402
from raxdb.server.commands import import_all  # noqa: E402


def per_command(name: str, pipeline: int = 16, commands: int = 1600, least: float = 0.5) -> dict[str, float]:
    """Interpreted calls per command (or block) of workload `name` that ran at least `least` times a
    command, by 'file:line:function' (a C function called from interpreted code as 'C:name').
    hotpath.run brackets each measured loop with two process_time calls: the count runs from the
    first to the second, so the set-up is not in it."""
    counts: collections.Counter[str] = collections.Counter()
    root = str(Path(__file__).resolve().parent.parent) + "/"
    harness = hotpath.__file__  # its loop, running when the count starts, calls len once a batch

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename == harness:  # the harness's stand-in for the loop (PUBLISH_100's)
                return
            counts[f"{code.co_filename.replace(root, '')}:{code.co_firstlineno}:{code.co_name}"] += 1
        elif event == "c_call" and frame.f_code.co_filename != harness:  # not the measured loop's own
            counts["C:" + getattr(arg, "__qualname__", str(arg))] += 1

    on = False

    def process_time() -> float:
        nonlocal on
        on = not on
        sys.setprofile(profile if on else None)
        return time.process_time()

    import_all()  # a family imported on first use would count its import as the workload's
    saved = hotpath.time
    hotpath.time = types.SimpleNamespace(process_time=process_time)  # type: ignore[assignment]
    try:
        hotpath.run(name, pipeline, commands, setup_commands=2000, counting=True)
    finally:
        sys.setprofile(None)
        hotpath.time = saved
    units = commands
    return {k: round(v / units, 2) for k, v in counts.items() if v / units >= least}


def main() -> None:
    names = sys.argv[1:] or [n for n in [*hotpath.WORKLOADS, *hotpath.BLOCKS] if n not in ("SET_1M", "GET_1M")]
    pipeline = int(os.environ.get("PIPELINE", "16"))
    for name in names:
        calls = per_command(name, pipeline, least=0.05)
        print(f"{name:18s} {dict(sorted(calls.items(), key=lambda kv: -kv[1]))}", flush=True)


if __name__ == "__main__":
    main()
