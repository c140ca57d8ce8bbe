"""The container's health check and entry point, exercised without a container engine (CI has
none): the healthcheck script must pass against a live raxdb and fail against a closed port, and
docker/docker-entrypoint.sh, run as a plain process (RAXDB_KEEP_USER=1: no switch to the user
raxdb), must start the server with a config file, flags, or a redis-server command line, keep the
configuration's own protected-mode, run anything else as given, and `exec` the server so that a
SIGTERM sent to the entry point's pid saves (where save points are set) and stops it with status 0."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.support.servers import ROOT, ServerProcess, free_port

DOCKER = ROOT / "docker"
ENTRYPOINT = DOCKER / "docker-entrypoint.sh"


def _healthcheck(port: int) -> int:
    env = dict(os.environ, RAXDB_PORT=str(port))
    return subprocess.run([sys.executable, str(DOCKER / "healthcheck.py")], env=env, capture_output=True,
                          timeout=30).returncode


def test_healthcheck_healthy_and_unhealthy(raxdb):
    assert _healthcheck(raxdb.port) == 0
    assert _healthcheck(free_port()) == 1


def test_image_runs_the_entrypoint():
    text = (DOCKER / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["docker-entrypoint.sh"\]$', text, re.M)
    assert re.search(r'^CMD \["raxdb-server"\]$', text, re.M)
    assert re.search(r"^WORKDIR /data$", text, re.M)


@pytest.fixture
def entrypoint_env(tmp_path: Path) -> dict[str, str]:
    """The environment the image gives the entry point, on this machine: `raxdb-server` on the
    PATH (this tree's server), and no user switch."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "raxdb-server"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m raxdb.server "$@"\n')
    shim.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", RAXDB_KEEP_USER="1",
                PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _start(env: dict[str, str], cwd: Path, port: int, *args: str) -> ServerProcess:
    return ServerProcess(["sh", str(ENTRYPOINT), *args], port, str(cwd), "raxdb (entrypoint)", env=env)


def _config(port: int, *names: str) -> dict[str, str]:
    with redis.Redis(port=port, decode_responses=True) as r:
        assert r.ping()
        return {name: r.config_get(name)[name] for name in names}


def _sigterm(srv: ServerProcess) -> int:
    """SIGTERM to the entry point's pid (docker stop's signal to PID 1), and the exit status."""
    srv.proc.send_signal(signal.SIGTERM)
    return srv.proc.wait(60)


def test_config_file_first(entrypoint_env, tmp_path):
    port = free_port()
    conf = tmp_path / "redis.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\nsave 900 1\nappendonly no\nmaxmemory 10mb\n")
    srv = _start(entrypoint_env, tmp_path, port, str(conf), "--hz", "20")
    try:
        got = _config(port, "port", "maxmemory", "hz", "save", "protected-mode", "dir")
        assert got == {"port": str(port), "maxmemory": "10485760", "hz": "20", "save": "900 1",
                       "protected-mode": "no", "dir": str(tmp_path)}
        with redis.Redis(port=port) as r:
            r.set("kept", "yes")
        assert not (tmp_path / "dump.rdb").exists()
        assert _sigterm(srv) == 0  # the server itself got the signal: the shell exec'd it
    finally:
        srv.stop()
    assert (tmp_path / "dump.rdb").exists()
    assert any("DB saved on disk" in line for line in srv.log)
    assert any("Received SIGTERM" in line for line in srv.log)


def test_flags_only(entrypoint_env, tmp_path):
    port = free_port()
    srv = _start(entrypoint_env, tmp_path, port, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "yes")
    try:
        got = _config(port, "appendonly", "save", "protected-mode")
        assert got == {"appendonly": "yes", "save": "", "protected-mode": "no"}
        assert _sigterm(srv) == 0
    finally:
        srv.stop()
    assert not (tmp_path / "dump.rdb").exists()  # no save points: a shutdown does not save


@pytest.mark.parametrize("command", ["redis-server", "raxdb-server"])
def test_server_command_first(entrypoint_env, tmp_path, command):
    port = free_port()
    srv = _start(entrypoint_env, tmp_path, port, command, "--port", str(port), "--bind", "127.0.0.1",
                 "--save", "", "--protected-mode", "yes")
    try:
        # the user's flag comes after the container default, so it wins
        assert _config(port, "port", "protected-mode") == {"port": str(port), "protected-mode": "yes"}
        assert _sigterm(srv) == 0
    finally:
        srv.stop()


def test_config_file_keeps_its_protected_mode(entrypoint_env, tmp_path):
    port = free_port()
    conf = tmp_path / "redis.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\nsave \"\"\n  protected-mode yes\n")
    srv = _start(entrypoint_env, tmp_path, port, str(conf))
    try:
        assert _config(port, "protected-mode") == {"protected-mode": "yes"}
        assert _sigterm(srv) == 0
    finally:
        srv.stop()


def test_other_commands_run_as_given(entrypoint_env, tmp_path):
    out = subprocess.run(["sh", str(ENTRYPOINT), "echo", "hello", "from", "the", "image"], env=entrypoint_env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert out.stdout == "hello from the image\n"


def _compose_value(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?error}`."""
    def one(m: re.Match[str]) -> str:
        name, op, rest = m.group(1), m.group(2), m.group(3)
        if env.get(name):
            return env[name]
        assert op != ":?", f"compose would stop: {name} unset ({rest})"
        return rest if op == ":-" else ""
    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, text)


def test_cluster_compose_example(entrypoint_env, tmp_path):
    """docker/compose.cluster.yaml without a container engine: six nodes started with the
    commands it gives them (through the entry point, each published port mapped to a free one here),
    then its cluster-create job's redis-cli command (CLUSTER_REPLICAS=0 until cluster replicas are
    built): the cluster forms, and a cluster client reaches every node at the announced address."""
    yaml = pytest.importorskip("yaml")
    from redis.cluster import RedisCluster

    from tests.support.cluster import ClusterNode, wait_agreed

    spec = yaml.safe_load((DOCKER / "compose.cluster.yaml").read_text())
    nodes = {name: svc for name, svc in spec["services"].items() if name.startswith("raxdb-")}
    assert len(nodes) == 6 and set(spec["volumes"]) == set(nodes)
    # every published port is the node's own port or bus port, under the same number
    remap: dict[str, str] = {}
    for svc in nodes.values():
        for mapping in svc["ports"]:
            outside, inside = mapping.split(":")
            assert outside == inside
            remap[inside] = str(free_port())
    env = {"ANNOUNCE_IP": "127.0.0.1", "CLUSTER_REPLICAS": "0"}
    started: list[ClusterNode] = []
    try:
        for name, svc in nodes.items():
            args = [remap.get(a, a) for a in (_compose_value(str(a), env) for a in svc["command"])]
            cwd = tmp_path / name
            cwd.mkdir()
            port = int(args[args.index("--port") + 1])
            assert args[args.index("--cluster-announce-port") + 1] == str(port)
            assert args[args.index("--cluster-announce-bus-port") + 1] == args[args.index("--cluster-port") + 1]
            assert svc["environment"]["RAXDB_PORT"] == next(k for k, v in remap.items() if v == str(port))
            srv = _start(entrypoint_env, cwd, port, *args, "--bind", "127.0.0.1")
            started.append(ClusterNode(srv, redis.Redis(port=port, decode_responses=True)))
        job = spec["services"]["cluster-create"]
        assert set(job["depends_on"]) == set(nodes)
        argv = [_compose_value(str(a), env) for a in job["command"]]
        argv = [re.sub(r":(\d+)$", lambda m: ":" + remap[m.group(1)], a) for a in argv]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        assert out.returncode == 0 and "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
        for n in started:
            n.id = n.conn.execute_command("CLUSTER", "MYID")
        wait_agreed(started)
        rc = RedisCluster(host="127.0.0.1", port=started[0].port, decode_responses=True)
        try:
            assert {node.port for node in rc.get_primaries()} == {n.port for n in started}
            for i in range(200):
                rc.set(f"k{i}", i)
            assert [rc.get(f"k{i}") for i in range(200)] == [str(i) for i in range(200)]
            assert all(n.conn.dbsize() > 0 for n in started)
        finally:
            rc.close()
    finally:
        for n in started:
            n.stop()
