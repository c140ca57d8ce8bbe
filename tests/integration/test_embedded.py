"""raxdb.serve() (raxdb/embed/): the defaults, options, modes, failures, and that a server is gone
(its port refusing connections, its pid gone) after the block, after an exception in it, and after
its parent process is killed with SIGKILL; process mode's servers forked from the template
(raxdb/embed/template.py), fresh each, and the template gone with its caller.

Waits are on events: the server's exit through a pidfd (or the parent's pipe), never a sleep."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

import raxdb
from raxdb.embed import api, template
from tests.support.servers import ROOT


def wait_gone(pid: int, timeout: float = 60.0) -> bool:
    """Has process `pid` ended (by now, or within `timeout`)?  A pidfd becomes readable when its
    process ends, whoever its parent is (here not us: the server's parent was killed)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def parent_of(pid: int) -> int:
    """The parent's pid, from /proc/<pid>/stat (the field after the command's closing parenthesis)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def refuses(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=10).close()
    except ConnectionRefusedError:
        return True
    return False


def assert_gone(srv: raxdb.EmbeddedServer) -> None:
    assert refuses(srv.host, srv.port)
    if srv.mode == "process":
        assert srv.pid is not None and wait_gone(srv.pid, 0)
    assert not srv.running


def test_defaults():
    with raxdb.serve() as srv:
        client = redis.Redis.from_url(srv.url)
        assert client.ping()
        assert srv.url == f"redis://127.0.0.1:{srv.port}/0"
        assert srv.host == "127.0.0.1" and srv.port > 0 and srv.pid != os.getpid()
        assert srv.config == {"bind": "127.0.0.1", "port": str(srv.port), "save": "", "appendonly": "no",
                              "repl-diskless-sync-delay": "0", "dir": srv.dir, "raxdb-test-controls": "yes"}
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("raxdb-test-controls") == {"raxdb-test-controls": "yes"}
        assert client.config_get("appendonly") == {"appendonly": "no"}
        assert client.config_get("dir") == {"dir": os.path.realpath(srv.dir)}
        assert srv.unixsocket is None
        assert os.path.isdir(srv.dir)
        client.close()
    assert not os.path.exists(srv.dir)
    assert_gone(srv)
    assert "Ready to accept connections" in srv.log  # the output stays readable


def test_config_options_applied():
    config = {"appendonly": "yes", "maxmemory": "10mb", "hz": 20, "save": "900 1", "lazyfree-lazy-expire": True}
    with raxdb.serve(config) as srv:
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("maxmemory") == {"maxmemory": str(10 * 1024 * 1024)}
        assert client.config_get("hz") == {"hz": "20"}
        assert client.config_get("save") == {"save": "900 1"}
        assert client.config_get("lazyfree-lazy-expire") == {"lazyfree-lazy-expire": "yes"}
        assert os.path.isdir(os.path.join(srv.dir, "appendonlydir"))
        assert srv.config["appendonly"] == "yes" and srv.config["hz"] == "20"
        client.close()


def test_kept_directory(tmp_path: Path):
    data = tmp_path / "data"  # created by serve()
    with raxdb.serve(dir=data) as srv:
        assert srv.dir == str(data)
        client = redis.Redis.from_url(srv.url)
        client.set("k", "v")
        client.save()
        client.close()
    assert (data / "dump.rdb").is_file()
    with raxdb.serve(dir=data) as again:  # the dump is loaded before serve() returns
        assert redis.Redis.from_url(again.url).get("k") == b"v"
    assert data.is_dir()


def test_unixsocket_only():
    with raxdb.serve(port=0, unixsocket=True) as srv:
        assert srv.unixsocket == os.path.join(srv.dir, "raxdb.sock")
        assert srv.url == f"unix://{srv.unixsocket}?db=0"
        assert redis.Redis.from_url(srv.url).ping()
        assert redis.Redis(unix_socket_path=srv.unixsocket).ping()
    assert not os.path.exists(srv.unixsocket)
    assert srv.pid is not None and wait_gone(srv.pid, 0)


def test_unixsocket_beside_tcp(tmp_path: Path):
    path = str(tmp_path / "s.sock")
    with raxdb.serve(unixsocket=path) as srv:
        assert srv.unixsocket == path
        assert redis.Redis(unix_socket_path=path).ping()
        assert redis.Redis.from_url(srv.url).ping()


def test_thread_mode():
    cwd = os.getcwd()
    with raxdb.serve(mode="thread", config={"hz": 15}) as srv:
        assert srv.pid == os.getpid()
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        assert client.ping()
        assert client.config_get("hz") == {"hz": "15"}
        assert client.config_get("set-proc-title") == {"set-proc-title": "no"}
        client.close()
        assert srv.running
    assert os.getcwd() == cwd  # `dir` moved the process; stop moves it back
    assert not os.path.exists(srv.dir)
    assert_gone(srv)


def test_plain_start_stop():
    srv = raxdb.serve()
    assert repr(srv).endswith("(not started)>")
    assert srv.start() is srv
    assert redis.Redis.from_url(srv.url).ping()
    with pytest.raises(RuntimeError, match="started already"):
        srv.start()
    srv.stop()
    srv.stop()  # idempotent
    assert_gone(srv)


async def test_async_with():
    import redis.asyncio

    async with raxdb.serve() as srv:
        client = redis.asyncio.Redis.from_url(srv.url)
        assert await client.ping()
        await client.aclose()
    assert_gone(srv)
    async with raxdb.serve(mode="thread") as srv:
        client = redis.asyncio.Redis.from_url(srv.url)
        assert await client.ping()
        await client.aclose()
    assert_gone(srv)


@pytest.mark.parametrize("mode", ["process", "thread"])
async def test_a_cancelled_async_start_leaves_no_server(mode: str):
    import asyncio

    srv = raxdb.serve(mode=mode)  # type: ignore[arg-type]
    task = asyncio.create_task(srv.astart())
    while srv.pid is None:  # until the task has spawned it and waits for it to serve
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_gone(srv)
    assert not os.path.exists(srv.dir)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_bad_option_raises_with_the_servers_report(mode: str):
    cwd = os.getcwd()
    with pytest.raises(raxdb.ServeError) as info:
        raxdb.serve({"no-such-option": "yes"}, mode=mode).start()  # type: ignore[arg-type]
    assert "FATAL CONFIG FILE ERROR" in info.value.log
    assert "Bad directive or wrong number of arguments" in str(info.value)
    assert "no-such-option" in info.value.log
    assert os.getcwd() == cwd


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_port_in_use_raises(mode: str):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(raxdb.ServeError, match="Address already in use") as info:
            raxdb.serve(port=port, mode=mode).start()  # type: ignore[arg-type]
        assert f"Failed listening on port {port}" in info.value.log


def test_a_chosen_port_taken_meanwhile_is_chosen_again(monkeypatch: pytest.MonkeyPatch):
    """Between choosing a free port and the server binding it another process may take it: the
    start is tried again on another port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real = api.free_port
        monkeypatch.setattr(api, "free_port", lambda host: next(ports, None) or real(host))
        with raxdb.serve() as srv:
            assert srv.port != taken.getsockname()[1]
            assert redis.Redis.from_url(srv.url).ping()


def test_daemonize_refused():
    with pytest.raises(ValueError, match="daemonize"):
        raxdb.serve({"daemonize": "yes"})


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_gone_after_an_exception_in_the_block(mode: str):
    with pytest.raises(KeyError):
        with raxdb.serve(mode=mode) as srv:  # type: ignore[arg-type]
            assert redis.Redis.from_url(srv.url).ping()
            raise KeyError("the test fails")
    assert_gone(srv)
    assert not os.path.exists(srv.dir)


def test_gone_after_shutdown_command():
    with raxdb.serve() as srv:
        redis.Redis.from_url(srv.url).shutdown(nosave=True)  # redis-py expects the connection to drop
        assert srv.pid is not None and wait_gone(srv.pid)
    assert_gone(srv)


PARENT = textwrap.dedent("""
    import sys, threading
    import raxdb
    from raxdb.embed import template

    def start():
        first, second = raxdb.serve().start(), raxdb.serve().start()  # the template's first fork, then another
        print(first.port, first.pid, second.port, second.pid, template.template_pid() or 0, flush=True)

    if sys.argv[1] == "main":
        start()
    else:  # spawned from a thread that then ends: PR_SET_PDEATHSIG would fire; the pipe does not
        t = threading.Thread(target=start)
        t.start()
        t.join()
    sys.stdin.read()  # until killed
""")


@pytest.mark.parametrize("spawner", ["main", "thread"])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_gone_after_the_parent_is_killed(spawner: str, switch: str):
    """SIGKILL leaves the parent no chance to stop its servers: the child notices (PR_SET_PDEATHSIG
    when spawned from the main thread, the pipe reaching EOF in both cases) and stops itself; with
    the template (switch "1"), the template too (its socket's EOF), and its servers with it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env[template.ENV_SWITCH] = switch
    parent = subprocess.Popen([sys.executable, "-c", PARENT, spawner], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert parent.stdout is not None
        port1, pid1, port2, pid2, forker = map(int, parent.stdout.readline().split())
        assert redis.Redis(port=port1).ping() and redis.Redis(port=port2).ping()  # alive, its spawner ended or not
        expected_parent = forker if switch == "1" else parent.pid
        assert parent_of(pid1) == parent_of(pid2) == expected_parent
        assert (forker != 0) == (switch == "1")
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_gone(pid1) and wait_gone(pid2), "a server outlived its parent"
        assert not forker or wait_gone(forker), "the template outlived its caller"
        assert refuses("127.0.0.1", port1) and refuses("127.0.0.1", port2)
    finally:
        parent.kill()
        parent.wait()


def test_import_raxdb_imports_neither_server_nor_embed():
    code = ("import sys, raxdb; assert 'raxdb.embed' not in sys.modules and 'raxdb.server' not in sys.modules; "
            "raxdb.serve; assert 'raxdb.embed' in sys.modules and 'raxdb.server.core' not in sys.modules")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)


def test_serve_from_many_threads():
    """Servers started concurrently get distinct ports and all serve, each forked by the template."""
    with ThreadPoolExecutor(4) as pool:
        servers = list(pool.map(lambda _: raxdb.serve().start(), range(4)))
    try:
        assert len({s.port for s in servers}) == 4
        assert all(redis.Redis.from_url(s.url).ping() for s in servers)
        assert {parent_of(s.pid) for s in servers if s.pid} == {template.template_pid()}
    finally:
        for s in servers:
            s.stop()
    for s in servers:
        assert_gone(s)


def test_later_starts_fork_from_the_template():
    """After the first process-mode start, servers are forked by the template (their parent), not
    spawned by this process; each is fresh; stop() returns once the pid is gone (reaped)."""
    pids = []
    for n in range(3):
        with raxdb.serve() as srv:
            assert srv.pid is not None
            pids.append(srv.pid)
            forker = template.template_pid()
            assert forker is not None and forker != os.getpid()
            assert parent_of(srv.pid) == forker
            client = redis.Redis.from_url(srv.url)
            assert client.dbsize() == 0  # nothing of the server before
            client.set("n", n)
            assert client.info("server")["process_id"] == srv.pid
            client.close()
        with pytest.raises(ProcessLookupError):
            os.kill(srv.pid, 0)  # not even a zombie: the template reaped it before stop() returned
    assert len(set(pids)) == 3
    assert template.template_pid() == forker  # one template for them all


def test_a_bad_start_through_the_template_leaves_it_working():
    with raxdb.serve():  # the template runs
        forker = template.template_pid()
    with pytest.raises(raxdb.ServeError, match="Bad directive or wrong number of arguments") as info:
        raxdb.serve({"no-such-option": "yes"}).start()
    assert "exit status 1" in str(info.value)
    with raxdb.serve() as srv:
        assert redis.Redis.from_url(srv.url).ping()
        assert srv.pid is not None and parent_of(srv.pid) == forker == template.template_pid()


def test_template_switched_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(template.ENV_SWITCH, "0")
    with raxdb.serve() as srv:
        assert srv.pid is not None and parent_of(srv.pid) == os.getpid()  # spawned: our child
        assert redis.Redis.from_url(srv.url).ping()
    assert_gone(srv)


KILLED_TEMPLATE = textwrap.dedent("""
    import os, select, signal, redis, raxdb
    from raxdb.embed import template

    doomed = raxdb.serve().start()
    forker = template.template_pid()
    os.kill(forker, signal.SIGKILL)  # the template dies (the caller does not): its servers follow it
    fd = os.pidfd_open(doomed.pid)
    assert select.select([fd], [], [], 60)[0], "a server outlived its template"
    with raxdb.serve() as srv:  # no template now: spawned as without one
        assert redis.Redis.from_url(srv.url).ping()
        assert int(open(f"/proc/{srv.pid}/stat").read().rsplit(")", 1)[1].split()[1]) == os.getpid()
    doomed.stop()
    print("ok", flush=True)
""")


def test_a_dead_template_falls_back_to_spawning():
    """In a process of its own: the test session's servers are the template's children too."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", KILLED_TEMPLATE], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
