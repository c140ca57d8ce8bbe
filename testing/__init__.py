"""raxdb.testing: raxdb for a project's tests.  `plugin` is the pytest plugin (fixtures raxdb_server,
raxdb_url, raxdb_client, raxdb_async_client, raxdb_factory), loaded by pytest through raxdb's
`pytest11` entry point once raxdb is installed.

Rule: test-side conveniences over raxdb.serve() (raxdb/embed/); nothing here starts a server by
other means, and nothing in the server imports this package (import-linter contract).
"""
