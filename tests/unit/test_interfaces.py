"""server/base/interfaces.py's invariant: every member a protocol declares exists on the concrete
object once constructed (a Server after Server.__init__, a Client after Client.__init__, ...),
a method as a method with the same parameters."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

_PROTOCOL_OWN = {"_is_protocol", "_is_runtime_protocol", "_abc_impl"}


def _members(proto: type) -> dict[str, Any]:
    """The members a protocol declares: its annotated attributes (None) and its methods."""
    members: dict[str, Any] = dict.fromkeys(proto.__annotations__)
    for name, value in vars(proto).items():
        if name.startswith("__") or name in _PROTOCOL_OWN:
            continue
        if isinstance(value, staticmethod | property):
            members[name] = value
        elif inspect.isfunction(value):
            members[name] = value
    return members


def _params(fn: Any) -> list[str] | None:
    try:
        return [p for p in inspect.signature(fn).parameters if p != "self"]
    except (TypeError, ValueError):  # a compiled method without a signature
        return None


def _check(proto: type, obj: Any) -> None:
    missing, wrong = [], []
    for name, decl in _members(proto).items():
        if decl is None:  # an attribute
            if not hasattr(obj, name):
                missing.append(name)
            continue
        if isinstance(decl, property):  # a read-only member: a property, or an attribute (as mypy reads it)
            static = inspect.getattr_static(type(obj), name, None)
            if not isinstance(static, property) and (not hasattr(obj, name) or callable(static)):
                wrong.append(f"{name}: neither a property nor an attribute")
            continue
        fn = decl.__func__ if isinstance(decl, staticmethod) else decl
        real = getattr(obj, name, None)
        if real is None or not callable(real):
            missing.append(name)
            continue
        want, got = _params(fn), _params(real)
        if want is not None and got is not None and want != got:
            wrong.append(f"{name}{tuple(got)}, declared {tuple(want)}")
    assert not missing, f"{proto.__name__}: not on {type(obj).__name__}: {missing}"
    assert not wrong, f"{proto.__name__}: {wrong}"


@pytest.fixture(scope="module")
def objects():
    import raxdb.server.commands  # noqa: F401 - registers the handlers
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server
    from raxdb.server.events.tracking import ClientTracking, state
    from raxdb.server.net.client import Client
    from raxdb.server.replication.master import replica_of
    from raxdb.server.table.registry import TABLE

    srv = Server(Config())
    c = Client(srv)
    return {"Server": srv, "Client": c, "Replication": srv.repl, "Replica": replica_of(c),
            "Tracking": state(srv), "ClientTracking": ClientTracking(), "Command": TABLE.commands["get"]}


@pytest.mark.parametrize("name", ["Server", "Client", "Replication", "Replica", "Tracking", "ClientTracking",
                                  "Command"])
def test_concrete_classes_satisfy_the_protocols(objects, name):
    from raxdb.server.base import interfaces

    _check(getattr(interfaces, name), objects[name])


def test_every_public_member_is_declared(objects):
    """The other way round for the server and a client (server.h declares the whole struct): a
    public attribute or method added to them is declared too, or listed here as not for lower layers."""
    from raxdb.server.base import interfaces

    lazy = {"latency_events"}  # made on first use, not declared
    for name in ("Server", "Client"):
        obj = objects[name]
        declared = set(_members(getattr(interfaces, name)))
        have = set(vars(obj)) if hasattr(obj, "__dict__") else set()
        have |= {s for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)}
        have |= {n for n in dir(type(obj)) if not n.startswith("_") and callable(getattr(type(obj), n))
                 and n in {m for k in type(obj).__mro__ if k.__module__.startswith("raxdb.") for m in vars(k)}}
        public = {n for n in have if not n.startswith("_")} - lazy
        assert public <= declared, f"{name}: undeclared in base/interfaces.py: {sorted(public - declared)}"
