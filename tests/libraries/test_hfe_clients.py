"""ioredis and node-redis (npm, pinned in package-lock.json) calling Redis 7.4's hash field
expiration against raxdb started with compat-version 7.4 (#59): what a new user of those clients
does (hfe_clients.mjs).  redis-py's hexpire family is what tests/unit/type/test_hash_field_expire.py
calls."""

from __future__ import annotations

import subprocess

from tests.libraries.test_node_clients import HERE, _ensure_packages
from tests.support.servers import start_raxdb

CHECKS = {"ioredis hexpire", "node-redis hExpire resp2", "node-redis hExpire resp3"}


def test_hfe_node_clients():
    _ensure_packages()
    srv = start_raxdb("--compat-version", "7.4", "--raxdb-test-controls", "yes")
    try:
        proc = subprocess.run(["node", "hfe_clients.mjs", str(srv.port)], cwd=HERE, capture_output=True, text=True,
                              timeout=120)
    finally:
        srv.stop()
    passed = {line[3:] for line in proc.stdout.splitlines() if line.startswith("ok ")}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passed == CHECKS
