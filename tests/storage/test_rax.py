"""The rax against a sorted-dict model: random insert/try-insert/remove sequences with every invariant
checked after each step, and iterator seeks with every operator at every boundary."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.storage.rax import NOT_FOUND, Rax

pytestmark = pytest.mark.pure

keys = st.one_of(
    st.binary(max_size=6).map(lambda b: bytes(c % 3 + 97 for c in b)),  # a small alphabet: deep sharing
    st.binary(max_size=4),
    st.integers(0, 2**20).map(lambda i: i.to_bytes(16, "big")),  # stream-ID-like keys
)
ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), keys, st.integers()),
    st.tuples(st.just("try"), keys, st.integers()),
    st.tuples(st.just("remove"), keys),
), max_size=60)


def expected_seek(sorted_keys: list[bytes], op: str, key: bytes) -> bytes | None:
    if not sorted_keys:
        return None
    if op == "^":
        return sorted_keys[0]
    if op == "$":
        return sorted_keys[-1]
    if op == "=":
        return key if key in sorted_keys else None
    if op == ">=":
        i = bisect.bisect_left(sorted_keys, key)
    elif op == ">":
        i = bisect.bisect_right(sorted_keys, key)
    elif op == "<=":
        i = bisect.bisect_right(sorted_keys, key) - 1
    else:
        i = bisect.bisect_left(sorted_keys, key) - 1
    return sorted_keys[i] if 0 <= i < len(sorted_keys) else None


def check_iteration(rax: Rax, model: dict[bytes, int], probes: list[bytes]) -> None:
    sk = sorted(model)
    it = rax.iterator()
    it.seek("^")
    fwd = []
    while it.next():
        fwd.append((it.key, it.value))
    assert fwd == [(k, model[k]) for k in sk]
    it.seek("$")
    back = []
    while it.prev():
        back.append(it.key)
    assert back == sk[::-1]
    for probe in probes:
        for op in ("=", ">=", ">", "<=", "<", "^", "$"):
            want = expected_seek(sk, op, probe)
            found = it.seek(op, probe)
            assert found == (want is not None), (op, probe)
            if want is None:
                assert not it.next() and not it.prev()
                continue
            assert it.next() and it.key == want and it.value == model[want], (op, probe)
            # continuing in either direction from the sought element walks the sorted order
            i = sk.index(want)
            if it.next():
                assert it.key == sk[i + 1]
            else:
                assert i == len(sk) - 1
            it.seek(op, probe)
            assert it.prev() and it.key == want
            if it.prev():
                assert it.key == sk[i - 1]
            else:
                assert i == 0


@settings(max_examples=400, deadline=None)
@given(ops, st.lists(keys, max_size=5))
def test_rax_matches_sorted_dict(oplist, extra_probes):
    rax = Rax()
    model: dict[bytes, int] = {}
    for op in oplist:
        if op[0] == "insert":
            assert rax.insert(op[1], op[2]) == (op[1] not in model)
            model[op[1]] = op[2]
        elif op[0] == "try":
            assert rax.try_insert(op[1], op[2]) == (op[1] not in model)
            model.setdefault(op[1], op[2])
        else:
            assert rax.pop(op[1]) == model.pop(op[1], NOT_FOUND)
        assert rax.validate() == sorted(model)
        assert len(rax) == len(model)
    for k, v in model.items():
        assert rax.find(k) == v and k in rax
    probes = list(model) + extra_probes + [k + b"\x00" for k in model] + [k[:-1] for k in model if k]
    probes += [b"", b"\xff" * 17]
    for k in probes:
        if k not in model:
            assert rax.find(k) is NOT_FOUND
    check_iteration(rax, model, probes)


def test_removing_everything_leaves_one_empty_root():
    rax = Rax()
    ks = [b"annibale", b"annientare", b"ago", b"ciao", b"anni", b"", b"a"]
    for i, k in enumerate(ks):
        assert rax.insert(k, i)
    rax.validate()
    for k in ks:
        assert rax.remove(k)
        rax.validate()
    assert rax.numnodes == 1 and len(rax) == 0
    assert rax.first() is None and rax.last() is None


def test_known_shapes():
    # Node counts of Redis's rax for the splits described in rax.c's insertion comment.
    rax = Rax()
    rax.insert(b"annibale", 1)
    assert rax.numnodes == 2  # "annibale" -> []
    rax.insert(b"annientare", 2)
    assert rax.numnodes == 6  # "anni" -> [b,e] -> "ale" -> [] and "ntare" -> []
    rax.insert(b"anni", 3)
    assert rax.numnodes == 6  # the split node becomes a key
    rax.remove(b"annientare")
    # "anni" -> [b](key) -> "ale" -> []: Redis does not fold a key node into a compressed run
    assert rax.numnodes == 4
    rax.validate()
    assert list(rax.keys()) == [b"anni", b"annibale"]


def test_items_from_a_start_key():
    rax = Rax()
    for i in range(0, 1000, 7):
        rax.insert(i.to_bytes(16, "big"), i)
    assert [v for _, v in rax.items(start=(500).to_bytes(16, "big"))][:2] == [504, 511]
    assert [v for _, v in rax.items(start=(500).to_bytes(16, "big"), reverse=True)][:2] == [497, 490]
