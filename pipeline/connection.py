"""Connections to raxdb / redis-server through redis-py, and the few raw calls the hot paths need.

Everything speaks RESP2 (pinned: redis-py 8 defaults to RESP3, whose reply shapes differ) and goes
through redis-py.  The hot paths (paged XRANGE in read tasks, pipelined writes in sink tasks) use
one redis-py `Connection` directly via `RawSession`: replies come back as hiredis-parsed lists of
bytes without redis-py's per-command response callbacks (which would build a dict per entry), and
a request can be sent before the previous reply is consumed, so the server works on the next page
while this process converts the current one.

A server restart or failover shows as ConnectionError (refused, reset) or a `LOADING` reply
(redis-py's BusyLoadingError, a ConnectionError) or a timeout; on a cluster also as a `CLUSTERDOWN`
or `TRYAGAIN` reply (`TRANSIENT`: the survivors refuse commands between a master's failure and its
replica's promotion, and a slot in migration refuses multi-key commands).  `Backoff` is the one retry policy:
waits doubling from 50 ms to 1 s, for at most `retryTimeout` seconds from the first failure of an
outage (a success starts the count again); redis-py's own retries are switched off so that this
bound is the only one.  What is retried is each caller's business: a whole planning step, the rest
of a read range, a sink transaction from its marker check.

hiredis is used when present (faster command packing); redis-py alone is enough.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ClusterDownError, TryAgainError
from redis.retry import Retry

from raxdb.spark import ids
from raxdb.spark.options import ConnectionOptions

hiredis: ModuleType | None
try:
    import hiredis as _hiredis

    hiredis = _hiredis
except ImportError:  # optional: redis-py packs commands itself
    hiredis = None
try:  # what redis-py's hiredis reader returns while a reply is incomplete (see read_many)
    from redis._parsers.hiredis import NOT_ENOUGH_DATA
except ImportError:
    NOT_ENOUGH_DATA = None

log = logging.getLogger("raxdb.spark")
T = TypeVar("T")

# What a restarting or failing-over server looks like to a client (BusyLoadingError, the LOADING
# reply, is a ConnectionError).
RETRYABLE = (redis.ConnectionError, redis.TimeoutError)
# Replies that say "not now" while a cluster fails over or a slot moves: retried after a wait, with
# a fresh slot map where the caller keeps one.
TRANSIENT = (TryAgainError, ClusterDownError)


class Backoff:
    """Waits between attempts during one outage, bounded by the connection's retryTimeout."""

    FIRST, LONGEST = 0.05, 1.0

    def __init__(self, opts: ConnectionOptions, what: str) -> None:
        self.limit = opts.retry_timeout
        self.what = what
        self.since: float | None = None
        self.delay = self.FIRST

    def reset(self) -> None:
        self.since = None
        self.delay = self.FIRST

    def wait(self, error: Exception) -> None:
        """Sleep before the next attempt, or raise once the outage has lasted retryTimeout."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
        left = self.since + self.limit - now
        if left <= 0:
            raise redis.ConnectionError(
                f"{self.what}: the server was unreachable for {self.limit:g}s ({error}); the option "
                f"'retryTimeout' sets how long to keep retrying") from error
        log.warning("%s: %s; retrying (for up to %.0fs more)", self.what, error, left)
        time.sleep(min(self.delay, left))
        self.delay = min(self.delay * 2, self.LONGEST)


def retrying(opts: ConnectionOptions, what: str, call: Callable[[], T]) -> T:
    """call() until it does not fail with a connection error or a cluster's transient refusal,
    within retryTimeout."""
    backoff = Backoff(opts, what)
    while True:
        try:
            return call()
        except (*RETRYABLE, *TRANSIENT) as e:
            backoff.wait(e)


def client(opts: ConnectionOptions) -> redis.Redis:
    """A redis-py client for the driver-side calls (discovery, XINFO, XGROUP, commit clean-up)."""
    kwargs: dict[str, Any] = dict(
        host=opts.host, port=opts.port, db=opts.db, username=opts.username, password=opts.password,
        socket_connect_timeout=opts.connect_timeout, socket_timeout=opts.socket_timeout, protocol=2,
        retry=Retry(NoBackoff(), 0),
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
        if hiredis is not None:
            self.conn.send_packed_command([b"".join(map(hiredis.pack_command, commands))])
        else:
            self.conn.send_packed_command(self.conn.pack_commands(commands))

    def read(self) -> Any:
        return self.conn.read_response()

    def read_many(self, count: int) -> list[Any]:
        """The next `count` replies, error replies as exception objects in their place (not
        raised, so the caller stays in step with the server); a `LOADING` reply or a lost
        connection raises, as read() does.

        With hiredis, the replies come straight from redis-py's hiredis reader: read_response's
        per-reply bookkeeping costs ~20 times the parsing, and the sink reads one reply (+QUEUED)
        per command.  Without hiredis (or should redis-py's parser change shape), read() each."""
        parser: Any = getattr(self.conn, "_parser", None)
        reader = getattr(parser, "_reader", None)
        if (NOT_ENOUGH_DATA is None or reader is None or not hasattr(parser, "read_from_socket")
                or not hasattr(reader, "gets")):
            return [self._read_or_error() for _ in range(count)]
        replies: list[Any] = []
        gets, append, left = reader.gets, replies.append, count
        try:
            while left:
                reply = gets()
                if reply is NOT_ENOUGH_DATA:
                    parser.read_from_socket()
                    continue
                append(reply)
                left -= 1
        except OSError as e:  # what read_response turns into ConnectionError
            raise redis.ConnectionError(f"Error while reading from {self.conn.host}:{self.conn.port}: {e}") from e
        for reply in replies:
            if reply.__class__ is not bytes and isinstance(reply, RETRYABLE):
                raise reply
        return replies

    def _read_or_error(self) -> Any:
        try:
            return self.read()
        except redis.ResponseError as e:
            return e

    def call(self, *args: Any) -> Any:
        self.send(*args)
        return self.read()


def xrange_pages(session: RawSession, key: str | bytes, lo: int, hi: int, count: int,
                 asking: bool = False) -> Iterator[list]:
    """Entries of `key` with lo < ID <= hi as raw XRANGE pages of up to `count` entries.

    The request for page k+1 is sent as soon as page k arrives (its last ID is the next exclusive
    start), before page k is handed to the caller: one request is always in flight.  `asking`
    (a cluster node importing the key's slot) puts ASKING before every XRANGE."""
    end = ids.fmt(hi)

    def request(start: str | bytes) -> None:
        if asking:
            session.send_many([("ASKING",), ("XRANGE", key, start, end, "COUNT", count)])
        else:
            session.send("XRANGE", key, start, end, "COUNT", count)

    def reply() -> list:
        if asking:
            session.read()  # ASKING's +OK
        return session.read()

    request("(" + ids.fmt(lo))
    while True:
        page = reply()
        if len(page) < count:
            if page:
                yield page
            return
        request(b"(" + page[-1][0])
        yield page


def scan_streams(r: redis.Redis | redis.RedisCluster, pattern: str) -> list[str]:
    """Stream keys matching a glob (SCAN MATCH ... TYPE stream, on every master of a cluster), sorted."""
    found: set[str] = set()
    if isinstance(r, redis.RedisCluster):  # a cluster: every master's own keys
        for node in r.get_primaries():
            found.update(scan_streams(r.get_redis_connection(node), pattern))
        return sorted(found)
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


def pipelined(r: redis.Redis | redis.RedisCluster, commands: Iterable[Sequence[Any]]) -> list[Any]:
    """Run commands in one round trip; error replies come back as exception objects, not raised,
    except `LOADING` (a server still loading its data) and a cluster's `CLUSTERDOWN` / `TRYAGAIN`:
    those are raised, to be retried."""
    pipe = r.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    replies = pipe.execute(raise_on_error=False)
    for reply in replies:
        if isinstance(reply, (*RETRYABLE, *TRANSIENT)):
            raise reply
    return replies
