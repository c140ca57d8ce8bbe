"""raxdb's test controls (server/commands/testcontrols.py): the switch that makes them exist.

A server started without `raxdb-test-controls yes` answers as Redis 7.0.15 does: the option is a
hidden one (CONFIG GET finds it by its exact name only), immutable, and DEBUG HELP lists no
control.  raxdb.serve() starts its servers with the controls on.  The controls themselves are
tested beside what they control."""

from __future__ import annotations

import pytest

import raxdb


def test_the_switch_is_hidden_and_immutable(diff, r):
    assert r.config_get("raxdb-test-controls") == {"raxdb-test-controls": "no"}
    assert "raxdb-test-controls" not in r.config_get("*")
    assert r.config_get("raxdb*") == {}
    with pytest.raises(Exception, match="can't set immutable config"):
        r.config_set("raxdb-test-controls", "yes")


def test_serve_can_start_a_server_without_them():
    """raxdb.serve() turns the controls on (tests/integration/test_embedded.py::test_defaults); a
    caller's config turns them off, and then the handle's control() says why it is refused."""
    import redis

    with raxdb.serve(config={"raxdb-test-controls": "no"}) as srv:
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        assert client.config_get("raxdb-test-controls") == {"raxdb-test-controls": "no"}
