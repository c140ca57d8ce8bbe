"""A light install serves: a copy of this checkout (its source files alone, no compiled module),
`RAXDB_PURE=1 pip install`ed as a user would into a fresh venv with only hiredis and lupa beside it
(no uvloop, no setproctitle), runs `python -m raxdb.server` from outside the checkout, answers
PING, SET, GET and EVAL from this venv's redis-py, and says in its log that it runs interpreted, on
asyncio's own loop, without a process title.

Slow (a venv and three installs, from pip's cache where it has them): one venv for the module.
Needs PyPI for the build requirements and the two packages when the cache lacks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.servers import ROOT, ServerProcess, free_port

# what a fresh clone holds of the tree: no build products, no caches, no venv
_NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", "build", "node_modules", "__pycache__", "*.so",
                                         "*.egg-info", ".pytest_cache", ".ruff_cache", ".hypothesis")


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    top = tmp_path_factory.mktemp("light")
    checkout = top / "checkout"
    shutil.copytree(ROOT, checkout, symlinks=True, ignore=_NOT_IN_A_CLONE)
    env_dir = top / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_NO_CACHE_DIR")}
    env["RAXDB_PURE"] = "1"

    def pip(*args: str) -> None:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                       env=env, cwd=top, check=True, timeout=600)

    pip("--no-deps", str(checkout))
    pip("hiredis>=3.0", "lupa>=2.0")  # the dependencies without the optional ones
    yield python
    shutil.rmtree(top, ignore_errors=True)


def test_the_light_install_lacks_the_optional_packages(light_venv):
    for name in ("uvloop", "setproctitle", "redis", "pytest", "pyspark"):
        probe = subprocess.run([str(light_venv), "-c", f"import {name}"], capture_output=True, timeout=60)
        assert probe.returncode != 0, f"{name} is installed"


def test_serves_interpreted_on_plain_asyncio(light_venv, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    srv = ServerProcess([str(light_venv), "-m", "raxdb.server", "--port", str(port), "--bind", "127.0.0.1",
                         "--save", "", "--appendonly", "no"], port, str(tmp_path), "raxdb (light install)", env=env)
    try:
        with redis.Redis(port=port) as r:
            assert r.ping()
            assert r.set("k", "v")
            assert r.get("k") == b"v"
            assert r.eval("return redis.call('GET', KEYS[1])", 1, "k") == b"v"  # lupa, imported on first use
            assert r.config_get("set-proc-title") == {"set-proc-title": "yes"}
    finally:
        srv.stop()
    log = "".join(srv.log)
    assert "uvloop is not installed: running on asyncio's own event loop" in log
    assert "setproctitle is not installed" in log
    assert "No compiled modules: running interpreted" in log
