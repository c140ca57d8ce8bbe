"""HyperLogLog commands (Redis's hyperloglog.c): PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.

An HLL is an ordinary string value holding Redis's exact bytes (`storage.hll`), so GET, DUMP-free
copies, APPEND and friends see what they would see in Redis.  Commands that modify it first make
the value a `bytearray` (Redis's dbUnshareStringValue: the key then has the raw encoding) and edit
it in place.  PFCOUNT on one key refreshes the cached cardinality inside the string, which is a
modification (dirty, WATCH) as in Redis.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import WRONGTYPE, CommandError, c_str
from raxdb.server.events.keyaccess import (
    NOTIFY_STRING,
    is_string,
    lookup_read,
    lookup_write,
    modified,
    notify,
    writable_string,
)
from raxdb.server.table.args import option_word
from raxdb.server.table.registry import command
from raxdb.storage import hll

NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."


def _checked(v) -> bytes | bytearray:
    if not is_string(v):
        raise CommandError(WRONGTYPE)
    if not hll.is_hll(v):
        raise CommandError(NOT_HLL)
    return v


def _sparse_max(c) -> int:
    return int(c.server.config.values["hll-sparse-max-bytes"])


def _corrupt() -> CommandError:
    return CommandError(hll.INVALID_HLL)


@command("pfadd")
def pfadd(c, argv):
    key = argv[1]
    v = lookup_write(c, key)
    updated = 0
    if v is None:
        buf = hll.new_sparse()
        c.db.add(key, buf)
        updated = 1
    else:
        buf = writable_string(c, key, _checked(v))
    if len(argv) > 2:
        try:
            updated += hll.add(buf, argv[2:], _sparse_max(c))
        except hll.CorruptHLL:
            raise _corrupt() from None
    if updated:
        hll.invalidate_cache(buf)
        modified(c, key)
        c.server.dirty += updated - 1
        notify(c, NOTIFY_STRING, "pfadd", key)
    return R.ONE if updated else R.ZERO


def _merged_registers(c, keys: list[bytes]) -> tuple[bytearray, bool]:
    """Register-wise max over the HLLs at `keys` (missing keys are empty), and whether any is dense."""
    acc: bytearray | None = None
    dense = False
    for key in keys:
        v = lookup_read(c, key)
        if v is None:
            continue
        _checked(v)
        if v[4] == hll.DENSE:
            dense = True
        try:
            regs = hll.registers(v)
        except hll.CorruptHLL:
            raise _corrupt() from None
        if acc is None:
            acc = regs
        else:
            hll.max_into(acc, regs)
    return (acc if acc is not None else bytearray(hll.REGISTERS)), dense


@command("pfcount")
def pfcount(c, argv):
    if len(argv) > 2:
        regs, _ = _merged_registers(c, argv[1:])
        return R.integer(hll.count_registers(regs))
    key = argv[1]
    v = lookup_write(c, key)
    if v is None:
        return R.ZERO
    _checked(v)
    card = hll.cached_card(v)
    if card is None:
        try:
            card = hll.count(v)
        except hll.CorruptHLL:
            raise _corrupt() from None
        hll.set_cached_card(writable_string(c, key, v), card)
        modified(c, key)
    return R.integer(card)


@command("pfmerge")
def pfmerge(c, argv):
    regs, use_dense = _merged_registers(c, argv[1:])
    key = argv[1]
    v = lookup_write(c, key)
    if v is None:
        buf = hll.new_sparse()
        c.db.add(key, buf)
    else:
        buf = writable_string(c, key, v)
    try:
        if use_dense:
            hll.to_dense(buf)
        hll.write_registers(buf, regs, _sparse_max(c))
    except hll.CorruptHLL:
        raise _corrupt() from None
    hll.invalidate_cache(buf)
    modified(c, key)
    notify(c, NOTIFY_STRING, "pfadd", key)
    return R.OK


@command("pfdebug")
def pfdebug(c, argv):
    sub = option_word(argv[1])
    key = argv[2]
    v = lookup_write(c, key)
    if v is None:
        raise CommandError("ERR The specified key does not exist")
    buf = writable_string(c, key, _checked(v))
    if sub in (b"getreg", b"todense"):
        converted = buf[4] == hll.SPARSE
        if converted:
            try:
                hll.to_dense(buf)
            except hll.CorruptHLL:
                raise _corrupt() from None
            c.server.dirty += 1
        if sub == b"todense":
            return R.ONE if converted else R.ZERO
        return b"*%d\r\n" % hll.REGISTERS + b"".join(R.integer(r) for r in hll.dense_registers(buf))
    if sub == b"decode":
        if buf[4] != hll.SPARSE:
            raise CommandError("ERR HLL encoding is not sparse")
        return R.bulk(hll.describe_sparse(buf))
    if sub == b"encoding":
        return R.status(b"sparse" if buf[4] == hll.SPARSE else b"dense")
    raise CommandError(b"ERR Unknown PFDEBUG subcommand '%s'" % c_str(argv[1]))


@command("pfselftest")
def pfselftest(c, argv):
    err = hll.selftest()
    if err:
        raise CommandError("ERR " + err)
    return R.OK
