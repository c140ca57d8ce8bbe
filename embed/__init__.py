"""raxdb.embed: start real raxdb servers from Python (`raxdb.serve()`), for applications and tests.

Rule: what starts, watches and stops servers from the caller's side lives here (api.py), what
runs in the server's process before the server's own entry point (child.py), and the template
process that forks them (template.py), the caller's side of the test controls (control.py), and
clusters of such servers (cluster.py, `raxdb.serve_cluster()`).  It uses the server only
through raxdb.server.main; the server never imports it (import-linter contracts in pyproject.toml).
Importing it imports the standard library only: the server's modules load in the child process, or
on the first thread-mode start.
"""

from raxdb.embed.api import EmbeddedServer, ServeError, serve
from raxdb.embed.cluster import EmbeddedCluster, serve_cluster
from raxdb.embed.control import ControlError

__all__ = ["ControlError", "EmbeddedCluster", "EmbeddedServer", "ServeError", "serve", "serve_cluster"]
