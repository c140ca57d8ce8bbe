"""ioredis and node-redis (npm, versions pinned in package-lock.json) against raxdb.

The checks live in node_clients.mjs (tls_clients.mjs: the same clients over TLS, raxdb beside
redis-server); this test installs the packages if needed (`npm ci`, which
`make test` also runs) and requires every check to pass.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.servers import free_port, start_raxdb, start_redis
from tests.support.tlscerts import make_certs, tls_args

HERE = Path(__file__).resolve().parent
CHECKS = ["ioredis basic", "ioredis pipeline", "ioredis multi/watch", "ioredis defineCommand", "ioredis pubsub",
          "ioredis streams"] + [f"node-redis {what} resp{v}" for v in (2, 3)
                                for what in ("basic", "multi/pipeline", "scripts", "pubsub", "streams")] + [
    "node-redis client-side cache"]


def _ensure_packages() -> None:
    assert shutil.which("node") and shutil.which("npm"), "Node.js and npm are required for the client matrix"
    if not (HERE / "node_modules" / "ioredis").is_dir() or not (HERE / "node_modules" / "redis").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, capture_output=True,
                       timeout=600)


def test_node_clients(raxdb):
    _ensure_packages()
    proc = subprocess.run(["node", "node_clients.mjs", str(raxdb.port)], cwd=HERE, capture_output=True, text=True,
                          timeout=300)
    passed = {line[3:] for line in proc.stdout.splitlines() if line.startswith("ok ")}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passed == set(CHECKS)


def test_node_clients_over_tls(tmp_path):
    """ioredis's and node-redis's `tls` options (CA, client certificate) against raxdb's TLS port
    and redis-server's: the same replies, and the same refusal without a client certificate."""
    _ensure_packages()
    certs = make_certs(tmp_path)
    outputs = []
    for start in (start_raxdb, start_redis):
        port = free_port()
        srv = start(*tls_args(certs, port))
        try:
            proc = subprocess.run(["node", "tls_clients.mjs", str(port), str(tmp_path)], cwd=HERE,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            outputs.append(proc.stdout.splitlines())
        finally:
            srv.stop()
    assert outputs[0] == outputs[1]
    assert [line.split()[0] for line in outputs[0]] == ["ioredis", "ioredis", "node-redis", "node-redis"]
    assert "ioredis no-cert refused" in outputs[0]


FAULT_CHECKS = ["ioredis reconnects after a drop", "ioredis retries refused connections",
                "ioredis surfaces LOADING and TRYAGAIN", "node-redis reconnects after a drop",
                "node-redis retries refused connections", "node-redis surfaces LOADING"]


def test_node_clients_against_faults():
    """fault_clients.mjs: ioredis and node-redis against DEBUG FAULT (a server of raxdb.serve(),
    whose test controls are on): reconnecting after a drop, retrying refused connections, and
    what they do with -LOADING / -TRYAGAIN."""
    import raxdb

    _ensure_packages()
    with raxdb.serve() as srv:
        proc = subprocess.run(["node", "fault_clients.mjs", str(srv.port)], cwd=HERE, capture_output=True, text=True,
                              timeout=120)
    passed = [line[3:] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passed == FAULT_CHECKS
