"""Differences from Redis 7.0 found by running client libraries (tests/libraries/) against raxdb,
each reduced to a minimal differential test.

How they are found: the job-queue tests' traffic against redis-server is captured with MONITOR and
replayed, command by command, against raxdb and a fresh redis-server; any reply that differs (other
than time-derived stream IDs) is pinned down here.
"""

from __future__ import annotations

import time

import pytest

from tests.support.diff import RawConnection, encode_command


# Dramatiq's Redis result backend waits for a result with BRPOPLPUSH; on a timeout Redis 7.0 replies
# with a null ARRAY (RESP2 *-1), as for the blocking pops, while raxdb replied with a null bulk ($-1).
# redis-py maps both to None, which is why no library noticed.
@pytest.mark.parametrize("cmd", [["BRPOPLPUSH", "src", "dst", "0.01"],
                                 ["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0.01"],
                                 ["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0.01"]])
def test_blocking_move_timeout_is_null_array(diff, cmd):
    diff(*cmd)
    diff("EXISTS", "src", "dst")


def test_blocking_move_in_multi_and_script_is_null_bulk(diff):
    # the non-blocking paths keep the null bulk
    diff.script("""
        MULTI
        BRPOPLPUSH src dst 0
        BLMOVE src dst LEFT LEFT 0
        EXEC
    """)
    diff("EVAL", "return {redis.pcall('brpoplpush', 'src', 'dst', '0') == false}", "0")


def _blocked_clients(admin: RawConnection) -> int:
    for line in admin.call("INFO", "clients").decode().split("\r\n"):
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("no blocked_clients in INFO")


def _await_blocked_clients(admin: RawConnection, count: int) -> None:
    """Wait for the server's word (INFO blocked_clients, polled) that `count` clients are blocked."""
    for _ in range(2000):
        if _blocked_clients(admin) == count:
            return
        time.sleep(0.002)
    raise AssertionError(f"blocked_clients never reached {count}")


@pytest.mark.parametrize("cmd", [["BRPOPLPUSH", "src", "dst", "0"], ["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]])
@pytest.mark.parametrize("protocol", [2, 3])
def test_blocking_move_client_unblock_timeout(raxdb, oracle, cmd, protocol):
    """CLIENT UNBLOCK <id> TIMEOUT ends the wait as a timeout does: the same null array."""
    replies = []
    for port in (raxdb.port, oracle.port):
        admin, waiter = RawConnection(port), RawConnection(port)
        try:
            admin.call("DEL", "src", "dst")
            if protocol == 3:
                waiter.call("HELLO", "3")
            client_id = waiter.call("CLIENT", "ID")
            before = _blocked_clients(admin)
            waiter.send(encode_command(cmd))
            _await_blocked_clients(admin, before + 1)
            assert admin.call("CLIENT", "UNBLOCK", client_id[1:-2].decode(), "TIMEOUT") == b":1\r\n"
            replies.append(waiter.read_frame())
        finally:
            admin.close()
            waiter.close()
    assert replies[0] == replies[1], replies
    assert replies[0] == (b"*-1\r\n" if protocol == 2 else b"_\r\n")


def test_paused_command_runs_once_when_an_inline_command_follows(raxdb, oracle):
    """A command held by CLIENT PAUSE WRITE runs once on UNPAUSE.  raxdb kept the held command's
    request as a partial one after running it, so an inline command that followed (which moves the
    connection to the exact parser) ran the held INCR a second time.  Redis 7.0 also counts the held
    client in INFO's blocked_clients, which is how the test knows the command is held."""
    for port in (raxdb.port, oracle.port):
        admin, held = RawConnection(port), RawConnection(port)
        try:
            admin.call("DEL", "counter")
            before = _blocked_clients(admin)
            assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
            held.send(encode_command(["INCR", "counter"]))
            _await_blocked_clients(admin, before + 1)
            assert admin.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
            assert held.read_frame() == b":1\r\n"
            assert _blocked_clients(admin) == before
            held.send(b"GET counter\r\n")
            assert held.read_frame() == b"$1\r\n1\r\n", port
            assert held.call("PING") == b"+PONG\r\n"
        finally:
            admin.call("CLIENT", "UNPAUSE")
            admin.close()
            held.close()


def test_protected_mode_admits_only_127_0_0_1_and_the_ipv6_loopback(raxdb, oracle):
    """Protected mode (no password, no bind given) lets in 127.0.0.1 and ::1 only, as Redis's
    islocalClient compares the peer's address: another 127/8 address is refused with DENIED."""
    import socket

    replies = []
    for srv in (raxdb, oracle):
        for source in ("127.0.0.2", "127.0.0.1"):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10, source_address=(source, 0))
            try:
                s.sendall(encode_command(["PING"]))
                data = b""
                while not data.endswith(b"\r\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                replies.append(data)
            finally:
                s.close()
    assert replies[0].startswith(b"-DENIED Redis is running in protected mode")
    assert replies[1] == b"+PONG\r\n"
    assert replies[:2] == replies[2:]
