"""The versions raxdb reports: the Redis version it speaks for, and its own.

`VERSION` is what a client sees as Redis's (INFO redis_version, HELLO, LOLWUT, an RDB file's
redis-ver, the crash report) by default, `VERSIONS` what it sees in each generation
(compat-version: a server's `redis_version`); raxdb's own version is the package's (raxdb/_version.py), and
`RAXDB_BUILD_ID` goes with it.  Here, in base/, so every layer may read them.
"""

from raxdb._version import __version__ as RAXDB_VERSION

VERSION = "7.0.15"  # the Redis version raxdb speaks for by default (compat-version 7.0)
# The version each generation raxdb may answer as reports (compat-version, #59; a server's
# `redis_version`): 7.0.15 is the spec; 7.2.4 is the last 7.2 under the BSD licence, the one
# Valkey forked from and still reports (so the newer modes' oracle and raxdb agree on it, and a
# client that gates features on the version sees the same in both); 7.4.1 is the 7.4 whose
# sources (tag 7.4.1) the 7.4 behaviour is read from.
VERSIONS: dict[tuple[int, ...], str] = {(7, 0): VERSION, (7, 2): "7.2.4", (7, 4): "7.4.1"}


def version_num(version: str) -> int:
    """REDIS_VERSION_NUM of a version: 0x00MMmmpp."""
    major, minor, patch = map(int, version.split("."))
    return (major << 16) | (minor << 8) | patch
RAXDB_BUILD_ID = "7261786462000001"  # INFO redis_build_id: fixed per raxdb release

__all__ = ["RAXDB_BUILD_ID", "RAXDB_VERSION", "VERSION", "VERSIONS", "version_num"]
