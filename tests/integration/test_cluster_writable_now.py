"""DEBUG CLUSTER-WRITABLE-NOW (server/commands/t_testcluster.py): the test control that lets a
master just started turn `cluster_state:ok` without Redis's 2 s CLUSTER_WRITABLE_DELAY, which
raxdb.serve_cluster() sends to every master it forms (tests/integration/test_pytest_plugin.py
runs those clusters).  Servers from raxdb.serve(), which switches the controls on."""

from __future__ import annotations

import pytest
import redis

import raxdb
from tests.support.servers import free_port


def cluster_node(**config: str) -> raxdb.EmbeddedServer:
    """A cluster node with its bus on a free port (port + 10000 may be past 65535)."""
    return raxdb.serve({"cluster-enabled": "yes", "cluster-port": str(free_port()), **config})


def test_a_covered_master_is_ok_at_once():
    with cluster_node(**{"enable-debug-command": "yes"}) as srv:  # for DEBUG HELP
        node = redis.Redis.from_url(srv.url, decode_responses=True)
        node.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8000)
        assert node.execute_command("DEBUG", "CLUSTER-WRITABLE-NOW") == "OK"
        assert "cluster_state:fail" in node.execute_command("CLUSTER", "INFO")  # slots left uncovered
        node.execute_command("CLUSTER", "ADDSLOTSRANGE", 8001, 16383)
        # the state is updated before the control's reply is written (at the end of the loop
        # pass, as for any change of the configuration): no wait for the cluster's cron
        assert node.execute_command("DEBUG", "CLUSTER-WRITABLE-NOW") == "OK"
        assert "cluster_state:ok" in node.execute_command("CLUSTER", "INFO")
        with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'CLUSTER-WRITABLE-NOW'"):
            node.execute_command("DEBUG", "CLUSTER-WRITABLE-NOW", "extra")
        assert any("CLUSTER-WRITABLE-NOW" in line for line in node.execute_command("DEBUG", "HELP"))


def test_refused_without_cluster_mode_or_without_the_controls():
    with raxdb.serve() as srv:
        with pytest.raises(redis.ResponseError, match="cluster support disabled"):
            redis.Redis.from_url(srv.url).execute_command("DEBUG", "CLUSTER-WRITABLE-NOW")
    with cluster_node(**{"raxdb-test-controls": "no"}) as srv:
        with pytest.raises(redis.ResponseError, match="is a raxdb test control"):
            redis.Redis.from_url(srv.url).execute_command("DEBUG", "CLUSTER-WRITABLE-NOW")
