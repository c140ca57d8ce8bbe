"""The test control of cluster nodes: DEBUG CLUSTER-WRITABLE-NOW (a raxdb extension, there only with
`raxdb-test-controls yes`; registered with commands/testcontrols.py).

A master turns `cluster_state:ok` no sooner than 2 s after it started (Redis's
CLUSTER_WRITABLE_DELAY: a restarted master learns first whether it lost its slots meanwhile).  A
node that a test suite has just started has nothing to learn, and waiting 2 s in each session for
it is what this control ends: raxdb.serve_cluster() sends it to every master it forms.  The
state is updated at the end of the loop pass, as any change of the cluster's configuration is; the
other conditions of `ok` (every slot covered, a majority of masters reachable) still hold.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError, subcommand_syntax
from raxdb.server.commands.testcontrols import control

_DISABLED = "ERR This instance has cluster support disabled"


@control("cluster-writable-now", [
    "CLUSTER-WRITABLE-NOW",
    "    (raxdb) Let this master turn ok without waiting 2 s after its start (CLUSTER_WRITABLE_DELAY).",
])
def cluster_writable_now(c, argv):
    if len(argv) != 2:
        raise subcommand_syntax(argv)
    cl = c.server.cluster
    if cl is None:
        raise CommandError(_DISABLED)
    cl.st.end_writable_delay()
    cl.changed(state=True)
    return R.OK
