"""The container's health check and entry point, exercised without a container engine (CI has
none): the healthcheck script must pass against a live raxdb and fail against a closed port, and
the image's default command line must be one raxdb-server accepts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.servers import free_port, start_raxdb

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def _healthcheck(port: int) -> int:
    env = dict(os.environ, RAXDB_PORT=str(port))
    return subprocess.run([sys.executable, str(DOCKER / "healthcheck.py")], env=env, capture_output=True,
                          timeout=30).returncode


def test_healthcheck_healthy_and_unhealthy(raxdb):
    assert _healthcheck(raxdb.port) == 0
    assert _healthcheck(free_port()) == 1


def test_image_command_line_starts():
    text = (DOCKER / "Dockerfile").read_text()
    cmd = re.search(r'^CMD (\[.*\])$', text, re.M)
    assert cmd is not None
    import json

    args = json.loads(cmd.group(1))
    args = [{"/data": ".", "0.0.0.0": "127.0.0.1"}.get(a, a) for a in args]  # this machine, not a container
    srv = start_raxdb(*args)
    try:
        assert _healthcheck(srv.port) == 0
    finally:
        srv.stop()
