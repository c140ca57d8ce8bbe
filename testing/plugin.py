"""The raxdb pytest plugin: real raxdb servers as fixtures (loaded through the `pytest11` entry point).

Fixtures (all named raxdb_*, so they cannot collide with a project's own):
- `raxdb_server` (session): one server per test session, so one per pytest-xdist worker (each
  worker is a session of its own process); a raxdb.embed.EmbeddedServer (`.host`, `.port`, `.url`).
- `raxdb_url` (session): its `redis://host:port/0`.
- `raxdb_client`: a redis-py client on it, the server flushed (FLUSHALL) before the test.
- `raxdb_async_client`: the same with redis.asyncio; a pytest-asyncio fixture, so it needs
  pytest-asyncio (anyio's pytest plugin alone does not run it).
- `raxdb_factory`: `raxdb_factory(config={...}, **serve_options)` starts more servers, e.g. a
  replica of `raxdb_server`; each is stopped at the end of the test.
- `raxdb_clock`: the clock of `raxdb_server` (`.advance(seconds)`, `.freeze()`, `.unfreeze()`,
  `.reset()`), put back on the wall clock, unfrozen, when the test ends.

Options, the command line winning over the ini file: `--raxdb-config KEY=VALUE` (repeatable) /
ini `raxdb_config` (one KEY=VALUE a line) for the servers' redis.conf options, `--raxdb-protocol
2|3` / ini `raxdb_protocol` for the clients' RESP version (default 2), and `--raxdb-mode process|
thread` / ini `raxdb_mode` (default process, raxdb/embed/api.py says why).

Rule: fixtures and options only; servers are started by raxdb.serve() (raxdb/embed/), never here.
Invariants: importing this module imports neither redis-py nor the server (pytest loads it in
every session of every project where raxdb is installed); redis-py is imported by the fixtures
that need it, with a clear error when it is missing; every server a fixture starts is stopped by
that fixture's teardown, a failing test's included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from raxdb.embed import EmbeddedServer
    from raxdb.embed.api import Mode

try:  # the async client fixture is pytest-asyncio's; without it, the fixture says what is missing
    import pytest_asyncio
except ImportError:  # pragma: no cover - depends on the environment
    pytest_asyncio = None


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


def pytest_configure(config: pytest.Config) -> None:
    """Bad options stop the run before any test, as pytest's own usage errors do."""
    _config(config)
    _protocol(config)
    _mode(config)


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


@pytest.fixture(scope="session")
def raxdb_url(raxdb_server: EmbeddedServer) -> str:
    return raxdb_server.url


@pytest.fixture
def raxdb_client(raxdb_server: EmbeddedServer, pytestconfig: pytest.Config) -> Iterator[Any]:
    """redis.Redis on the session's server, every database flushed first."""
    client = _redis().Redis.from_url(raxdb_server.url, protocol=_protocol(pytestconfig))
    try:
        client.flushall()
        yield client
    finally:
        client.close()


if pytest_asyncio is not None:
    @pytest_asyncio.fixture
    async def raxdb_async_client(raxdb_server: EmbeddedServer, pytestconfig: pytest.Config) -> Any:
        """redis.asyncio.Redis on the session's server, every database flushed first."""
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
        errors = []
        for srv in reversed(started):  # replicas, started last, before their masters
            try:
                srv.stop()
            except Exception as exc:  # every server is stopped even if one fails to
                errors.append(exc)
        if errors:
            raise errors[0]


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
