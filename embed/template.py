"""The template behind raxdb.serve()'s process mode: a process that has imported the server once and
forks a fresh server for each start, so that a start costs a fork instead of an interpreter start
and the server's imports.  `python -m raxdb.embed.template SOCKET PARENT PDEATHSIG`, started by the
first process-mode start in a calling process (fork_server()), then used by every later one.

Rule: the template only imports (raxdb.server.main.preload: what start-up imports before it reads a
configuration), forks and reaps; a forked server runs exactly what a spawned one runs
(raxdb.embed.child.run: the ties to its parent, then raxdb.server.main.main with the same
arguments), with the caller's output file, working directory and environment.

Why not multiprocessing's "forkserver": it is one per process, shared with the caller's own
multiprocessing use (its preload list applies only if we start it first, and its start method is
the caller's to choose); its children run inside multiprocessing's bootstrap and leave through
os._exit after their target, skipping the interpreter's normal exit that a spawned server has; and
it brings a resource tracker process along.  This template is one small loop and one socket.

Protocol, on a unix stream socketpair (the caller sends one request at a time, under a lock):
- template -> caller, once: b"R" when its imports are done (EOF instead: it failed to start).
- caller -> template: a 4-byte big-endian length and a JSON object {"argv", "cwd", "env"}, with
  four descriptors attached (SCM_RIGHTS): STATUS (write end), LIFE (read end) as
  raxdb/embed/child.py describes them, OUTPUT (the server's stdout and stderr), EXIT (write end).
- template -> caller: the same framing, {"pid": n} or {"error": "..."}.
- EXIT: once the template has reaped the server, it writes its exit status there (as
  Popen.returncode: negative for a signal) and closes it: readable means the pid is gone.

Invariants:
- Single-threaded, no event loop, before and between forks (checked after the imports): a fork
  copies only the calling thread, and a loop's state must not be shared by two processes.
- The template holds no descriptor of the caller's but its socket (spawned with close_fds, in `/`
  so that it keeps no directory busy) and, per live server, its EXIT write end; STATUS, LIFE and
  OUTPUT are closed right after each fork, so the caller reads EOF on STATUS when the server exits
  and the server reads EOF on LIFE when the caller dies.  A forked server closes every descriptor of
  the template's (its socket, the other servers' EXIT ends).
- It does not outlive the caller: the socket reaches EOF when the caller dies (even by SIGKILL), and
  PR_SET_PDEATHSIG when the caller spawned it from its main thread.  Its servers do not outlive it
  nor the caller: PR_SET_PDEATHSIG (the template's only thread forks them) and their LIFE pipes.
- It reaps every server it forked (SIGCHLD wakes its loop through signal.set_wakeup_fd).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from raxdb.embed import child

ENV_SWITCH = "RAXDB_SERVE_TEMPLATE"  # "0": no template, every process-mode start spawns a child
_FDS = 4  # STATUS, LIFE, OUTPUT, EXIT
_REPLY_TIMEOUT = 60.0  # seconds for the template's imports, and for a reply (a fork: milliseconds)


# ---- the template process ---------------------------------------------------------------------
def main(argv: list[str]) -> None:
    sock_fd, parent, pdeathsig = int(argv[0]), int(argv[1]), argv[2] == "1"
    if pdeathsig:
        child.die_with_parent_linux()
    if os.getppid() != parent:  # the caller is already gone
        raise SystemExit(1)
    from raxdb.server.main import preload

    preload()
    if threading.active_count() != 1:
        raise SystemExit(f"raxdb template: an import started a thread ({threading.enumerate()}); cannot fork safely")
    # What the imports built lives as long as every server: out of the collector's sight, so that
    # a collection in a server does not write to (and so copy) the pages it shares with the template.
    gc.collect()
    gc.freeze()
    job = _serve(socket.socket(fileno=sock_fd))
    if job is not None:  # a forked server, out of the template's loop: it runs as a spawned one does
        status_fd, life_fd, template, args = job
        child.run(status_fd, life_fd, parent=template, pdeathsig=True, args=args)


def _serve(sock: socket.socket) -> tuple[int, int, int, list[str]] | None:
    """The template's loop: None when the caller is gone; in a forked server, what it runs
    (STATUS, LIFE, the template's pid as its parent's, the server's arguments)."""
    template = os.getpid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    # A Python handler, so that SIGCHLD writes to the wakeup pipe (ignored by default, it wakes nothing).
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    exits: dict[int, int] = {}  # a live server's pid -> its EXIT write end
    sock.sendall(b"R")
    while True:
        waiting: list[socket.socket | int] = [sock, wake_r]
        readable = select.select(waiting, [], [])[0]
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(exits)
        if sock not in readable:
            continue
        request = _receive(sock)
        if request is None:  # EOF: the caller is gone; its servers follow through LIFE and PDEATHSIG
            return None
        header, fds = request
        if len(fds) != _FDS:
            for fd in fds:
                os.close(fd)
            _send(sock, {"error": f"expected {_FDS} descriptors, got {len(fds)}"})
            continue
        status_fd, life_fd, out_fd, exit_fd = fds
        sys.stdout.flush()  # nothing buffered is written twice, by the template and the server
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN, ENOMEM: the caller raises ServeError
            for fd in fds:
                os.close(fd)
            _send(sock, {"error": f"fork: {exc}"})
            continue
        if pid == 0:
            _become_server(header, sock, (wake_r, wake_w, out_fd, exit_fd, *exits.values()))
            return status_fd, life_fd, template, list(header["argv"])
        exits[pid] = exit_fd
        for fd in (status_fd, life_fd, out_fd):  # the server's now: ours would hide its EOFs
            os.close(fd)
        _send(sock, {"pid": pid})


def _become_server(header: Mapping[str, Any], sock: socket.socket, template_fds: tuple[int, ...]) -> None:
    """In a forked server: leave the template's state (handlers, descriptors, directory, environment)."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()  # its own session, as a spawned server's: a Ctrl-C reaches the caller, which stops it
    out_fd = template_fds[2]
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    sock.close()
    for fd in template_fds:
        os.close(fd)
    os.chdir(header["cwd"])
    os.environ.clear()
    os.environ.update(header["env"])


def _reap(exits: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = exits.pop(pid, None)
        if fd is None:
            continue
        try:
            os.write(fd, str(os.waitstatus_to_exitcode(status)).encode())
        except OSError:  # the caller stopped watching (closed its end)
            pass
        os.close(fd)


def _send(sock: socket.socket, message: Mapping[str, Any], fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(message).encode()
    socket.send_fds(sock, [len(data).to_bytes(4, "big") + data], list(fds))


def _receive(sock: socket.socket, maxfds: int = _FDS) -> tuple[dict[str, Any], list[int]] | None:
    """One framed message and the descriptors that came with it; None at EOF."""
    data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, maxfds)
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        more = sock.recv(1 << 16) if data else b""
        if not more:
            for fd in fds:
                os.close(fd)
            return None
        data += more
    return json.loads(data[4:]), fds


# ---- the caller's side ------------------------------------------------------------------------
class ForkedServer:
    """A server forked by the template, with the part of Popen's interface raxdb.embed.api uses
    (pid, returncode, poll, wait, send_signal, kill).  It is the template's child, not ours: its
    end is read on its EXIT pipe, written once the template has reaped it (so the pid is gone)."""

    def __init__(self, pid: int, exit_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._exit_fd = exit_fd

    def poll(self) -> int | None:
        if self.returncode is None and self._exit_fd >= 0 and select.select([self._exit_fd], [], [], 0)[0]:
            self._collect(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if self._exit_fd < 0 or not select.select([self._exit_fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"raxdb server {self.pid}", timeout or 0.0)
            self._collect(timeout)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        # Only while the template has not reported it gone: after that the pid may be another's.
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # exited, not reaped yet
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        if self._exit_fd >= 0:
            os.close(self._exit_fd)
            self._exit_fd = -1

    def _collect(self, timeout: float | None) -> None:
        data = os.read(self._exit_fd, 32)
        if data:
            self.returncode = int(data)
            return
        # EOF without a status: the template died before it reaped the server (it was killed);
        # the server follows it (PR_SET_PDEATHSIG, or its LIFE pipe when we close it): wait for the pid.
        if not _pid_gone(self.pid, timeout):
            raise subprocess.TimeoutExpired(f"raxdb server {self.pid}", timeout or 0.0)
        self.returncode = -1  # its status went with the template


def _pid_gone(pid: int, timeout: float | None) -> bool:
    """Has `pid` (not our child) ended within `timeout`?  A pidfd where there is one (Linux);
    elsewhere a bounded loop of short waits."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):  # no pidfd: poll
        event = threading.Event()
        waited = 0.0
        while timeout is None or waited < timeout:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            event.wait(0.01)
            waited += 0.01
        return False
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


class _Template:
    """The calling process's handle on its template: the process, its socket."""

    def __init__(self, env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # PR_SET_PDEATHSIG fires when the spawning *thread* ends: asked for only from the main
        # thread; the socket's EOF ties it to the caller in every case.
        pdeathsig = "1" if threading.current_thread() is threading.main_thread() else "0"
        try:
            # -P: nothing from its working directory on its path, as in the server's own start
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "raxdb.embed.template", str(theirs.fileno()), str(os.getpid()),
                 pdeathsig], cwd="/", env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), start_new_session=True)
        finally:
            theirs.close()
        self.sock = ours

    def ready(self) -> bool:
        if not select.select([self.sock], [], [], _REPLY_TIMEOUT)[0]:
            return False
        return self.sock.recv(1) == b"R"

    def fork(self, argv: list[str], cwd: str, env: Mapping[str, str], fds: tuple[int, int, int]) -> ForkedServer:
        """A server forked with STATUS, LIFE and OUTPUT `fds`; OSError when the template is broken,
        ChildProcessError when it could not fork."""
        exit_r, exit_w = os.pipe()
        try:
            _send(self.sock, {"argv": argv, "cwd": cwd, "env": dict(env)}, (*fds, exit_w))
        finally:
            os.close(exit_w)
        try:
            if not select.select([self.sock], [], [], _REPLY_TIMEOUT)[0]:
                raise OSError("the template does not answer")
            reply = _receive(self.sock, 0)
            if reply is None:
                raise OSError("the template is gone")
            if "pid" not in reply[0]:
                raise ChildProcessError(reply[0].get("error", "no pid"))
        except BaseException:
            os.close(exit_r)
            raise
        return ForkedServer(int(reply[0]["pid"]), exit_r)

    def close(self) -> None:
        self.sock.close()  # EOF: it exits
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_lock = threading.Lock()  # one request at a time on the socket, one template per process
_template: _Template | None = None
_broken = False  # it failed to start or broke: this process spawns its servers


def enabled() -> bool:
    return os.name == "posix" and hasattr(os, "fork") and os.environ.get(ENV_SWITCH, "1") != "0"


def fork_server(argv: list[str], cwd: str, env: Mapping[str, str], fds: tuple[int, int, int]) -> ForkedServer | None:
    """A server forked from this process's template (started on first use, with `env`), running
    `argv` in `cwd` with `env`, and STATUS, LIFE and OUTPUT `fds` (ours stay open: the caller
    closes them).  None where there is no template (RAXDB_SERVE_TEMPLATE=0, not POSIX, or it
    failed): the caller spawns the server itself.  ChildProcessError when the template could not fork."""
    global _template, _broken
    if not enabled():
        return None
    with _lock:
        if _broken:
            return None
        try:
            if _template is None:
                _template = _Template(env)
                if not _template.ready():
                    raise OSError("the template did not start")
            return _template.fork(argv, cwd, env, fds)
        except OSError:
            _broken = True
            if _template is not None:
                _template.close()
                _template = None
            return None


def template_pid() -> int | None:
    """The pid of this process's template, if it runs (for tests and diagnostics)."""
    with _lock:
        return _template.proc.pid if _template is not None else None


def _forget() -> None:
    """In a process forked from the caller: its copy of the socket is the parent's conversation;
    a start here gets a template of its own."""
    global _lock, _template, _broken
    _lock = threading.Lock()
    _template = None
    _broken = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


if __name__ == "__main__":
    main(sys.argv[1:])
