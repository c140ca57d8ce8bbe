"""The process raxdb.serve() spawns: `python -m raxdb.embed.child STATUS LIFE PARENT PDEATHSIG -- ARGS...`,
and what a server forked by raxdb/embed/template.py runs (run(), with the same arguments).

Rule: this module only ties a server's life to its parent and reports readiness; the server is
raxdb.server.main's, started with the same arguments `raxdb-server` takes.

- STATUS: a pipe's write end.  "ready" is written to it once the server serves (the server's own
  on_ready event: listening, its data loaded), then it is closed; a server that exits before then
  closes it by exiting, which the parent reads as a failure to start.
- LIFE: a pipe's read end whose only writer is the parent.  Nothing is ever written: the read
  returns when the parent closes it or dies (the kernel closes a dead process's descriptors, even
  after SIGKILL), and the server is then stopped as SIGTERM stops it (a final save when configured),
  or killed if that takes longer than GRACE.  This works wherever pipes do.
- PDEATHSIG "1": on Linux the kernel also sends SIGTERM when the parent dies (prctl
  PR_SET_PDEATHSIG), which needs no thread of ours to be scheduled.  The parent asks for it only
  from its main thread: the kernel sends it when the spawning *thread* ends, not its process.
- PARENT: the parent's pid, checked after prctl, for a parent that died before it took effect.

Invariant: once this module's main() has run its first lines, the process does not outlive its parent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

GRACE = 30.0  # seconds a server whose parent died has to finish its shutdown (a final save)
_PR_SET_PDEATHSIG = 1


def die_with_parent_linux() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # no libc symbol to call: the pipe below still does it
        pass


def _watch_parent(life_fd: int) -> None:
    """Blocks until the parent's end of the LIFE pipe closes, then stops this process."""
    while True:
        try:
            if not os.read(life_fd, 1):
                break
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for other interpreters
            continue
    os.kill(os.getpid(), signal.SIGTERM)
    # A shutdown that does not end (a stuck save, a loop held by a script) must not keep the
    # server alive without its parent.
    threading.Event().wait(GRACE)
    os._exit(1)


def main(argv: list[str]) -> None:
    status_fd, life_fd, parent, pdeathsig = int(argv[0]), int(argv[1]), int(argv[2]), argv[3] == "1"
    run(status_fd, life_fd, parent, pdeathsig, argv[5:] if argv[4:5] == ["--"] else argv[4:])


def run(status_fd: int, life_fd: int, parent: int, pdeathsig: bool, args: list[str]) -> None:
    """Tie this process to `parent`, then run the server with `args` until it stops: this module's
    main, and a server forked by raxdb/embed/template.py (whose parent is the template)."""
    if pdeathsig:
        die_with_parent_linux()
    if os.getppid() != parent:  # the parent is already gone
        raise SystemExit(1)
    threading.Thread(target=_watch_parent, args=(life_fd,), name="raxdb-parent-watch", daemon=True).start()

    def ready() -> None:
        os.write(status_fd, b"ready\n")
        os.close(status_fd)

    from raxdb.server.main import main as server_main

    server_main(args, on_ready=ready)


if __name__ == "__main__":
    main(sys.argv[1:])
