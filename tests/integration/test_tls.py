"""TLS for clients (issue #35, first slice): the tls-* options, the listener on tls-port, client
certificates, a context rebuilt by CONFIG SET, bad input at the handshake and at start-up.

Certificates are made by the test with the openssl command (tests/support/tlscerts.py).
Wherever Redis's behaviour is the reference, the same scenario runs against redis-server 7.0 and
the results are compared.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.servers import ROOT, ServerProcess, free_port, redis_binary, start_raxdb, start_redis
from tests.support.tlscerts import HAVE_TOOLS, Certs, cli, client, make_certs, tls_args

pytestmark = pytest.mark.skipif(not HAVE_TOOLS, reason="needs the openssl command and redis-cli")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tls"))


def start_both(c: Certs, *extra: str) -> Iterator[tuple[str, ServerProcess, int]]:
    """raxdb, then redis-server, each with a TLS port beside its TCP one: (name, server, tls port)."""
    for name, start in (("raxdb", start_raxdb), ("redis", start_redis)):
        port = free_port()
        srv = start(*tls_args(c, port, *extra))
        try:
            yield name, srv, port
        finally:
            srv.stop()


def on_both(c: Certs, scenario: Callable[[ServerProcess, int], Any], *extra: str) -> tuple[Any, Any]:
    results = [scenario(srv, port) for _name, srv, port in start_both(c, *extra)]
    return results[0], results[1]


def test_config_get_tls_matches_redis(certs: Certs) -> None:
    def scenario(_srv: ServerProcess, port: int) -> dict[str, str]:
        r = client(certs, port, decode_responses=True)
        got = r.config_get("tls-*")
        got.pop("tls-port")  # a free port each
        return got

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs


def test_redis_cli_side_by_side(certs: Certs) -> None:
    commands = [["PING"], ["SET", "k", "v"], ["GET", "k"], ["INCR", "n"], ["RPUSH", "l", "a", "b"],
                ["LRANGE", "l", "0", "-1"], ["CONFIG", "GET", "tls-auth-clients"], ["CONFIG", "SET", "tls-auth-clients",
                                                                                     "maybe"]]

    def scenario(_srv: ServerProcess, port: int) -> list[str]:
        return [cli(certs, port, *cmd) for cmd in commands]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours[0] == "PONG\n"


def test_tls_auth_clients(certs: Certs) -> None:
    """yes (the default) refuses a client without a certificate and one the CA did not sign;
    optional accepts the first and still refuses the second; no asks for none."""
    def scenario(_srv: ServerProcess, port: int) -> list[str]:
        outcome = []
        for mode in ("yes", "optional", "no"):
            admin = client(certs, port)
            admin.config_set("tls-auth-clients", mode)
            for cert in (None, "stranger", "client"):
                try:
                    outcome.append(f"{mode} {cert}: {client(certs, port, cert=cert).ping()}")
                except redis.ConnectionError:
                    outcome.append(f"{mode} {cert}: refused")
            admin.config_set("tls-auth-clients", "yes")
        return outcome

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert "yes None: refused" in ours and "optional None: True" in ours and "optional stranger: refused" in ours
    assert "no stranger: True" in ours


def test_plain_client_on_tls_port_is_dropped(certs: Certs) -> None:
    port = free_port()
    srv = start_raxdb(*tls_args(certs, port))
    try:
        r = client(certs, port)
        r.set("k", "before")
        with socket.create_connection(("127.0.0.1", port), timeout=20) as plain:
            plain.sendall(b"*1\r\n$4\r\nPING\r\n")
            assert plain.recv(100) == b""  # closed, no reply
        assert r.get("k") == b"before"  # the TLS client is still served
        assert client(certs, port).ping()
        assert srv.proc.poll() is None
    finally:
        srv.stop()


def test_clients_over_tls_are_clients(certs: Certs) -> None:
    """CLIENT LIST, INFO and the ACL/AUTH flow as over TCP."""
    def scenario(srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port, decode_responses=True)
        r.acl_setuser("alice", enabled=True, passwords=["+secret"], commands=["+ping", "+client"], keys=[])
        u = client(certs, port, decode_responses=True, username="alice", password="secret")
        listed = u.client_list()
        bad = client(certs, port, username="alice", password="wrong")
        try:
            bad.ping()
            auth = "accepted"
        except redis.AuthenticationError as exc:
            auth = str(exc)
        return [u.ping(), sorted(c["user"] for c in listed), {c["laddr"] for c in listed} == {f"127.0.0.1:{port}"},
                r.info("server")["tcp_port"] == srv.port, auth]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs


def test_big_replies_over_tls_arrive_whole(certs: Certs) -> None:
    """Pipelined big replies (handed to the TLS transport in pieces, unjoined) arrive whole and in
    order, small ones between them."""
    port = free_port()
    srv = start_raxdb(*tls_args(certs, port))
    try:
        r = client(certs, port)
        values = [bytes([97 + i]) * n for i, n in enumerate((100_000, 10_240, 5, 300_000))]
        for i, v in enumerate(values):
            r.set(f"v{i}", v)
        p = r.pipeline(transaction=False)
        for i in range(12):
            p.get(f"v{i % len(values)}")
        p.ping()
        assert p.execute() == [values[i % len(values)] for i in range(12)] + [True]
    finally:
        srv.stop()


def test_tls_only_with_port_0(certs: Certs) -> None:
    def scenario(start: Callable[..., ServerProcess]) -> list[Any]:
        port = free_port()
        srv = start(*tls_args(certs, port), "--port", "0")
        try:
            r = client(certs, port, decode_responses=True)
            return [r.ping(), r.config_get("port"), r.info("server")["tcp_port"] == port]
        finally:
            srv.stop()

    assert scenario(start_raxdb) == scenario(start_redis) == [True, {"port": "0"}, True]


def _peer_cn(certs: Certs, port: int) -> str:
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    ctx.load_cert_chain(certs["client_crt"], certs["client_key"])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        subject = dict(item[0] for item in s.getpeercert()["subject"])  # type: ignore[index]
        return str(subject["commonName"])


def test_config_set_certificate_for_new_connections(certs: Certs) -> None:
    def scenario(_srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port)
        before = _peer_cn(certs, port)
        ok = r.config_set("tls-cert-file", certs["server2_crt"], "tls-key-file", certs["server2_key"])
        return [before, ok, _peer_cn(certs, port), r.ping()]  # the old connection still works

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs == ["server", True, "server2", True]


def test_config_set_bad_files_refused(certs: Certs) -> None:
    def scenario(srv: ServerProcess, port: int) -> list[str]:
        r = client(certs, port)
        errors = []
        for pairs in (("tls-cert-file", "/nonexistent.crt"), ("tls-key-file", certs["bad_key"]),
                      ("tls-key-file", certs["client_key"]), ("tls-protocols", "TLSv9"),
                      ("tls-ciphers", "NO-SUCH-CIPHER"), ("tls-ca-cert-file", "/nonexistent.crt")):
            try:
                r.config_set(*pairs)
                errors.append("OK")
            except redis.ResponseError as exc:
                errors.append(str(exc))
        assert srv.wait_log("Failed to load private key: " + certs["client_key"])
        assert srv.wait_log("Failed applying new configuration. Possibly related to new tls-ciphers setting.")
        errors.append(str(sorted(r.config_get("tls-cert-file", "tls-key-file").items())))
        r.config_set("tls-protocols", "TLSv1.3")
        errors.append(str(client(certs, port).ping()))
        return errors

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs


def _startup_failure(argv: list[str], cwd: str) -> tuple[int, list[str]]:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    lines = [line.split(" # ", 1)[1] for line in proc.stdout.splitlines() if " # " in line]
    # OpenSSL's reason text (and its error code) differ between the ssl module and Redis's build
    reason = re.compile(r": (error:[0-9A-F]+:)?[^:]*(library|routines)::.*$")
    return proc.returncode, [reason.sub("", line) for line in lines if "TLS" in line or "Failed" in line]


@pytest.mark.parametrize("case", ["bad-key", "no-cert", "mismatch", "no-ca"])
def test_bad_configuration_stops_startup(certs: Certs, case: str, tmp_path: Path) -> None:
    port = str(free_port())
    args = {"bad-key": ["--tls-cert-file", certs["server_crt"], "--tls-key-file", certs["bad_key"],
                        "--tls-ca-cert-file", certs["ca_crt"]],
            "no-cert": ["--tls-cert-file", str(tmp_path / "none.crt"), "--tls-key-file", certs["server_key"],
                        "--tls-ca-cert-file", certs["ca_crt"]],
            "mismatch": ["--tls-cert-file", certs["server_crt"], "--tls-key-file", certs["client_key"],
                         "--tls-ca-cert-file", certs["ca_crt"]],
            "no-ca": ["--tls-cert-file", certs["server_crt"], "--tls-key-file", certs["server_key"]]}[case]
    common = ["--port", "0", "--tls-port", port, "--save", ""]
    binary = redis_binary()
    assert binary is not None
    ours = _startup_failure([sys.executable, "-m", "raxdb.server", *common, *args], str(tmp_path))
    theirs = _startup_failure([binary, *common, *args], str(tmp_path))
    assert ours == theirs
    assert ours[0] == 1 and ours[1][-1] == "Failed to configure TLS. Check logs for more info."


def test_config_set_tls_port(certs: Certs) -> None:
    """tls-port set at run time opens the TLS listener (the context built then), 0 closes it."""
    srv = start_raxdb("--tls-cert-file", certs["server_crt"], "--tls-key-file", certs["server_key"],
                      "--tls-ca-cert-file", certs["ca_crt"])
    try:
        plain = redis.Redis(port=srv.port)
        port = free_port()
        assert plain.config_set("tls-port", str(port))
        assert client(certs, port).ping()
        assert plain.config_set("tls-port", "0")
        with pytest.raises(redis.ConnectionError):
            client(certs, port).ping()
        assert plain.ping()
    finally:
        srv.stop()


def test_expired_client_certificate_refused(certs: Certs) -> None:
    """A certificate the CA signed but that has expired is refused as an untrusted one is, and
    accepted once tls-auth-clients is no (the certificate is then not asked for)."""
    def scenario(_srv: ServerProcess, port: int) -> list[str]:
        outcome = []
        for mode in ("yes", "optional", "no"):
            client(certs, port).config_set("tls-auth-clients", mode)
            try:
                outcome.append(f"{mode}: {client(certs, port, cert='expired').ping()}")
            except redis.ConnectionError:
                outcome.append(f"{mode}: refused")
        return outcome

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs == ["yes: refused", "optional: refused", "no: True"]


def _fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


async def _tls_pings(certs: Certs, port: int, n: int) -> list[bytes]:
    """`n` TLS connections opened at once, each sending PING: the replies (b"" for a failure)."""
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    ctx.load_cert_chain(certs["client_crt"], certs["client_key"])

    async def one() -> bytes:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        except OSError:
            return b""
        try:
            writer.write(b"PING\r\n")
            return await reader.readline()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    return list(await asyncio.gather(*(one() for _ in range(n))))


def _connected(r: redis.Redis) -> int:
    return int(r.info("clients")["connected_clients"])


def _wait_connected(r: redis.Redis, n: int) -> None:
    deadline = time.monotonic() + 60
    while _connected(r) != n:
        assert time.monotonic() < deadline, f"connected_clients stays at {_connected(r)}, not {n}"
        time.sleep(0.05)


def test_bad_handshakes_and_a_crowd_leak_nothing(certs: Certs) -> None:
    """A plain-RESP client, handshakes cut halfway (after the ClientHello's first bytes, and after
    the whole ClientHello), and 500 TLS clients at once: each is served or dropped as Redis does,
    the TLS client already connected keeps being served, and the server's file descriptors come
    back to their count before."""
    hello = _client_hello(certs)

    def scenario(srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port)
        r.set("k", "before")
        asyncio.run(_tls_pings(certs, port, 10))  # the loop's own descriptors opened once
        _wait_connected(r, 1)
        fds = _fds(srv.proc.pid)
        out: list[Any] = []
        with socket.create_connection(("127.0.0.1", port), timeout=20) as plain:
            plain.sendall(b"*1\r\n$4\r\nPING\r\n")
            try:  # closed without a RESP reply (reset when the close left our bytes unread)
                out.append(plain.recv(100))
            except ConnectionResetError:
                out.append(b"")
        for cut in (hello[:20], hello):
            with socket.create_connection(("127.0.0.1", port), timeout=20) as half:
                half.sendall(cut)
                out.append(r.get("k"))  # served while the handshake hangs
        replies = asyncio.run(_tls_pings(certs, port, 500))
        out.append(sorted(set(replies)))
        out.append(replies.count(b"+PONG\r\n"))
        _wait_connected(r, 1)
        out.append(r.get("k"))
        out.append(_fds(srv.proc.pid) - fds)
        out.append(srv.proc.poll())
        return out

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours[-4:] == [500, b"before", 0, None]


def _handshake_by_hand(ctx: ssl.SSLContext, sock: socket.socket) -> tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO]:
    """A client SSLObject between two MemoryBIOs, its handshake done over the plain `sock`; its
    last flight is left in the outgoing BIO, for the caller to send (alone or with more)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    while True:
        try:
            tls.do_handshake()
            return tls, incoming, outgoing
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
            incoming.write(sock.recv(65536))

def test_clean_tls_close_ends_the_connection(certs: Certs) -> None:
    """A client that ends with TLS's close_notify (what an asyncio or OpenSSL client sends on a
    clean close): its commands before it are answered, then the server closes the connection, as
    Redis does on its read of 0, instead of holding it open until the client gives up."""
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    ctx.load_cert_chain(certs["client_crt"], certs["client_key"])

    def scenario(_srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port)
        _wait_connected(r, 1)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            tls, incoming, outgoing = _handshake_by_hand(ctx, sock)
            sock.sendall(outgoing.read())
            tls.write(b"PING\r\n")
            with contextlib.suppress(ssl.SSLWantReadError):
                tls.unwrap()  # close_notify after the PING, in the same flight
            sock.sendall(outgoing.read())
            got = b""
            while True:  # until the server's EOF (a timeout here is the bug)
                data = sock.recv(65536)
                if not data:
                    break
                got += data
            incoming.write(got)
            reply = b""
            with contextlib.suppress(ssl.SSLError):  # whether a close_notify follows is the server's affair
                while chunk := tls.read(1024):
                    reply += chunk
        _wait_connected(r, 1)
        return [reply, r.ping()]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours == [b"+PONG\r\n", True]


def test_records_cut_anywhere_and_run_together_match_redis(certs: Certs) -> None:
    """The client's Finished, then a pipeline's records (each command a record of its own, a
    100 KB SET spread over seven), all sent as one stream cut at odd places (a byte, a record and a
    half, a record's header split): the server reads partial records, several records a read, and
    a record whose start it took in a read before; the replies are Redis's, in order."""
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    ctx.load_cert_chain(certs["client_crt"], certs["client_key"])
    big = b"v" * 100_000
    commands = [[b"SET", b"big", big], [b"GET", b"big"], [b"INCR", b"n"], [b"STRLEN", b"big"],
                *[[b"RPUSH", b"l", b"%d" % i] for i in range(40)], [b"LRANGE", b"l", b"0", b"-1"],
                [b"GET", b"big"], [b"ECHO", b"the end"]]
    end = b"$7\r\nthe end\r\n"

    def scenario(_srv: ServerProcess, port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls, incoming, outgoing = _handshake_by_hand(ctx, sock)  # its last flight goes with the requests
            for cmd in commands:
                tls.write(b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd))
            stream = outgoing.read()
            pos, cuts = 0, (1, 2, 5, 3, 37, 16_389, 1, 1_500, 4, 700)
            for i in itertools.count():
                if pos >= len(stream):
                    break
                sock.sendall(stream[pos:pos + cuts[i % len(cuts)]])
                pos += cuts[i % len(cuts)]
            reply = b""
            while not reply.endswith(end):
                data = sock.recv(65536)
                assert data, reply[-200:]
                incoming.write(data)
                with contextlib.suppress(ssl.SSLWantReadError):
                    while chunk := tls.read(65536):
                        reply += chunk
        return reply

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours.startswith(b"+OK\r\n$100000\r\n" + big) and ours.count(big) == 2


def _client_hello(certs: Certs) -> bytes:
    """The first flight of a TLS client (its ClientHello), as sent on the wire."""
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_client_info_over_tls_matches_redis(certs: Certs) -> None:
    """CLIENT INFO of a TLS client: the same fields with the same values (those that do not vary
    by run: its address, age, buffers) as Redis's; INFO's sections list the same fields."""
    def scenario(_srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port, decode_responses=True)
        r.client_setname("tls-one")
        line = r.execute_command("CLIENT", "INFO")
        info = dict(f.split("=", 1) for f in line.split())
        kept = {k: v for k, v in info.items() if k in ("name", "flags", "db", "sub", "psub", "ssub", "multi", "cmd",
                                                       "user", "redir", "resp", "laddr")}
        sections = {name: sorted(r.info(name)) for name in ("server", "clients", "stats")}
        # lib-name and lib-ver: redis-py's CLIENT SETINFO, which compat-version 7.2 has and 7.0 refuses
        return [[f for f in info if not f.startswith("lib-")], kept, sections["clients"], sections["stats"]]

    ours, theirs = on_both(certs, scenario)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1] | {"laddr": ours[1]["laddr"]}
    assert ours[2:] == theirs[2:]


def test_prefer_server_ciphers(certs: Certs) -> None:
    """TLSv1.2 with two ciphers in opposite orders: the client's choice wins unless
    tls-prefer-server-ciphers is yes (OpenSSL's default, which the ssl module alone would flip)."""
    def negotiated(port: int) -> str:
        ctx = ssl.create_default_context(cafile=certs["ca_crt"])
        ctx.load_cert_chain(certs["client_crt"], certs["client_key"])
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers("AES256-SHA256:AES128-SHA256")
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.cipher()[0]  # type: ignore[index]

    def scenario(_srv: ServerProcess, port: int) -> list[str]:
        r = client(certs, port)
        r.config_set("tls-protocols", "TLSv1.2")
        r.config_set("tls-ciphers", "AES128-SHA256:AES256-SHA256")
        chosen = [negotiated(port)]
        r.config_set("tls-prefer-server-ciphers", "yes")
        return [*chosen, negotiated(port)]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs == ["AES256-SHA256", "AES128-SHA256"]


def test_killed_and_quitting_tls_clients_leave_at_once(certs: Certs) -> None:
    """CLIENT KILL and QUIT free a TLS client at once, as over TCP (a TLS close waits for the
    peer's close_notify; the client list must not)."""
    def scenario(_srv: ServerProcess, port: int) -> list[Any]:
        r = client(certs, port)
        others = [client(certs, port) for _ in range(3)]
        for o in others:
            o.ping()
        before = _connected(r)
        killed = r.client_kill_filter(skipme=True)
        after_kill = _connected(r)
        ctx = ssl.create_default_context(cafile=certs["ca_crt"])
        ctx.load_cert_chain(certs["client_crt"], certs["client_key"])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"PING\r\nQUIT\r\n")
            got = b""
            while not got.endswith(b"+OK\r\n"):
                got += s.recv(100)
            after_quit = _connected(r)
        return [before, killed, after_kill, got, after_quit, r.ping()]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs == [4, 3, 1, b"+PONG\r\n+OK\r\n", 1, True]


def test_redis_cli_without_a_client_certificate(certs: Certs) -> None:
    """redis-cli --tls with no certificate: refused while tls-auth-clients is yes, served once it is
    optional or no."""
    def scenario(_srv: ServerProcess, port: int) -> list[str]:
        admin = client(certs, port)
        out = []
        for mode in ("yes", "optional", "no"):
            admin.config_set("tls-auth-clients", mode)
            out.append(f"{mode}: {cli(certs, port, 'PING', cert=False).strip() or '(refused)'}")
        return out

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours[1:] == ["optional: PONG", "no: PONG"] and "PONG" not in ours[0]


def _line(s: ssl.SSLSocket) -> bytes:
    got = b""
    while not got.endswith(b"\r\n"):
        chunk = s.recv(200)
        assert chunk, got
        got += chunk
    return got


def test_tls_client_during_a_busy_script_matches_redis(certs: Certs) -> None:
    """While a script is busy, a TLS client is served from the script's hook as a plain one is:
    it gets -BUSY, and its SCRIPT KILL stops the script (the TLS layer is raxdb's own, so the
    busy poll reads its socket and decrypts)."""
    ctx = ssl.create_default_context(cafile=certs["ca_crt"])
    ctx.load_cert_chain(certs["client_crt"], certs["client_key"])

    def scenario(srv: ServerProcess, port: int) -> list[bytes]:
        redis.Redis(port=srv.port).set("k", "v")
        replies: list[bytes] = []
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s, \
                socket.create_connection(("127.0.0.1", srv.port), timeout=20) as looping:
            s.sendall(b"EXISTS k\r\n")
            replies.append(_line(s))
            looping.sendall(b"*3\r\n$4\r\nEVAL\r\n$17\r\nwhile true do end\r\n$1\r\n0\r\n")
            deadline = time.monotonic() + 30
            while True:  # over TLS, the script is busy once a PING gets -BUSY
                s.sendall(b"PING\r\n")
                got = _line(s)
                if got.startswith(b"-BUSY"):
                    replies.append(got)
                    break
                assert got == b"+PONG\r\n" and time.monotonic() < deadline
                time.sleep(0.01)
            s.sendall(b"SCRIPT KILL\r\n")
            replies.append(_line(s))
            replies.append(_line(looping))  # type: ignore[arg-type]
            s.sendall(b"PING\r\n")
            replies.append(_line(s))
        assert srv.proc.poll() is None
        return replies

    ours, theirs = on_both(certs, scenario, "--busy-reply-threshold", "10")
    assert ours == theirs
    assert ours[1].startswith(b"-BUSY") and ours[2] == b"+OK\r\n" and ours[4] == b"+PONG\r\n"


def test_failed_handshake_is_logged_as_redis_logs_it(certs: Certs) -> None:
    """A plain-text client, a client without the certificate tls-auth-clients asks for and one that
    leaves halfway: each is dropped with Redis's "Error accepting a client connection" line."""
    no_cert = ssl.create_default_context(cafile=certs["ca_crt"])

    def scenario(srv: ServerProcess, port: int) -> list[str]:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as plain:
            plain.sendall(b"*1\r\n$4\r\nPING\r\n")
            with contextlib.suppress(ConnectionResetError):
                assert plain.recv(100) == b""
        assert srv.wait_log("Error accepting a client connection: ")
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
                no_cert.wrap_socket(raw, server_hostname="127.0.0.1") as s, \
                contextlib.suppress(ssl.SSLError, ConnectionResetError):
            s.sendall(b"PING\r\n")
            s.recv(100)
        assert srv.wait_log("did not return a certificate")
        socket.create_connection(("127.0.0.1", port), timeout=20).close()
        assert srv.wait_log("unexpected eof")
        lines = [line.split("# ", 1)[1].strip() for line in srv.log if "Error accepting" in line]
        # Redis adds " (conn: fd=N)" when the handshake fails within the accept itself, which
        # depends on whether the client's bytes had arrived by then
        return [re.sub(r" \(conn: [^)]*\)$", "", line) for line in lines]

    ours, theirs = on_both(certs, scenario)
    assert ours == theirs
    assert ours[0] == "Error accepting a client connection: error:0A00010B:SSL routines::wrong version number"
