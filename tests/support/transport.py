"""A stand-in for an asyncio transport, for tests that drive a `Client` in process.

Rule: only what `Client` calls on its transport (write, writelines, get_extra_info,
get_write_buffer_size, close); a test that records writes overrides `write`.  No sockets, no loop."""

from __future__ import annotations


class SinkTransport:
    """Takes every write and drops it; a loopback peer."""

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, parts: list[bytes]) -> None:
        pass

    def get_extra_info(self, name: str, default=None):  # noqa: ANN001
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass
