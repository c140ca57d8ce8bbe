"""raxdb: a Redis-compatible server written in Python on asyncio, and a Spark source for its streams.

The installed package holds the repository's top-level folders as subpackages (in a checkout,
links to them): `raxdb.server` (the server; `python -m raxdb.server`, `raxdb-server`),
`raxdb.protocol` (RESP, no I/O), `raxdb.storage` (the keyspace and data types, no server),
`raxdb.spark` (the PySpark data source, format name `raxdb`), `raxdb.embed` (`raxdb.serve()`: start
a server from Python) and `raxdb.testing` (the pytest plugin, loaded by pytest through its
`pytest11` entry point).  Importing `raxdb` imports none of them: each is loaded when first used,
`raxdb.serve` / `raxdb.serve_cluster` / `raxdb.ServeError` included (module `__getattr__`).
"""

from __future__ import annotations

from raxdb._version import __version__

__all__ = ["ControlError", "EmbeddedCluster", "EmbeddedServer", "ServeError", "__version__", "serve", "serve_cluster"]
_LAZY = frozenset({"ControlError", "EmbeddedCluster", "EmbeddedServer", "ServeError", "serve", "serve_cluster"})

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms on every start)
if TYPE_CHECKING:
    from raxdb.embed import ControlError, EmbeddedCluster, EmbeddedServer, ServeError, serve, serve_cluster


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import raxdb.embed

        return getattr(raxdb.embed, name)
    raise AttributeError(f"module 'raxdb' has no attribute {name!r}")
