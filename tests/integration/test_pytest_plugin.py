"""The pytest plugin (raxdb/testing/plugin.py) as a project outside the repository uses it: a small
test project in a temporary directory using every fixture and raxdb.serve(), run by pytest in a
subprocess, in RESP2 and RESP3; its servers gone after the session, after a failing test and after
the test process is killed with SIGKILL (checked by pid and port).

Two ways: against this checkout (the plugin named with -p: this tree's entry points are not the
installed ones), and `venv`: a fresh venv where the checkout is pip-installed as a user would
install it (pytest then finds the plugin by its pytest11 entry point alone), also under
pytest-xdist with 2 workers.  The second needs PyPI (pip's cache helps) and takes a minute or two;
one venv serves the whole module."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import venv
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.integration.test_embedded import refuses, wait_gone
from tests.support.servers import ROOT

PROJECT_TESTS = textwrap.dedent('''
    """A user's tests of the raxdb fixtures."""
    import os
    import sys

    import pytest
    import redis

    import raxdb

    NOTES = os.environ.get("RAXDB_TEST_NOTES")


    def note(srv, kind="other"):
        """The servers started, for the outer test to check they are gone (and, under xdist, that
        each worker had its own session server)."""
        if NOTES:
            with open(NOTES, "a") as fh:
                fh.write(f"{srv.pid} {srv.port} {kind} {os.environ.get('PYTEST_XDIST_WORKER', '-')}\\n")


    def protocol(config):
        return int(config.getoption("raxdb_protocol") or config.getini("raxdb_protocol"))


    def test_server_and_url(raxdb_server, raxdb_url):
        note(raxdb_server, "session")
        assert raxdb_url == raxdb_server.url == f"redis://127.0.0.1:{raxdb_server.port}/0"
        assert redis.Redis.from_url(raxdb_url).ping()


    @pytest.mark.parametrize("n", range(3))
    def test_client_flushed_and_protocol(raxdb_server, raxdb_client, pytestconfig, n):
        note(raxdb_server, "session")
        assert raxdb_client.dbsize() == 0  # whatever the test before left
        raxdb_client.set(f"k{n}", "v")
        assert raxdb_client.get(f"k{n}") == b"v"
        assert int(raxdb_client.client_info()["resp"]) == protocol(pytestconfig)


    def test_config_from_ini_and_command_line(raxdb_client):
        assert raxdb_client.config_get("hz") == {"hz": "25"}  # ini raxdb_config
        assert raxdb_client.config_get("maxmemory") == {"maxmemory": str(20 * 1024 * 1024)}  # --raxdb-config


    @pytest.mark.asyncio  # pytest-asyncio's default, strict mode
    async def test_async_client(raxdb_async_client, pytestconfig):
        assert await raxdb_async_client.dbsize() == 0
        await raxdb_async_client.set("a", 1)
        assert await raxdb_async_client.get("a") == b"1"
        assert int((await raxdb_async_client.client_info())["resp"]) == protocol(pytestconfig)


    def test_factory_replica(raxdb_server, raxdb_client, raxdb_factory):
        replica = raxdb_factory(config={"replicaof": f"{raxdb_server.host} {raxdb_server.port}"})
        note(replica)
        # the replica has the write once it acknowledged it (WAIT outlasts redis-py's 5 s timeout)
        master = redis.Redis.from_url(raxdb_server.url, socket_timeout=None)
        assert master.set("r", "1") and master.wait(1, 60000) == 1
        assert redis.Redis.from_url(replica.url).get("r") == b"1"


    def test_factory_own_config(raxdb_factory):
        srv = raxdb_factory(config={"maxmemory-policy": "allkeys-lru"})
        note(srv)
        client = redis.Redis.from_url(srv.url)
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "allkeys-lru"}
        assert client.config_get("hz") == {"hz": "25"}  # the session's options under its own


    def test_serve_directly():
        with raxdb.serve(config={"databases": 4}) as srv:
            note(srv)
            assert redis.Redis.from_url(srv.url).config_get("databases") == {"databases": "4"}


    def test_with_on_a_running_server(raxdb_factory):
        srv = raxdb_factory()
        note(srv)
        with srv as entered:  # started by the factory already: entered as it is
            assert entered is srv and redis.Redis.from_url(srv.url).ping()
        assert not srv.running  # the block's end stops it; the factory's stop after it is harmless
        srv.stop()
        srv.close()
        started = raxdb.serve().start()
        note(started)
        with started:
            assert redis.Redis.from_url(started.url).ping()
        started.close()
        started.close()


    @pytest.mark.skipif(not os.environ.get("RAXDB_TEST_FAIL"), reason="the outer test asks for a failure")
    def test_fails(raxdb_factory):
        note(raxdb_factory())
        assert False, "fails on purpose"


    @pytest.mark.skipif(not os.environ.get("RAXDB_TEST_BLOCK"), reason="the outer test kills this run")
    def test_blocks(raxdb_server, raxdb_factory):
        note(raxdb_server, "session")
        note(raxdb_factory())
        print("blocking", flush=True)
        sys.stdin.readline()  # until the outer test kills the process
''')

# The clock a test moves (issue #55), in a file of its own: the project's second test module.
PROJECT_CLOCK_TESTS = textwrap.dedent('''
    """A user's tests that move the servers' clocks."""
    import redis


    def test_clock_moves_time(raxdb_client, raxdb_clock):
        raxdb_clock.freeze()
        raxdb_client.set("session", "alice", ex=10)
        raxdb_clock.advance(3)
        assert raxdb_client.ttl("session") == 7
        raxdb_clock.advance(8)
        assert raxdb_client.get("session") is None


    def test_clock_is_reset_after_each_test(raxdb_server, raxdb_client):
        now, frozen, ahead = raxdb_server.control("CLOCK", "GET")[1::2]
        assert frozen == 0 and abs(ahead) < 10**6  # back on the wall clock, running


    def test_factory_server_time(raxdb_factory):
        srv = raxdb_factory()
        client = redis.Redis.from_url(srv.url)
        client.set("k", "v", ex=100)
        srv.advance_time(101)
        assert client.dbsize() == 0


    def test_leaves_a_fault_and_a_moved_clock(raxdb_server):
        raxdb_server.advance_time(3600)
        raxdb_server.fail_for(600, "LOADING")


    def test_the_client_fixture_starts_clean(raxdb_server, raxdb_client):
        assert raxdb_client.set("k", "v")  # no LOADING left armed, the FLUSHALL went through too
        now, frozen, ahead = raxdb_server.control("CLOCK", "GET")[1::2]
        assert frozen == 0 and abs(ahead) < 10**6
''')

CLUSTER_TESTS = textwrap.dedent('''
    """A user's tests of the raxdb cluster fixtures."""
    import os

    import pytest
    import redis
    from redis.cluster import ClusterNode, RedisCluster

    import raxdb
    from test_with_raxdb import note

    pytestmark = pytest.mark.skipif(not os.environ.get("RAXDB_TEST_CLUSTER"), reason="the outer test runs these")


    def masters_wanted(config):
        return int(config.getoption("raxdb_cluster_masters") or config.getini("raxdb_cluster_masters"))


    @pytest.mark.parametrize("n", range(2))
    def test_session_cluster_flushed(raxdb_cluster, raxdb_cluster_client, pytestconfig, n):
        for node in raxdb_cluster.nodes:
            note(node, "cluster")
        assert len(raxdb_cluster.masters) == masters_wanted(pytestconfig) and raxdb_cluster.replicas == []
        assert raxdb_cluster.nodes == raxdb_cluster.masters
        assert raxdb_cluster.startup_nodes == [(node.host, node.port) for node in raxdb_cluster.nodes]
        assert raxdb_cluster_client.dbsize() == 0  # whatever the test before left
        for i in range(100):
            raxdb_cluster_client.set(f"key:{i}", i)
        per_master = [redis.Redis.from_url(m.url).dbsize() for m in raxdb_cluster.masters]
        assert sum(per_master) == 100 and all(per_master)  # spread over every master
        assert raxdb_cluster_client.get("key:7") == b"7"
        primaries = raxdb_cluster_client.get_primaries()
        assert sorted(p.port for p in primaries) == sorted(m.port for m in raxdb_cluster.masters)
        assert int(raxdb_cluster_client.client_info()["resp"]) == int(
            pytestconfig.getoption("raxdb_protocol") or pytestconfig.getini("raxdb_protocol"))


    @pytest.mark.asyncio
    async def test_async_cluster_client(raxdb_async_cluster_client):
        client = raxdb_async_cluster_client
        assert await client.dbsize() == 0
        await client.set("{user:1}:a", 1)
        await client.set("{user:1}:b", 2)
        assert await client.mget("{user:1}:a", "{user:1}:b") == [b"1", b"2"]
        with pytest.raises(redis.ResponseError, match="hash to the same slot"):  # CROSSSLOT
            await client.execute_command("MSET", "a", 1, "b", 2, target_nodes=client.get_random_node())
        async with raxdb.serve_cluster(masters=1) as cluster:  # raxdb.serve_cluster() from a coroutine
            note(cluster.nodes[0])
            assert cluster.running
        assert not cluster.running


    def test_startup_nodes_and_url(raxdb_cluster):
        client = RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in raxdb_cluster.startup_nodes])
        client.set("x", 1)
        assert RedisCluster.from_url(raxdb_cluster.url).get("x") == b"1"
        client.close()


    STOPPED = []


    def test_a_test_stops_a_node(raxdb_cluster):
        STOPPED.append(raxdb_cluster.nodes[0].port)
        raxdb_cluster.nodes[0].stop()


    def test_the_next_test_has_a_whole_cluster(raxdb_cluster, raxdb_cluster_client):
        for node in raxdb_cluster.nodes:
            note(node, "cluster")
        assert raxdb_cluster.running and raxdb_cluster.nodes[0].port not in STOPPED  # a new one
        raxdb_cluster_client.set("back", 1)
        assert raxdb_cluster_client.get("back") == b"1"


    def test_replicas_and_failovers(raxdb_cluster_factory):
        cluster = raxdb_cluster_factory(masters=3, replicas=1)
        for node in cluster.nodes:
            note(node)
        assert len(cluster.nodes) == 6 and cluster.nodes == cluster.masters + cluster.replicas
        client = RedisCluster(host=cluster.host, port=cluster.port)
        for i in range(50):
            client.set(f"k{i}", i)
        first, second = cluster.masters[0], cluster.masters[1]
        replica = cluster.replicas_of(first)[0]
        assert cluster.master_of(replica) is first
        assert redis.Redis.from_url(replica.url).info("replication")["role"] == "slave"
        assert cluster.simulate_failover(first) is replica  # CLUSTER FAILOVER: no write lost
        assert cluster.masters[0] is replica and cluster.master_of(first) is replica
        assert redis.Redis.from_url(replica.url).info("replication")["role"] == "master"
        assert redis.Redis.from_url(first.url).info("replication")["role"] == "slave"
        # TAKEOVER does not wait for the replica to catch up (nor does FORCE): what it had not
        # received would be lost, as in Redis, so the test waits for it first
        assert redis.Redis.from_url(second.url).wait(1, 60000) == 1
        taken = cluster.simulate_failover(second, how="TAKEOVER")
        assert cluster.masters[1] is taken and cluster.master_of(second) is taken
        # the client follows the MOVED replies to the new masters; every write is there
        assert [client.get(f"k{i}") for i in range(50)] == [str(i).encode() for i in range(50)]
        client.set("after", 1)
        assert redis.Redis.from_url(cluster.url).execute_command("CLUSTER", "COUNTKEYSINSLOT", 0) == 0
        client.close()


    def test_one_node_cluster_in_a_with_block(raxdb_cluster_factory):
        cluster = raxdb_cluster_factory(masters=1)
        note(cluster.nodes[0])
        with cluster as entered:  # started by the factory already: entered as it is
            assert entered is cluster
            client = RedisCluster.from_url(cluster.url)
            client.set("a", 1)
            assert [p.port for p in client.get_primaries()] == [cluster.port]
            info = redis.Redis.from_url(cluster.url).cluster("info")
            assert info["cluster_state"] == "ok" and info["cluster_slots_assigned"] == "16384"
            client.close()
        assert not cluster.running
        cluster.stop()
        cluster.close()
''')

PROJECT_INI = textwrap.dedent("""
    [pytest]
    asyncio_default_fixture_loop_scope = function
    raxdb_config =
        hz=25
""")


def write_project(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "pytest.ini").write_text(PROJECT_INI)
    (where / "test_with_raxdb.py").write_text(PROJECT_TESTS)
    (where / "test_clock_with_raxdb.py").write_text(PROJECT_CLOCK_TESTS)
    (where / "test_cluster_with_raxdb.py").write_text(CLUSTER_TESTS)
    return where


def noted(path: Path) -> list[tuple[int, int, str, str]]:
    """(pid, port, kind, xdist worker) of each server the project's tests noted (one a test)."""
    return [(int(p), int(q), kind, worker)
            for p, q, kind, worker in (line.split() for line in path.read_text().splitlines())]


def assert_all_gone(notes: Path, timeout: float = 0.0) -> None:
    servers = noted(notes)
    assert servers
    for pid, port, _, _ in set(servers):
        assert wait_gone(pid, timeout), f"server pid {pid} (port {port}) still runs"
        assert refuses("127.0.0.1", port)


class Project:
    """A test project and the pytest command that runs it."""

    def __init__(self, path: Path, command: list[str], env: dict[str, str]) -> None:
        self.path = path
        self.command = command
        self.env = env

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.command, *args], cwd=self.path, env={**self.env, **env}, capture_output=True,
                              text=True, timeout=600)


def outcome(result: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """pytest's summary line as counts: {"passed": 13, "skipped": 10}; warnings count too."""
    tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|warnings?)", tail)}


# ---- against this checkout ------------------------------------------------------------------------
@pytest.fixture
def checkout_project(tmp_path: Path) -> Project:
    """The plugins named explicitly, autoloading off: the venv's installed raxdb may be another
    checkout's, whose entry points may or may not name the plugin."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    command = [sys.executable, "-m", "pytest", "-p", "pytest_asyncio.plugin", "-p", "raxdb.testing.plugin",
               "-p", "no:cacheprovider", "-q", "--raxdb-config", "maxmemory=20mb"]
    return Project(write_project(tmp_path / "project"), command, env)


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("protocol", ["2", "3"])
def test_fixtures_in_a_project(checkout_project: Project, tmp_path: Path, protocol: str, mode: str):
    notes = tmp_path / "notes"
    result = checkout_project.run("--raxdb-protocol", protocol, "--raxdb-mode", mode, RAXDB_TEST_NOTES=str(notes))
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcome(result) == {"passed": 15, "skipped": 10}
    assert_all_gone(notes)  # stopped by the fixtures, not by their parent's death: gone at once


@pytest.mark.parametrize(("mode", "protocol", "masters"), [("process", "2", "3"), ("thread", "3", "1")])
def test_cluster_fixtures_in_a_project(checkout_project: Project, tmp_path: Path, mode: str, protocol: str,
                                       masters: str):
    """The cluster fixtures: the session's cluster of 3 masters (of 1, the one-node cluster, in
    the second run), its clients sync and asyncio, a factory's cluster with replicas and two
    failovers; every node gone afterwards."""
    notes = tmp_path / "notes"
    result = checkout_project.run("test_cluster_with_raxdb.py", "--raxdb-protocol", protocol, "--raxdb-mode", mode,
                                  "--raxdb-cluster-masters", masters, RAXDB_TEST_NOTES=str(notes),
                                  RAXDB_TEST_CLUSTER="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcome(result) == {"passed": 8}
    assert len({port for _, port, kind, _ in noted(notes) if kind == "cluster"}) == 2 * int(masters)  # one restart
    assert_all_gone(notes)


def test_servers_gone_after_a_failing_test(checkout_project: Project, tmp_path: Path):
    notes = tmp_path / "notes"
    result = checkout_project.run("-k", "fails or server_and_url", RAXDB_TEST_NOTES=str(notes), RAXDB_TEST_FAIL="1")
    assert result.returncode == 1
    assert outcome(result) == {"passed": 1, "failed": 1}
    assert "fails on purpose" in result.stdout
    assert len(set(noted(notes))) == 2
    assert_all_gone(notes)


def test_servers_gone_after_the_test_process_is_killed(checkout_project: Project, tmp_path: Path):
    notes = tmp_path / "notes"
    proc = subprocess.Popen([*checkout_project.command, "-s", "-k", "blocks"], cwd=checkout_project.path,
                            env={**checkout_project.env, "RAXDB_TEST_NOTES": str(notes), "RAXDB_TEST_BLOCK": "1"},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # until the test says it is blocked, its servers started
            if "blocking" in line:
                break
        assert len(set(noted(notes))) == 2
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert_all_gone(notes, timeout=60)
    finally:
        proc.kill()
        proc.wait()


def test_unknown_options_are_usage_errors(checkout_project: Project):
    result = checkout_project.run("--raxdb-config", "no-equals-sign")
    assert result.returncode == 4  # pytest's usage error
    assert "expected KEY=VALUE" in result.stderr


def test_a_bad_server_option_fails_with_the_servers_report(checkout_project: Project):
    result = checkout_project.run("-k", "server_and_url", "--raxdb-config", "no-such-option=1")
    assert result.returncode == 1
    assert "Bad directive or wrong number of arguments" in result.stdout


@pytest.mark.oracle
def test_the_plugin_does_not_disturb_this_suite():
    """This repository's own tests keep their fixtures with the plugin loaded (as it is once
    raxdb is installed with the entry point): a sample of them, using the conftest's `raxdb`,
    `oracle` and `diff` fixtures beside the plugin's."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # Loaded by its entry point where raxdb is installed with it (`make test`'s venv), else by name:
    # naming it as well would register it twice, which pytest refuses.
    installed = any(ep.value == "raxdb.testing.plugin" for ep in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "raxdb.testing.plugin"]
    result = subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q",
                             "tests/unit/test_smoke.py"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcome(result).get("passed", 0) > 0


# ---- installed in a fresh venv, as a user would -------------------------------------------------
IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "node_modules", "*.so", "__pycache__", "*.egg-info",
                                 ".pytest_cache", ".ruff_cache", "tests", "bench", "docker")


@pytest.fixture(scope="module")
def venv_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A venv without the system's packages, the checkout (a copy: the build writes beside its
    source) installed interpreted (RAXDB_PURE=1: compiling takes minutes) with redis-py, pytest,
    pytest-asyncio and pytest-xdist from PyPI."""
    base = tmp_path_factory.mktemp("venv-project")
    source = base / "raxdb-src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=IGNORED)
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source), "redis",
                    "pytest", "pytest-asyncio", "pytest-xdist"], env={**env, "RAXDB_PURE": "1"}, check=True,
                   timeout=900, cwd=base)
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--raxdb-config", "maxmemory=20mb"]
    yield Project(write_project(base / "project"), command, env)


@pytest.mark.venv
def test_installed_package_is_what_pytest_loads(venv_project: Project):
    result = subprocess.run([venv_project.command[0], "-c", "import raxdb, raxdb.testing.plugin; print(raxdb.__file__)"],
                            cwd=venv_project.path, env=venv_project.env, capture_output=True, text=True, check=True)
    assert "site-packages" in result.stdout  # not this checkout


@pytest.mark.venv
@pytest.mark.parametrize("protocol", ["2", "3"])
@pytest.mark.parametrize("workers", [None, "2"], ids=["one-process", "xdist-2"])
def test_installed_plugin(venv_project: Project, tmp_path: Path, protocol: str, workers: str | None):
    notes = tmp_path / "notes"
    args = ["--raxdb-protocol", protocol, *(["-n", workers] if workers else [])]
    result = venv_project.run(*args, RAXDB_TEST_NOTES=str(notes))
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcome(result) == {"passed": 15, "skipped": 10}
    sessions: dict[str, set[int]] = {}
    for pid, _, kind, worker in noted(notes):
        if kind == "session":
            sessions.setdefault(worker, set()).add(pid)
    # one session server per session: per worker under xdist (each worker that ran a test of the
    # session server started its own; which tests each worker runs is xdist's choice)
    if workers:
        assert sessions and set(sessions) <= {"gw0", "gw1"}
    else:
        assert sorted(sessions) == ["-"]
    assert all(len(pids) == 1 for pids in sessions.values())
    assert len(set.union(*sessions.values())) == len(sessions)
    assert_all_gone(notes)


@pytest.mark.venv
def test_installed_cluster_fixtures(venv_project: Project, tmp_path: Path):
    """The cluster fixtures from the installed package, under pytest-xdist: each worker that uses
    raxdb_cluster forms its own session cluster (which workers do is xdist's choice)."""
    notes = tmp_path / "notes"
    result = venv_project.run("test_cluster_with_raxdb.py", "-n", "2", RAXDB_TEST_NOTES=str(notes),
                              RAXDB_TEST_CLUSTER="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcome(result) == {"passed": 8}
    workers: dict[str, set[int]] = {}
    for _, port, kind, worker in noted(notes):
        if kind == "cluster":
            workers.setdefault(worker, set()).add(port)
    # one cluster a worker, or two where a worker ran the test that stops a node before the next
    assert workers and set(workers) <= {"gw0", "gw1"} and all(len(ports) in (3, 6) for ports in workers.values())
    assert len(set.union(*workers.values())) == sum(len(ports) for ports in workers.values())
    assert_all_gone(notes)
