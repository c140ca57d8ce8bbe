"""Start-up and shut-down: `python -m raxdb.server [redis.conf] [--option value ...]` reads configuration
as redis-server does (its FATAL CONFIG FILE ERROR reports compared with redis-server's own), logs in
Redis's format, and exits with status 0 on SIGINT / SIGTERM."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from tests.support.diff import RawConnection, parse
from tests.support.servers import ROOT, ServerProcess, free_port, redis_binary


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_both(args: list[str], cwd: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """Run raxdb and redis-server with arguments that must stop start-up; (ours, theirs)."""
    ours = subprocess.run([sys.executable, "-m", "raxdb.server", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=60)
    theirs = subprocess.run([redis_binary(), *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    return ours, theirs


BAD_ARGS = [
    ["--foo", "bar"], ["--hz", "abc"], ["--port", "1", "2"], ["--maxmemory", "abc"], ["--loglevel", "foo"],
    ["--save", "100"], ["--port", "7777", "--hz"], ["--databases", "0"], ["--appendonly", "maybe"],
    ["--dir", "/nonexistent/raxdb/dir"], ["--notify-keyspace-events", "abc"],
    ["--client-output-buffer-limit", "foo 1 2 3"], ["--hz", 'a"b\\c'], ["--hz", "10", "--HZ", "x y"],
    ["--maxclients", "0"], ["--proto-max-bulk-len", "1"], ["--enable-debug-command", "maybe"],
    ["--oom-score-adj-values", "1 2"], ["--Bogus-Option"], ["--port", "7777", "extra", "--hz", "1"],
]


@pytest.mark.oracle
@pytest.mark.parametrize("args", BAD_ARGS, ids=lambda a: " ".join(a))
def test_bad_options_stop_startup_like_redis(args):
    cwd = tempfile.mkdtemp(prefix="raxdb-start-")
    ours, theirs = run_both(args, cwd)
    assert theirs.returncode == 1, theirs.stderr
    assert ours.returncode == 1
    assert ours.stderr == theirs.stderr
    assert "Ready to accept connections" not in ours.stdout


BAD_FILES = {
    "bad value": "# comment\nport 7777\nhz abc\n",
    "unknown directive": "\n\n   \n# x\nnosuch-option yes\n",
    "unbalanced quotes": 'requirepass "abc\n',
    "too many args": "maxmemory 1 2\n",
    "quoted value error": "loglevel 'loud'\n",
    "missing value": "hz\n",
    "error after a good include": "include {inc}\nhz x\n",
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(BAD_FILES))
def test_bad_config_files_like_redis(name):
    cwd = tempfile.mkdtemp(prefix="raxdb-conf-")
    inc = os.path.join(cwd, "inc.conf")
    with open(inc, "w") as fh:
        fh.write("timeout 5\n")
    conf = os.path.join(cwd, "redis.conf")
    with open(conf, "w") as fh:
        fh.write(BAD_FILES[name].format(inc=inc))
    ours, theirs = run_both([conf, "--port", "7777"], cwd)
    assert theirs.returncode == ours.returncode == 1
    assert ours.stderr == theirs.stderr


@pytest.mark.oracle
def test_error_in_included_file_names_its_line():
    cwd = tempfile.mkdtemp(prefix="raxdb-inc-")
    inc = os.path.join(cwd, "inc.conf")
    with open(inc, "w") as fh:
        fh.write("# included\nmaxmemory lots\n")
    conf = os.path.join(cwd, "redis.conf")
    with open(conf, "w") as fh:
        fh.write(f"port 7777\ninclude {inc}\n")
    ours, theirs = run_both([conf], cwd)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr


def test_missing_config_file():
    cwd = tempfile.mkdtemp(prefix="raxdb-missing-")
    ours = subprocess.run([sys.executable, "-m", "raxdb.server", os.path.join(cwd, "nope.conf")], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert ours.returncode == 1
    assert "Fatal error, can't open config file" in ours.stderr and "nope.conf" in ours.stderr
    assert "No such file or directory" in ours.stderr


def test_version_and_help():
    for flag in ("--version", "-v", "--help", "-h"):
        r = subprocess.run([sys.executable, "-m", "raxdb.server", flag], env=_env(), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and r.stdout


GOOD_CONF = """# raxdb test configuration
  # indented comment
port {port}
HZ 25
requirepass "pass word"
maxmemory-policy 'allkeys-lru'
save 900 1
save 300 10
client-output-buffer-limit pubsub 1mb 2mb 3
bind 127.0.0.1
include {incdir}/*.conf
slowlog-max-len 10
"""


def test_config_file_with_comments_quotes_and_includes():
    cwd = tempfile.mkdtemp(prefix="raxdb-good-")
    incdir = os.path.join(cwd, "conf.d")
    os.mkdir(incdir)
    with open(os.path.join(incdir, "a.conf"), "w") as fh:
        fh.write("timeout 7\nslowlog-max-len 20\n")
    with open(os.path.join(incdir, "b.conf"), "w") as fh:
        fh.write("timeout 8\n")
    conf = os.path.join(cwd, "redis.conf")
    port = free_port()
    with open(conf, "w") as fh:
        fh.write(GOOD_CONF.format(port=port, incdir=incdir))
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    srv = ServerProcess([sys.executable, "-m", "raxdb.server", conf, "--maxclients", "50", "--slowlog-max-len", "30"],
                        port, cwd, "raxdb-conf")
    try:
        c = RawConnection(port)
        assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("AUTH", "pass word") == b"+OK\r\n"
        got = parse(c.call("CONFIG", "GET", "hz", "maxmemory-policy", "save", "client-output-buffer-limit",
                           "timeout", "slowlog-max-len", "maxclients", "bind", "config_file"))
        got = dict(zip(got[::2], got[1::2], strict=True))
        assert got == {b"hz": b"25", b"maxmemory-policy": b"allkeys-lru", b"save": b"900 1 300 10",
                       b"client-output-buffer-limit":
                           b"normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 3",
                       b"timeout": b"8", b"slowlog-max-len": b"30", b"maxclients": b"50", b"bind": b"127.0.0.1"}
        server = parse(c.call("INFO", "server")).decode()
        assert f"config_file:{conf}\r\n" in server
        c.close()
    finally:
        srv.stop()


LOG_LINE = re.compile(r"\d+:[MC] \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] .+")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signals_shut_down_cleanly(sig):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "raxdb.server", "--port", str(port), "--save", ""],
                            cwd=tempfile.mkdtemp(prefix="raxdb-sig-"), env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in proc.stdout:  # start-up log, up to the readiness line
            lines.append(line.rstrip("\n"))
            if "Ready to accept connections" in line:
                break
        c = RawConnection(port)
        assert c.call("SET", "k", "v") == b"+OK\r\n"
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(ConnectionError):
        c.read_frame()  # the server closed our connection on its way out
    lines += rest.splitlines()
    name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
    assert any(f"Received {name} scheduling shutdown..." in line for line in lines)
    assert lines[-1].endswith("Redis is now ready to exit, bye bye...")
    assert any(line.endswith("Ready to accept connections") for line in lines)  # 7.0: no "tcp"
    for line in lines:
        assert LOG_LINE.fullmatch(line), line


@pytest.mark.oracle
@pytest.mark.parametrize("logo", ["yes", "no"])
def test_start_up_banner_names_the_pid_as_redis(logo):
    """With always-show-logo, both servers print " PID: <pid>" once listening (Redis's own test
    suite waits for that line before it connects); without it, the one "Running mode" line."""
    from tests.support.servers import start_raxdb, start_redis

    for start in (start_raxdb, start_redis):
        srv = start("--always-show-logo", logo)
        try:
            log = "".join(srv.log)
            pid = srv.proc.pid
            if logo == "yes":
                assert re.search(rf" PID: {pid}\b", log), (srv.name, log)
            else:
                assert f"Running mode=standalone, port={srv.port}." in log, (srv.name, log)
        finally:
            srv.stop()


def _listen_backlogs(port: int) -> set[int]:
    """The backlog of each socket listening on `port` (ss shows it as Send-Q)."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return {int(line.split()[2]) for line in out.splitlines()}


@pytest.mark.oracle
@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2) to read a listen backlog")
def test_default_bind_and_tcp_backlog_as_redis():
    """Without --bind both servers take Redis's built-in default ("* -::*": every interface,
    protected mode keeping the unauthenticated out), and the sockets listen with tcp-backlog
    (asyncio's create_server listened again with its own 100)."""
    found = {}
    for name, argv0 in (("raxdb", [sys.executable, "-m", "raxdb.server"]), ("redis", [redis_binary()])):
        port = free_port()
        cwd = tempfile.mkdtemp(prefix=f"{name}-bind-")
        srv = ServerProcess([*argv0, "--port", str(port), "--save", "", "--tcp-backlog", "300"], port, cwd, name)
        try:
            c = RawConnection(port)
            found[name] = (c.call("CONFIG", "GET", "bind"), _listen_backlogs(port))
            c.close()
        finally:
            srv.stop()
    assert found["raxdb"] == found["redis"]
    assert found["raxdb"][0] == b"*2\r\n$4\r\nbind\r\n$6\r\n* -::*\r\n"
    assert found["raxdb"][1] == {300}


@pytest.mark.oracle
@pytest.mark.parametrize("layout", ["stdin-only", "file-then-stdin", "options-then-stdin"])
def test_config_from_stdin_as_redis(layout, tmp_path):
    """`redis-server -` (or a `-` last): the config read from stdin comes after the file's and
    before the options; a bad line there is reported with the line numbers of the whole text."""
    conf = tmp_path / "base.conf"
    conf.write_text("maxmemory 1mb\nhz 20\n")
    outcomes = []
    for argv in ([sys.executable, "-m", "raxdb.server"], [redis_binary()]):
        port = free_port()
        args = {"stdin-only": ["-"], "file-then-stdin": [str(conf), "-"],
                "options-then-stdin": ["--hz", "30", "-"]}[layout]
        stdin = f"port {port}\nsave ''\nmaxmemory 2mb\nbind 127.0.0.1\n"
        proc = subprocess.Popen([*argv, *args], cwd=tmp_path, env=_env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        log = []
        for line in proc.stdout:
            log.append(line)
            if "Ready to accept connections" in line:
                break
        c = RawConnection(port)
        got = [parse(c.call("CONFIG", "GET", name)) for name in ("maxmemory", "hz", "save")]
        c.close()
        proc.terminate()
        proc.wait(30)
        outcomes.append((got, any("Reading config from stdin" in line for line in log),
                         any("Configuration loaded" in line for line in log)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1] and outcomes[0][2]


@pytest.mark.oracle
def test_bad_config_from_stdin_names_its_line():
    results = []
    for argv in ([sys.executable, "-m", "raxdb.server"], [redis_binary()]):
        proc = subprocess.run([*argv, "-", "--port", "0"], input="save ''\nhz abc\n", env=_env(),
                              capture_output=True, text=True, timeout=60, cwd=tempfile.gettempdir())
        results.append((proc.returncode, re.sub(r"\(Redis [^)]*\)", "", proc.stderr),
                        "Reading config from stdin" in proc.stdout))
    assert results[0] == results[1]
    assert "at line 2" in results[0][1]


@pytest.mark.oracle
def test_rotated_logfile_goes_on_at_its_path(tmp_path):
    """logrotate without copytruncate renames the file: the next lines go to a new file at the
    logfile's path, as redis-server opens it for every line."""
    from tests.support.servers import start_raxdb, start_redis

    for start in (start_raxdb, start_redis):
        log = tmp_path / f"{start.__name__}.log"
        srv = start("--logfile", str(log), ready_text=None)
        try:
            c = None
            for _ in range(600):  # the log file says when it is up
                if log.exists() and "eady to accept connections" in log.read_text():
                    break
                srv.wait_log("never", 0.05)
            log.rename(tmp_path / f"{start.__name__}.log.1")
            c = RawConnection(srv.port)
            assert c.call("DEBUG", "LOG", "after rotation") == b"+OK\r\n"
            assert "after rotation" in log.read_text()
            assert "after rotation" not in (tmp_path / f"{start.__name__}.log.1").read_text()
        finally:
            if c is not None:
                c.close()
            srv.stop()


_SYSLOG_LINE = re.compile(r"<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d (\S+)\[\d+\]: (.*)", re.S)


@pytest.mark.oracle
def test_syslog_as_redis(tmp_path):
    """syslog-enabled: every message also goes to syslog, under syslog-ident, at the facility and
    the syslog level of its Redis level.  A datagram socket at /dev/log stands for the daemon,
    read by a thread (a sender blocks once ten datagrams wait)."""
    import socket as socketlib
    import threading

    from tests.support.servers import start_raxdb, start_redis

    if os.path.exists("/dev/log") or not os.access("/dev", os.W_OK):
        pytest.skip("needs /dev/log free and /dev writable (root in a container)")
    sock = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_DGRAM)
    sock.bind("/dev/log")
    received: list[str] = []
    arrived = threading.Condition()

    def drain() -> None:
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            with arrived:
                received.append(data.decode(errors="replace"))
                arrived.notify_all()

    threading.Thread(target=drain, daemon=True).start()
    try:
        seen = {}
        for name, start in (("raxdb", start_raxdb), ("redis", start_redis)):
            ident = f"t{name}"
            srv = start("--syslog-enabled", "yes", "--syslog-ident", ident, "--syslog-facility", "local3")
            try:
                c = RawConnection(srv.port)
                c.call("DEBUG", "LOG", "to syslog")
                c.close()

                def found(ident: str = ident) -> tuple[int, str] | None:
                    for line in received:
                        m = _SYSLOG_LINE.fullmatch(line)
                        if m and m[2] == ident and m[3].startswith("DEBUG LOG"):
                            return int(m[1]), m[3]
                    return None

                with arrived:
                    assert arrived.wait_for(found, 20)
                    seen[name] = found()
            finally:
                srv.stop()
        assert seen["raxdb"] == seen["redis"] == (19 * 8 + 4, "DEBUG LOG: to syslog")  # local3, warning
    finally:
        sock.close()
        os.unlink("/dev/log")


@pytest.mark.oracle
def test_loadmodule_stops_start_up_as_a_module_that_fails_to_load(tmp_path):
    """raxdb loads no module, so a loadmodule line stops start-up as redis-server stops when the
    module cannot be loaded (its own reason in the first line; the abort line is Redis's)."""
    conf = tmp_path / "m.conf"
    conf.write_text(f"loadmodule {tmp_path}/nosuch.so\nsave ''\n")
    outcomes = []
    for argv in ([sys.executable, "-m", "raxdb.server"], [redis_binary()]):
        proc = subprocess.run([*argv, str(conf), "--port", str(free_port()), "--bind", "127.0.0.1"], env=_env(),
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
        lines = [line.split(" ", 6)[-1] for line in proc.stdout.splitlines() if "module" in line.lower()]
        outcomes.append((proc.returncode, [line for line in lines if line.startswith("Can't load module")],
                         any(line.startswith(f"Module {tmp_path}/nosuch.so failed to load: ") for line in lines)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] == (1, [f"Can't load module from {tmp_path}/nosuch.so: server aborting"], True)


@pytest.mark.parametrize("binary", ["raxdb", "redis"])
def test_sigterm_with_the_log_reader_gone(binary, tmp_path):
    """A server logging to stdout whose reader has gone (the pipe's read end closed, as when the
    process that started it dies): SIGTERM still shuts it down, as redis-server, which drops the
    log lines it cannot write."""
    if binary == "redis" and redis_binary() is None:
        pytest.skip("redis-server not installed")
    port = free_port()
    argv = ([sys.executable, "-m", "raxdb.server"] if binary == "raxdb" else [redis_binary()]) + [
        "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if b"eady to accept connections" in line:
                break
        proc.stdout.close()
        conn = RawConnection(port)
        assert conn.call("PING") == b"+PONG\r\n"  # a reply does not go through the log
        conn.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
