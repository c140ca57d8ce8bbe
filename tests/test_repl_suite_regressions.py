"""Differences Redis's own replication tests (tools/redis_suite/run.sh, integration/replication*,
psync2*, block-repl) found in raxdb, each pinned by a differential test: the same scenario with
raxdb and with redis-server in the role under test, compared.

Waits poll a condition with a deadline; no timing is asserted.
"""

from __future__ import annotations

import os
import signal

import redis

from tests.servers import ServerProcess, start_raxdb, start_redis
from tests.test_repl_master import FAST, client, info, link_up, replica_of, running, wait_for


def _try(c: redis.Redis, *args: object) -> object:
    try:
        return c.execute_command(*args)
    except redis.ResponseError as e:
        return f"ERR {e}"


# ---- CONFIG SET of min-replicas-* recounts the good replicas (replication-2) ----------------------------
def _min_replicas_scenario(master: ServerProcess) -> list[object]:
    m = client(master)
    out: list[object] = []
    with replica_of(master, *FAST) as rep:
        wait_for(lambda: link_up(rep), what="master_link_status:up")
        m.config_set("min-replicas-to-write", 1)
        m.config_set("min-replicas-max-lag", 1)
        wait_for(lambda: info(master).get("min_slaves_good_slaves") == "1", what="a good replica")
        out.append(_try(m, "SET", "foo", "1"))
        os.kill(rep.proc.pid, signal.SIGSTOP)  # its ACKs stop: the lag grows past 1 s
        try:
            wait_for(lambda: str(_try(m, "SET", "foo", "2")).startswith("ERR NOREPLICAS"),
                     what="writes refused")
        finally:
            os.kill(rep.proc.pid, signal.SIGCONT)
        # a larger max lag takes the replica back at once, not at the next replicationCron
        m.config_set("min-replicas-max-lag", 100)
        out.append(_try(m, "SET", "foo", "3"))
        out.append(info(master).get("min_slaves_good_slaves"))
    return out


def test_config_set_recounts_good_replicas() -> None:
    with running(start_raxdb(*FAST)) as a, running(start_redis(*FAST)) as b:
        got, want = _min_replicas_scenario(a), _min_replicas_scenario(b)
        assert got == want == [True, True, "1"]

