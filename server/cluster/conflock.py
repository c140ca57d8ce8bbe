"""The lock on nodes.conf: one cluster node per cluster configuration file (clusterLockConfig).

What it is.  `ConfigLock.acquire` opens the file (creating it, as Redis does, so that two nodes
starting at once race on one inode) and takes an exclusive, non-blocking flock on it; a node that
cannot is told, in Redis's words, that another node uses the file, and exits 1.  The lock is held
by an open descriptor for the life of the process.

Rule: nodes.conf is rewritten in place (nodesconf.save, as Redis 7.0), so the inode the lock is
on stays the file's for the life of the node.  A forked child (BGSAVE)
closes its copy of the descriptor, as redisFork does, so a child that outlives a killed parent
does not keep the file locked.

Invariants: while the node runs, `fd` is an open descriptor of the file at `path` holding the
flock.
"""

from __future__ import annotations

import errno
import fcntl
import os

from raxdb.server.base.log import LOG


class ConfigLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)

    @staticmethod
    def _lock(fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise

    def acquire(self) -> None:
        """clusterLockConfig, at start-up: the lock, or the fatal log line and exit 1."""
        try:
            fd = self._open()
        except OSError as e:
            LOG.warning(f"Can't open {self.path} in order to acquire a lock: {e.strerror}")
            raise SystemExit(1) from None
        try:
            self._lock(fd)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                LOG.warning(f"Sorry, the cluster configuration file {self.path} is already used by a different "
                            "Redis Cluster node. Please make sure that different nodes use different cluster "
                            "configuration files.")
            else:
                LOG.warning(f"Impossible to lock {self.path}: {e.strerror}")
            raise SystemExit(1) from None
        self.fd = fd
        os.register_at_fork(after_in_child=self._close)

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def release(self) -> None:
        self._close()
