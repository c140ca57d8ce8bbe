"""`python -m raxdb.server`: the server's entry point (main.py), as `raxdb-server` runs it."""

from raxdb.server.main import main

main()
