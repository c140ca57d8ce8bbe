"""The atheris fuzz targets (tests/fuzz/targets/) in `make test`: every input of their committed
corpora (seeds from a real redis-server and the regression inputs of findings) replayed through
each target, deterministic and fast; then a short coverage-guided run of each (a fixed number of
executions from a fixed seed, in a subprocess, where atheris owns the process).

Marked `pure`: `make test-pure` replays the corpora through the interpreted modules too, which the
compiled build runs here.  The lua target needs the compiled cbridge; interpreted, it compares lupa's
crossing with itself, which still checks that nothing crashes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.fuzz.targets import common

pytestmark = pytest.mark.pure

HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None
# Executions of each short run (the seed corpus's inputs count among them): ~5 s each, interpreted
# and instrumented (an RDB file of the corpus costs ~0.5 ms so, a Lua script ~1 ms, a RESP frame ~0.1 ms).
SHORT_RUNS = {"resp": 3000, "restore": 800, "rdbfile": 1000, "aof": 1000, "manifest": 3000, "bus": 2000,
              "nodesconf": 3000, "config": 400, "lua": 300}


@pytest.mark.parametrize("name", common.TARGETS)
def test_corpus_replays_clean(name):
    mod = common.load(name)
    mod.setup()
    inputs = common.corpus(name)
    assert inputs, f"no corpus for {name}"
    for path in inputs:
        try:
            mod.one_input(path.read_bytes())
        except Exception as exc:
            raise AssertionError(f"{name}: corpus input {path.name} fails: {exc!r}") from exc


@pytest.mark.skipif(not HAVE_ATHERIS, reason="atheris is not installed (the test extra)")
@pytest.mark.parametrize("name", common.TARGETS)
def test_short_fuzz_run(name, tmp_path):
    runs = SHORT_RUNS[name]
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz.targets.run", name, "--runs", str(runs),
                           "--work", str(tmp_path), "-seed=58"],
                          cwd=common.ROOT, capture_output=True, text=True, timeout=600)
    out = proc.stderr[-4000:]
    assert proc.returncode == 0, out
    assert "Done " in out, out
