"""Connections to raxdb / redis-server through redis-py, and the few raw calls the hot paths need.

Everything speaks RESP2 (pinned: redis-py 8 defaults to RESP3, whose reply shapes differ) and goes
through redis-py.  The hot paths (paged XRANGE in read tasks, pipelined writes in sink tasks) use
one redis-py `Connection` directly via `RawSession`: replies come back as hiredis-parsed lists of
bytes without redis-py's per-command response callbacks (which would build a dict per entry), and
a request can be sent before the previous reply is consumed, so the server works on the next page
while this process converts the current one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import hiredis
import redis

from raxdb.spark import ids
from raxdb.spark.options import ConnectionOptions


def client(opts: ConnectionOptions) -> redis.Redis:
    """A redis-py client for the driver-side calls (discovery, XINFO, XGROUP, commit clean-up)."""
    kwargs: dict[str, Any] = dict(
        host=opts.host, port=opts.port, db=opts.db, username=opts.username, password=opts.password,
        socket_connect_timeout=opts.connect_timeout, socket_timeout=opts.socket_timeout, protocol=2,
    )
    if opts.tls:
        kwargs.update(ssl=True, ssl_ca_certs=opts.tls_ca_cert, ssl_certfile=opts.tls_cert,
                      ssl_keyfile=opts.tls_key, ssl_cert_reqs="required" if opts.tls_verify else "none",
                      ssl_check_hostname=opts.tls_verify)
    return redis.Redis(**kwargs)


class RawSession:
    """One dedicated connection: send / read raw replies; errors in replies raise ResponseError."""

    def __init__(self, opts: ConnectionOptions) -> None:
        self._client = client(opts)
        self.conn = self._client.connection_pool.get_connection()

    def close(self) -> None:
        # Disconnect rather than release: after an error the connection may sit in MULTI or hold
        # unread replies, and a fresh task opens its own session anyway.
        self.conn.disconnect()
        self._client.close()

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, *args: Any) -> None:
        self.conn.send_command(*args)

    def send_many(self, commands: Sequence[Sequence[Any]]) -> None:
        # hiredis (redis-py's own packer backend) directly: redis-py's per-command wrapper
        # (splitting the name on spaces, re-tupling the arguments) costs more than the packing.
        self.conn.send_packed_command([b"".join(map(hiredis.pack_command, commands))])

    def read(self) -> Any:
        return self.conn.read_response()

    def call(self, *args: Any) -> Any:
        self.send(*args)
        return self.read()


def xrange_pages(session: RawSession, key: str | bytes, lo: int, hi: int, count: int) -> Iterator[list]:
    """Entries of `key` with lo < ID <= hi as raw XRANGE pages of up to `count` entries.

    The request for page k+1 is sent as soon as page k arrives (its last ID is the next exclusive
    start), before page k is handed to the caller: one request is always in flight."""
    end = ids.fmt(hi)
    session.send("XRANGE", key, "(" + ids.fmt(lo), end, "COUNT", count)
    while True:
        page = session.read()
        if len(page) < count:
            if page:
                yield page
            return
        session.send("XRANGE", key, b"(" + page[-1][0], end, "COUNT", count)
        yield page


def scan_streams(r: redis.Redis, pattern: str) -> list[str]:
    """Stream keys matching a glob (SCAN MATCH ... TYPE stream), sorted."""
    found: set[str] = set()
    cursor = 0
    while True:
        cursor, keys = r.execute_command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000, "TYPE", "stream")
        found.update(decode_key(k) for k in keys)
        if int(cursor) == 0:
            return sorted(found)


def decode_key(key: bytes | str) -> str:
    """Keys travel in offsets (JSON) as text; bytes that are not UTF-8 survive via surrogateescape."""
    return key if isinstance(key, str) else key.decode("utf-8", "surrogateescape")


def encode_key(key: str) -> bytes:
    return key.encode("utf-8", "surrogateescape")


def pipelined(r: redis.Redis, commands: Iterable[Sequence[Any]]) -> list[Any]:
    """Run commands in one round trip; error replies come back as exception objects, not raised."""
    pipe = r.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return pipe.execute(raise_on_error=False)
