"""raxdb: a Redis-compatible server written in Python on asyncio, and a Spark source for its streams.

The installed package holds the repository's top-level folders as subpackages (in a checkout,
links to them): `raxdb.server` (the server; `python -m raxdb.server`, `raxdb-server`),
`raxdb.protocol` (RESP, no I/O), `raxdb.storage` (the keyspace and data types, no server) and
`raxdb.spark` (the PySpark data source, format name `raxdb`).  Importing `raxdb` imports none of
them: each is loaded when first used.
"""

__version__ = "0.1.0"
