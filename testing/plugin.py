"""The raxdb pytest plugin: real raxdb servers as fixtures (loaded through the `pytest11` entry point).

Fixtures (all named raxdb_*, so they cannot collide with a project's own):
- `raxdb_server` (session): one server per test session, so one per pytest-xdist worker (each
  worker is a session of its own process); a raxdb.embed.EmbeddedServer (`.host`, `.port`, `.url`).
- `raxdb_url` (session): its `redis://host:port/0`.
- `raxdb_client`: a redis-py client on it, the server flushed (FLUSHALL) before the test, its
  faults cleared and its clock back on the wall clock (the test controls, when on).
- `raxdb_async_client`: the same with redis.asyncio; a pytest-asyncio fixture, so it needs
  pytest-asyncio (anyio's pytest plugin alone does not run it).
- `raxdb_factory`: `raxdb_factory(config={...}, **serve_options)` starts more servers, e.g. a
  replica of `raxdb_server`; each is stopped at the end of the test.
- `raxdb_clock`: the clock of `raxdb_server` (`.advance(seconds)`, `.freeze()`, `.unfreeze()`,
  `.reset()`), put back on the wall clock, unfrozen, when the test ends.
- `raxdb_cluster`: a Redis Cluster (raxdb.embed.EmbeddedCluster: `.nodes`, `.startup_nodes`,
  `.simulate_failover()`) of 3 masters for the session, flushed before each test, started again
  should a test have stopped one of its nodes; `raxdb_cluster_client` / `raxdb_async_cluster_client`:
  redis-py's RedisCluster (sync / asyncio) on it.
- `raxdb_cluster_factory`: `raxdb_cluster_factory(masters=3, replicas=0, config={...}, **options)`
  starts more clusters, each stopped at the end of the test.

Options, the command line winning over the ini file: `--raxdb-config KEY=VALUE` (repeatable) /
ini `raxdb_config` (one KEY=VALUE a line) for the servers' redis.conf options, `--raxdb-protocol
2|3` / ini `raxdb_protocol` for the clients' RESP version (default 2), and `--raxdb-mode process|
thread` / ini `raxdb_mode` (default process, raxdb/embed/api.py says why), `--raxdb-cluster-masters N`
/ ini `raxdb_cluster_masters` for raxdb_cluster's size (default 3; 1: one node with every slot).

Rule: fixtures and options only; servers are started by raxdb.serve() (raxdb/embed/), never here.
Invariants: importing this module imports neither redis-py nor the server (pytest loads it in
every session of every project where raxdb is installed); redis-py is imported by the fixtures
that need it, with a clear error when it is missing; every server a fixture starts is stopped by
that fixture's teardown, a failing test's included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from raxdb.embed import EmbeddedCluster, EmbeddedServer
    from raxdb.embed.api import Mode

try:  # the async client fixture is pytest-asyncio's; without it, the fixture says what is missing
    import pytest_asyncio

    HAVE_PYTEST_ASYNCIO = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_PYTEST_ASYNCIO = False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("raxdb", "raxdb servers (raxdb.testing.plugin)")
    group.addoption("--raxdb-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a redis.conf option for the raxdb servers the fixtures start (repeatable)")
    group.addoption("--raxdb-protocol", choices=("2", "3"), default=None,
                    help="RESP version of the raxdb_client / raxdb_async_client fixtures (default 2)")
    group.addoption("--raxdb-mode", choices=("process", "thread"), default=None,
                    help="run the fixtures' servers as child processes (default) or in threads")
    parser.addini("raxdb_config", type="linelist", default=[],
                  help="redis.conf options for the raxdb fixtures' servers, one KEY=VALUE a line")
    parser.addini("raxdb_protocol", default="2", help="RESP version of the raxdb client fixtures (2 or 3)")
    parser.addini("raxdb_mode", default="process", help="process (default) or thread")
    group.addoption("--raxdb-cluster-masters", type=int, default=None, metavar="N",
                    help="masters of the raxdb_cluster fixture's cluster (default 3; 1: one node, every slot)")
    parser.addini("raxdb_cluster_masters", default="3", help="masters of the raxdb_cluster fixture's cluster")


def pytest_configure(config: pytest.Config) -> None:
    """Bad options stop the run before any test, as pytest's own usage errors do."""
    _config(config)
    _protocol(config)
    _mode(config)
    _cluster_masters(config)


def _config(pytestconfig: pytest.Config) -> dict[str, str | list[str]]:
    """The ini file's options, then the command line's; an option given more than once (in one
    place) is repeated, as redis.conf repeats `rename-command` or `user`."""
    merged: dict[str, str | list[str]] = {}
    for source in (pytestconfig.getini("raxdb_config"), pytestconfig.getoption("raxdb_config")):
        given: dict[str, list[str]] = {}
        for item in source:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise pytest.UsageError(f"raxdb config {item!r}: expected KEY=VALUE")
            given.setdefault(key.strip().lower(), []).append(value.strip())
        merged.update({k: v[0] if len(v) == 1 else v for k, v in given.items()})
    return merged


def _protocol(pytestconfig: pytest.Config) -> int:
    value = pytestconfig.getoption("raxdb_protocol") or pytestconfig.getini("raxdb_protocol")
    if str(value) not in ("2", "3"):
        raise pytest.UsageError(f"raxdb_protocol must be 2 or 3, not {value!r}")
    return int(value)


def _mode(pytestconfig: pytest.Config) -> Mode:
    value = pytestconfig.getoption("raxdb_mode") or pytestconfig.getini("raxdb_mode")
    if value not in ("process", "thread"):
        raise pytest.UsageError(f"raxdb_mode must be process or thread, not {value!r}")
    return cast("Mode", value)


def _cluster_masters(pytestconfig: pytest.Config) -> int:
    value = pytestconfig.getoption("raxdb_cluster_masters") or pytestconfig.getini("raxdb_cluster_masters")
    if not str(value).isdigit() or int(value) < 1:
        raise pytest.UsageError(f"raxdb_cluster_masters must be a number of masters, 1 or more, not {value!r}")
    return int(value)


def _redis() -> Any:
    try:
        import redis
    except ImportError:
        raise pytest.UsageError("the raxdb client fixtures need redis-py: pip install redis") from None
    return redis


@pytest.fixture(scope="session")
def raxdb_server(pytestconfig: pytest.Config) -> Iterator[EmbeddedServer]:
    """One raxdb server for the session (for each pytest-xdist worker)."""
    from raxdb.embed import serve

    with serve(_config(pytestconfig), mode=_mode(pytestconfig)) as srv:
        yield srv


def _clean_slate(server: EmbeddedServer) -> None:
    """What an earlier test may have left on the session's server besides data: a fault still
    armed (a LOADING one would refuse even the FLUSHALL) and a moved clock.  Only where the test
    controls are on (a session started with `raxdb-test-controls no` has neither)."""
    if server.config.get("raxdb-test-controls") == "yes":
        server.clear_faults()
        server.reset_time()


@pytest.fixture(scope="session")
def raxdb_url(raxdb_server: EmbeddedServer) -> str:
    return raxdb_server.url


@pytest.fixture
def raxdb_client(raxdb_server: EmbeddedServer, pytestconfig: pytest.Config) -> Iterator[Any]:
    """redis.Redis on the session's server, every database flushed first."""
    _clean_slate(raxdb_server)
    client = _redis().Redis.from_url(raxdb_server.url, protocol=_protocol(pytestconfig))
    try:
        client.flushall()
        yield client
    finally:
        client.close()


if HAVE_PYTEST_ASYNCIO:
    @pytest_asyncio.fixture
    async def raxdb_async_client(raxdb_server: EmbeddedServer, pytestconfig: pytest.Config) -> Any:
        """redis.asyncio.Redis on the session's server, every database flushed first."""
        _clean_slate(raxdb_server)
        client = _redis().asyncio.Redis.from_url(raxdb_server.url, protocol=_protocol(pytestconfig))
        try:
            await client.flushall()
            yield client
        finally:
            await client.aclose()
else:  # pragma: no cover - depends on the environment
    @pytest.fixture
    def raxdb_async_client() -> Any:
        raise pytest.UsageError("the raxdb_async_client fixture needs pytest-asyncio: pip install pytest-asyncio")


@pytest.fixture
def raxdb_factory(pytestconfig: pytest.Config) -> Iterator[Callable[..., EmbeddedServer]]:
    """`raxdb_factory(config=None, **serve_options)`: a started server with the session's options
    and `config` over them; all stopped when the test ends."""
    from raxdb.embed import serve

    started: list[EmbeddedServer] = []
    base = _config(pytestconfig)
    mode = _mode(pytestconfig)

    def start(config: dict[str, Any] | None = None, **options: Any) -> EmbeddedServer:
        options.setdefault("mode", mode)
        srv = serve({**base, **(config or {})}, **options)
        started.append(srv)  # before start: a server that fails half-way is cleaned up too
        return srv.start()

    try:
        yield start
    finally:
        _stop_all(started)


def _stop_all(started: Sequence[EmbeddedServer | EmbeddedCluster]) -> None:
    """Stops the last started first (a replica before its master), every one even if one fails to."""
    errors = []
    for item in reversed(started):
        try:
            item.stop()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


# ---- clusters -------------------------------------------------------------------------------------
class _SessionCluster:
    """The session's cluster, started on first use, and again should a test leave it broken (a
    node stopped)."""

    def __init__(self, pytestconfig: pytest.Config) -> None:
        self._pytestconfig = pytestconfig
        self.cluster: EmbeddedCluster | None = None

    def get(self) -> EmbeddedCluster:
        from raxdb.embed import serve_cluster

        if self.cluster is None or not self.cluster.running:
            self.stop()
            self.cluster = serve_cluster(_cluster_masters(self._pytestconfig), 0, _config(self._pytestconfig),
                                         mode=_mode(self._pytestconfig)).start()
        return self.cluster

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


@pytest.fixture(scope="session")
def _raxdb_session_cluster(pytestconfig: pytest.Config) -> Iterator[_SessionCluster]:
    holder = _SessionCluster(pytestconfig)
    try:
        yield holder
    finally:
        holder.stop()


@pytest.fixture
def raxdb_cluster(_raxdb_session_cluster: _SessionCluster) -> EmbeddedCluster:
    """The session's cluster (3 masters unless raxdb_cluster_masters says otherwise), every
    master flushed first."""
    cluster = _raxdb_session_cluster.get()
    cluster.flush()
    return cluster


@pytest.fixture
def raxdb_cluster_client(raxdb_cluster: EmbeddedCluster, pytestconfig: pytest.Config) -> Iterator[Any]:
    """redis.cluster.RedisCluster on the session's cluster, flushed first."""
    client = _redis().cluster.RedisCluster(host=raxdb_cluster.host, port=raxdb_cluster.port,
                                           protocol=_protocol(pytestconfig))
    try:
        yield client
    finally:
        client.close()


if HAVE_PYTEST_ASYNCIO:
    @pytest_asyncio.fixture
    async def raxdb_async_cluster_client(raxdb_cluster: EmbeddedCluster, pytestconfig: pytest.Config) -> Any:
        """redis.asyncio.cluster.RedisCluster on the session's cluster, flushed first."""
        _redis()
        from redis.asyncio.cluster import RedisCluster

        client = RedisCluster(host=raxdb_cluster.host, port=raxdb_cluster.port, protocol=_protocol(pytestconfig))
        try:
            await client.initialize()
            yield client
        finally:
            await client.aclose()
else:  # pragma: no cover - depends on the environment
    @pytest.fixture
    def raxdb_async_cluster_client() -> Any:
        raise pytest.UsageError("the raxdb_async_cluster_client fixture needs pytest-asyncio: "
                                "pip install pytest-asyncio")


@pytest.fixture
def raxdb_cluster_factory(pytestconfig: pytest.Config) -> Iterator[Callable[..., EmbeddedCluster]]:
    """`raxdb_cluster_factory(masters=3, replicas=0, config=None, **serve_cluster_options)`: a
    started cluster with the session's options and `config` over them; all stopped when the test
    ends."""
    from raxdb.embed import serve_cluster

    started: list[EmbeddedCluster] = []
    base = _config(pytestconfig)
    mode = _mode(pytestconfig)

    def start(masters: int = 3, replicas: int = 0, config: dict[str, Any] | None = None,
              **options: Any) -> EmbeddedCluster:
        options.setdefault("mode", mode)
        cluster = serve_cluster(masters, replicas, {**base, **(config or {})}, **options)
        started.append(cluster)
        return cluster.start()

    try:
        yield start
    finally:
        _stop_all(started)


# ---- the clock ----------------------------------------------------------------------------------------
class ServerClock:
    """A server's clock as a test moves it (DEBUG CLOCK, through EmbeddedServer's time methods)."""

    def __init__(self, server: EmbeddedServer) -> None:
        self.server = server

    def advance(self, seconds: float) -> None:
        self.server.advance_time(seconds)

    def freeze(self) -> None:
        self.server.freeze_time()

    def unfreeze(self) -> None:
        self.server.unfreeze_time()

    def reset(self) -> None:
        self.server.reset_time()


@pytest.fixture
def raxdb_clock(raxdb_server: EmbeddedServer) -> Iterator[ServerClock]:
    """The session server's clock for one test: reset to the wall clock, unfrozen, after it."""
    clock = ServerClock(raxdb_server)
    try:
        yield clock
    finally:
        clock.reset()
