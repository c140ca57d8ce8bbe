"""Propagation to the AOF against redis-server's (tests/aofdiff.py): what each command appends."""

from __future__ import annotations


def test_plain_writes_and_select(aofdiff):
    aofdiff.run("SET", "a", "1")
    aofdiff.run("GET", "a")  # reads append nothing
    aofdiff.run("SELECT", "3")
    aofdiff.run("LPUSH", "l", "x", "y")
    aofdiff.run("SELECT", "0")
    aofdiff.run("DEL", "a", "nosuchkey")
    aofdiff.run("DEL", "nosuchkey")  # nothing changed: nothing appended
    aofdiff.check()


def test_transaction_wraps_its_writes(aofdiff):
    aofdiff.run("MULTI")
    aofdiff.run("SET", "a", "1")
    aofdiff.run("GET", "a")
    aofdiff.run("INCR", "a")
    aofdiff.run("EXEC")
    aofdiff.run("MULTI")
    aofdiff.run("SET", "b", "1")  # one write: no MULTI/EXEC around it
    aofdiff.run("EXEC")
    aofdiff.check()
