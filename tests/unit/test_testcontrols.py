"""raxdb's test controls (server/commands/testcontrols.py): the switch that makes them exist.

A server started without `raxdb-test-controls yes` answers as Redis 7.0.15 does: the option is a
hidden one (CONFIG GET finds it by its exact name only), immutable, and DEBUG HELP lists no
control.  raxdb.serve() starts its servers with the controls on.  The controls themselves are
tested beside what they control."""

from __future__ import annotations

import pytest

import raxdb


def test_the_switch_is_hidden_and_immutable(diff, r):
    assert r.config_get("raxdb-test-controls") == {b"raxdb-test-controls": b"no"}
    assert b"raxdb-test-controls" not in r.config_get("*")
    assert r.config_get("raxdb*") == {}
    with pytest.raises(Exception, match="can't set immutable config"):
        r.config_set("raxdb-test-controls", "yes")
    diff("DEBUG", "HELP")  # no control listed: the same reply as redis-server's


def test_serve_starts_servers_with_the_controls_on():
    import redis

    with raxdb.serve() as srv:
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        assert client.config_get("raxdb-test-controls") == {"raxdb-test-controls": "yes"}
    with raxdb.serve(config={"raxdb-test-controls": "no"}) as srv:
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        assert client.config_get("raxdb-test-controls") == {"raxdb-test-controls": "no"}
