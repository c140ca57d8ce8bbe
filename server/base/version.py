"""The versions raxdb reports: the Redis version it speaks for, and its own.

`VERSION` is what a client sees as Redis's (INFO redis_version, HELLO, LOLWUT, an RDB file's
redis-ver, the crash report); raxdb's own version is the package's (raxdb/_version.py), and
`RAXDB_BUILD_ID` goes with it.  Here, in base/, so every layer may read them.
"""

from raxdb._version import __version__ as RAXDB_VERSION

VERSION = "7.0.15"  # the Redis version raxdb speaks for (INFO redis_version, HELLO)
RAXDB_BUILD_ID = "7261786462000001"  # INFO redis_build_id: fixed per raxdb release

__all__ = ["RAXDB_BUILD_ID", "RAXDB_VERSION", "VERSION"]
