"""server/base/fields.py's base classes are declared three times: their __slots__ (the interpreted
build), fields.pxd (the compiled build's C struct fields) and server/base/interfaces.py (what the
lower floors may read).  The builds differ where one of them forgets a field (None compiled, an
AttributeError interpreted), so they must name the same fields."""

from __future__ import annotations

import ast
import re

import pytest

from tests.support.servers import ROOT

BASE = ROOT / "server" / "base"
# the protocol of interfaces.py that declares each base's fields, where one does
PROTOCOLS = {"ServerFields": "Server", "ClientFields": "Client", "ReplFields": "Replication"}


def _slots() -> dict[str, set[str]]:
    out = {}
    for node in ast.parse((BASE / "fields.py").read_text()).body:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", "") == "__slots__":
                    out[node.name] = set(ast.literal_eval(stmt.value))
    return out


def _pxd() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    current = None
    for line in (BASE / "fields.pxd").read_text().splitlines():
        m = re.match(r"cdef class (\w+)", line)
        if m:
            current = out.setdefault(m.group(1), set())
            continue
        m = re.match(r"\s+cdef public (?:unsigned )?(?:long long|[\w.]+) (.+)$", line)
        if m and current is not None:
            current.update(name.strip() for name in m.group(1).split("#")[0].split(","))
    return out


def _protocol_members(name: str) -> set[str]:
    tree = ast.parse((BASE / "interfaces.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    return {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def test_every_base_is_declared_in_both_builds():
    assert set(_slots()) == set(_pxd()) and len(_slots()) >= 6


@pytest.mark.parametrize("base", sorted(_slots()))
def test_slots_and_pxd_name_the_same_fields(base):
    assert _slots()[base] == _pxd()[base]


@pytest.mark.parametrize("base", sorted(PROTOCOLS))
def test_the_interfaces_declare_every_field(base):
    public = {n for n in _slots()[base] if not n.startswith("_")}  # a private one is its class's own
    missing = public - _protocol_members(PROTOCOLS[base])
    assert not missing, f"interfaces.py's {PROTOCOLS[base]} does not declare {sorted(missing)}"


def test_the_compiled_bases_have_every_field():
    """In either build each field is an attribute of the class (a slot or a C field's descriptor)."""
    from raxdb.server.base import fields

    for base, names in _slots().items():
        cls = getattr(fields, base)
        assert all(hasattr(cls, n) for n in names), base
