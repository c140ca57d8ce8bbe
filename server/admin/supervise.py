"""Running as a service: `daemonize`, `pidfile` and `supervised`, as redis-server 7.0 does them
(server.c's daemonize, createPidFile, redisIsSupervised, redisCommunicateSystemd).

Start-up order is redis-server's, and it matters:
1. Supervision is settled first.  `supervised auto` picks upstart when UPSTART_JOB is set, else
   systemd when NOTIFY_SOCKET is.  Under upstart the process stops itself (SIGSTOP) to say it is
   ready, as upstart's `expect stop` wants.  Under systemd the first status message must reach
   NOTIFY_SOCKET, or the server counts as unsupervised.
2. `daemonize yes` then forks into the background, unless supervised: a supervisor wants the
   process it started.  The fork comes before the first log line, the event loop and any thread,
   because fork copies only the calling thread.  The parent exits 0, the child starts a session,
   and stdin, stdout and stderr go to /dev/null, so a daemon without a `logfile` logs nowhere.
3. The pid file is written once the sockets listen, so a port that cannot be bound exits without
   leaving one.  It is written when `pidfile` is set, or when the server daemonized (then to
   /var/run/redis.pid), on a best-effort basis: a file that cannot be written is not an error,
   as in Redis.  The final shutdown removes it ("Removing the pid file.").

systemd is told the server's state with sd_notify's protocol: one datagram of text per message to
the AF_UNIX socket named by NOTIFY_SOCKET (an abstract socket when the name starts with '@').  This
needs no libsystemd.  The messages are Redis's:
- "STATUS=Redis is loading..." when supervision starts;
- "STATUS=Ready to accept connections" (on a replica, the read-only form) and "READY=1" once
  serving, which is what a `Type=notify` unit waits for;
- "STOPPING=1" when a shutdown begins;
- the final save's status lines.
"""

from __future__ import annotations

import os
import signal
import socket
from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.config.options import Config

DEFAULT_PID_FILE = "/var/run/redis.pid"  # CONFIG_DEFAULT_PID_FILE


def sd_notify(message: str) -> int:
    """sd_notify(0, message): 1 when sent, 0 when NOTIFY_SOCKET is not set, -errno on failure."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return 0
    address = "\0" + path[1:] if path[0] == "@" else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(message.encode(), address)
    except OSError as exc:
        return -(exc.errno or 1)
    return 1


def notify_systemd(message: str) -> int:
    """redisCommunicateSystemd: send, logging why it failed."""
    ret = sd_notify(message)
    if ret == 0:
        LOG.warning("systemd supervision error: NOTIFY_SOCKET not found!")
    elif ret < 0:
        LOG.warning(f"systemd supervision error: sd_notify: {ret}")
    return ret


def detect(config: Config) -> str:
    """redisIsSupervised: the mode in effect, "upstart", "systemd" or "no"."""
    mode = config.values["supervised"]
    if mode == "auto":
        if os.environ.get("UPSTART_JOB"):
            LOG.verbose("Upstart supervision detected.")
            mode = "upstart"
        elif os.environ.get("NOTIFY_SOCKET"):
            LOG.verbose("Systemd supervision detected.")
            mode = "systemd"
    if mode == "upstart":
        if not os.environ.get("UPSTART_JOB"):
            LOG.warning("upstart supervision requested, but UPSTART_JOB not found!")
            return "no"
        LOG.notice("supervised by upstart, will stop to signal readiness.")
        os.kill(os.getpid(), signal.SIGSTOP)
        del os.environ["UPSTART_JOB"]
        return "upstart"
    if mode == "systemd":
        if notify_systemd("STATUS=Redis is loading...\n") <= 0:
            return "no"
        LOG.notice("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and "
                   "TimeoutStopSec in your service unit.")
        return "systemd"
    return "no"


def daemonize() -> None:
    """Into the background: the parent exits, the child leads a new session with its standard
    streams on /dev/null."""
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(fd, std)
    if fd > 2:
        os.close(fd)


def pidfile_path(srv: Server) -> str | None:
    """The pid file this server writes and removes, or None."""
    path = srv.config.values["pidfile"]
    if path:
        return path
    return DEFAULT_PID_FILE if srv.daemonized else None


def write_pidfile(srv: Server) -> None:
    path = pidfile_path(srv)
    if path is None:
        return
    try:
        with open(path, "w") as fh:
            fh.write(f"{os.getpid()}\n")
    except OSError:
        pass  # best effort, as createPidFile


def remove_pidfile(srv: Server) -> None:
    path = pidfile_path(srv)
    if path is None:
        return
    LOG.notice("Removing the pid file.")
    try:
        os.unlink(path)
    except OSError:
        pass


def status(srv: Server, message: str) -> None:
    """A message for systemd, when supervised by it."""
    if srv.supervised == "systemd":
        notify_systemd(message)


def ready(srv: Server) -> None:
    """Serving: what a Type=notify unit waits for."""
    if srv.supervised != "systemd":
        return
    if srv.repl.masterhost is None:
        notify_systemd("STATUS=Ready to accept connections\n")
    else:
        notify_systemd("STATUS=Ready to accept connections in read-only mode. Waiting for MASTER <-> REPLICA sync\n")
    notify_systemd("READY=1\n")
