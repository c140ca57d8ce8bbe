"""BullMQ (npm, version pinned in package-lock.json) against raxdb and, to prove the checks, redis-server.

BullMQ is the heaviest Redis user among the job queues: nearly every operation is a Lua script, an
idle worker blocks in BZPOPMIN, and QueueEvents tails a stream with XREAD BLOCK. The checks live in
bullmq_checks.mjs (add -> Worker -> waitUntilFinished, retries with backoff, progress events, delayed
and prioritized jobs, a parent/children flow, a job scheduler); this test requires every one to pass,
through each driver BullMQ accepts: ioredis (RESP2) and a native node-redis client in RESP2 and RESP3.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CHECKS = ["connect", "round trip", "retries and failure", "progress events", "delayed and prioritized", "flow",
          "job scheduler", "counts"]


def _ensure_packages() -> None:
    assert shutil.which("node") and shutil.which("npm"), "Node.js and npm are required for the client matrix"
    wanted = json.loads((HERE / "package.json").read_text())["dependencies"]
    if not all((HERE / "node_modules" / name).is_dir() for name in wanted):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, capture_output=True,
                       timeout=600)


@pytest.mark.parametrize("driver", ["ioredis", "node-redis-resp2", "node-redis-resp3"])
@pytest.mark.parametrize("server", ["raxdb", pytest.param("oracle", marks=pytest.mark.oracle)])
def test_bullmq(request, server, driver):
    _ensure_packages()
    port = request.getfixturevalue(server).port
    proc = subprocess.run(["node", "bullmq_checks.mjs", str(port), driver], cwd=HERE, capture_output=True, text=True,
                          timeout=120)
    passed = {line[3:] for line in proc.stdout.splitlines() if line.startswith("ok ")}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passed == {f"bullmq {check}" for check in CHECKS}
    # BullMQ checks the server's INFO: a version below its minimum or an eviction policy other than
    # noeviction would be reported here
    assert proc.stderr == "", proc.stderr
