"""TLS: the SSLContexts built from the `tls-*` options, and the listener on `tls-port`.

Rule: what TLS adds to a connection lives here and nowhere else.  The server (core) binds the
tls-port sockets exactly as it binds `port`'s and hands them to `serve`; a client accepted here
is a plain Client once its handshake is done, so the command path has no TLS check at all.  The
connections this server opens where Redis opens them with connCreateTLS (a replica's link with
tls-replication yes, MIGRATE's and the cluster bus's with tls-cluster yes: server/cluster/bustls.py)
take `srv.tls_client_context`.

Invariants:
- `srv.tls_context` (and `srv.tls_client_context` beside it) is None until TLS is wanted
  (tls-port set, or tls-replication / tls-cluster yes: Redis's tlsConfigure condition) and from
  then on the context of the current options; a CONFIG SET that changes them builds new ones, and
  only good ones replace the old (new connections use them, connections already open keep
  theirs), as Redis's tlsConfigure does.
- Building follows tlsConfigure's order and log wording: the first problem is logged at warning
  level and the build fails; start-up then logs "Failed to configure TLS. Check logs for more
  info." and exits 1, CONFIG SET answers "Unable to update TLS configuration. Check server logs.".
- The listeners accept plain TCP connections; raxdb's own TLS layer (`Link`: an ssl.SSLObject
  between two ssl.MemoryBIO) does the handshake with the context current at the accept, then
  decrypts what arrives into the Client's data_received and encrypts what the Client writes.  A
  Client exists once the handshake is done; a failed handshake is logged as Redis logs it ("Error
  accepting a client connection: <OpenSSL error>") and the connection dropped, nothing of it left.
  Because the layer is ours, a busy script's poll (server/scripting/busy.py) reads a TLS client's
  socket like any other and passes the bytes through `Link.feed`.

A record's way in and out, which every request over TLS pays (Redis's connTLSRead and
connTLSWrite: one SSL_read into the query buffer, one SSL_write of the reply):
- In: the bytes read go into the incoming BIO, then SSLObject.read is called while the BIO holds
  bytes (or OpenSSL holds decrypted ones: SSLObject.pending), each read sized to what the BIO
  holds, which a record's plaintext never exceeds unless OpenSSL took the record's start in an
  earlier read (then the rest comes with the next read of the loop).  No read is made to learn
  that there is nothing more: the ssl module answers such a read with an SSLWantReadError, whose
  making and raising cost more than the read of the request itself.  A partial record still
  ends the loop that way.  The reads' plaintext goes to the Client as one bytes (the first read's,
  not copied, when there is one).
- Out: a write (client.flush_output's one write a flush) is one SSLObject.write of the whole
  reply (a memory BIO takes all of it) and one write of the outgoing BIO's records to the TCP
  transport.
- Compiled (server/base/compiled.py's HOT_MODULES), as the Client behind it is.

What the ssl module cannot set is accepted and stored but not applied: tls-ciphersuites (the
TLSv1.3 suites: OpenSSL's defaults are used), tls-session-cache-size and -timeout (OpenSSL's
defaults, 20480 and 300 s, are Redis's defaults too).
"""

from __future__ import annotations

import _ssl
import asyncio
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from raxdb.server.base.lazyre import LazyPattern
from raxdb.server.base.log import LOG
from raxdb.server.config.options import ConfigError
from raxdb.server.net.accept import Acceptor
from raxdb.server.net.client import Client

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

UPDATE_FAILED = "Unable to update TLS configuration. Check server logs."

# the options a context is built from: changing one at run time rebuilds it
CONTEXT_OPTIONS = ("tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file",
                   "tls-ca-cert-dir", "tls-auth-clients", "tls-client-cert-file", "tls-client-key-file",
                   "tls-client-key-file-pass", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
                   "tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size",
                   "tls-session-cache-timeout", "tls-replication", "tls-cluster")

_VERIFY = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "no": ssl.CERT_NONE}
_PROTOCOLS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1, "tlsv1.2": ssl.TLSVersion.TLSv1_2,
              "tlsv1.3": ssl.TLSVersion.TLSv1_3}
_DEFAULT_PROTOCOLS = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)  # REDIS_TLS_PROTO_DEFAULT
# "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)": the reason text in the middle
_SSL_TEXT = LazyPattern(r"^\[[^\]]*\]\s*(.*?)(?:\s*\(_ssl\.c:\d+\))?$")
_join = b"".join



class BuildFailed(Exception):
    """The context could not be built; the reason has been logged."""


def wanted(values: dict[str, str]) -> bool:
    """Does the server need a context (tlsConfigure is called at start-up)?"""
    return values["tls-port"] != "0" or values["tls-replication"] == "yes" or values["tls-cluster"] == "yes"


def describe(exc: BaseException) -> str:
    """An OpenSSL-like "<library> routines::<reason>" for an ssl error, strerror for a system one."""
    if isinstance(exc, ssl.SSLError):
        text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        m = _SSL_TEXT.match(text)
        reason = m.group(1) if m else text
        return f"{exc.library} routines::{reason}" if exc.library else reason
    if isinstance(exc, OSError) and exc.strerror:
        return f"system library::{exc.strerror}"
    return str(exc) or type(exc).__name__


def _fail(msg: str) -> BuildFailed:
    LOG.warning(msg)
    return BuildFailed(msg)


def _protocol_range(spec: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """tls-protocols ("TLSv1.2 TLSv1.3", any case) as the lowest and highest version allowed."""
    if not spec.strip():
        return _DEFAULT_PROTOCOLS
    given = [_PROTOCOLS.get(word.lower()) for word in spec.split()]
    versions = [v for v in given if v is not None]
    if len(versions) < len(given):
        raise _fail("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and "
                    "'TLSv1.3'.")
    return min(versions), max(versions)


def _context(values: dict[str, str], server_side: bool, cert: str, key: str, password: str) -> ssl.SSLContext:
    """createSSLContext: one context of the options, with the certificate `cert` and its key."""
    ca_file, ca_dir = values["tls-ca-cert-file"], values["tls-ca-cert-dir"]
    lowest, highest = _protocol_range(values["tls-protocols"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side else ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.minimum_version, ctx.maximum_version = lowest, highest
    except ValueError as exc:  # a version this OpenSSL no longer offers
        raise _fail(f"Failed to configure TLS protocols: {exc}") from None
    ctx.options |= ssl.OP_NO_COMPRESSION | getattr(ssl, "OP_NO_RENEGOTIATION", 0)
    if values["tls-prefer-server-ciphers"] == "yes":
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:  # the ssl module sets it in every new context; OpenSSL's (and Redis's) default is off
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    if values["tls-session-caching"] == "no":
        ctx.options |= ssl.OP_NO_TICKET
    try:  # the certificate alone first: its failure and the key's are told apart, as Redis does
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=cert)
    except (ssl.SSLError, OSError) as exc:
        raise _fail(f"Failed to load certificate: {cert}: {describe(exc)}") from None
    secret = password.encode()
    try:  # a callable password: an encrypted key without one fails instead of prompting
        ctx.load_cert_chain(cert, key, password=lambda: secret)
    except (ssl.SSLError, OSError) as exc:
        raise _fail(f"Failed to load private key: {key}: {describe(exc)}") from None
    if ca_file or ca_dir:
        try:
            ctx.load_verify_locations(cafile=ca_file or None, capath=ca_dir or None)
        except (ssl.SSLError, OSError) as exc:
            raise _fail(f"Failed to configure CA certificate(s) file/directory: {describe(exc)}") from None
    if values["tls-dh-params-file"]:
        try:
            ctx.load_dh_params(values["tls-dh-params-file"])
        except (ssl.SSLError, OSError) as exc:
            raise _fail(f"Failed to load {values['tls-dh-params-file']}: {describe(exc)}") from None
    if values["tls-ciphers"]:
        try:
            ctx.set_ciphers(values["tls-ciphers"])
        except ssl.SSLError:
            raise _fail(f"Failed to configure ciphers: {values['tls-ciphers']}") from None
    return ctx


def build(values: dict[str, str]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The server-side and the client-side context of the tls-* options (tlsConfigure's checks,
    in its order); BuildFailed, the reason logged, when one is wrong.

    The client side (replication, MIGRATE) presents tls-client-cert-file / tls-client-key-file
    when both are set, else the server's own certificate, as Redis's connections made with
    redis_tls_client_ctx or redis_tls_ctx do; it checks the peer's certificate against the CA
    and, like Redis, not its host name."""
    if not values["tls-cert-file"]:
        raise _fail("No tls-cert-file configured!")
    if not values["tls-key-file"]:
        raise _fail("No tls-key-file configured!")
    if ((values["tls-auth-clients"] != "no" or values["tls-replication"] == "yes" or values["tls-cluster"] == "yes")
            and not values["tls-ca-cert-file"] and not values["tls-ca-cert-dir"]):
        raise _fail("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
                    "tls-replication or tls-auth-clients are enabled!")
    server = _context(values, True, values["tls-cert-file"], values["tls-key-file"],
                      values["tls-key-file-pass"])
    server.verify_mode = _VERIFY[values["tls-auth-clients"]]
    if values["tls-client-cert-file"] and values["tls-client-key-file"]:
        client = _context(values, False, values["tls-client-cert-file"],
                          values["tls-client-key-file"], values["tls-client-key-file-pass"])
    else:
        client = _context(values, False, values["tls-cert-file"], values["tls-key-file"],
                          values["tls-key-file-pass"])
    client.check_hostname = False
    client.verify_mode = ssl.CERT_REQUIRED
    return server, client


def configure_at_startup(srv: Server) -> None:
    """initServer's tlsConfigure: build the context when TLS is wanted, or end start-up."""
    if not wanted(srv.config.values):
        return
    try:
        srv.tls_context, srv.tls_client_context = build(srv.config.values)
    except BuildFailed:
        LOG.warning("Failed to configure TLS. Check logs for more info.")
        raise SystemExit(1) from None


def reconfigure(srv: Server, force: bool = False) -> None:
    """CONFIG SET of a context option (or of tls-port, `force`): a new context for new
    connections, or ConfigError leaving the old one in place."""
    if not (force or wanted(srv.config.values)):
        return
    try:
        srv.tls_context, srv.tls_client_context = build(srv.config.values)
    except BuildFailed:
        raise ConfigError(UPDATE_FAILED) from None


def attach(srv: Server) -> None:
    """The CONFIG SET hooks that rebuild the context."""
    srv.tls_context = srv.tls_client_context = None
    srv.tls_sockets = []
    for name in CONTEXT_OPTIONS:
        srv.config.on_change.setdefault(name, []).append(lambda _v: reconfigure(srv))


async def serve(srv: Server, socks: list[socket.socket]) -> None:
    """Listen on the bound tls-port sockets (replacing those listened on before)."""
    for sock in srv.tls_sockets:
        sock.close()
    srv.tls_sockets = socks
    await _listen(srv)


async def _listen(srv: Server) -> None:
    """Plain TCP listeners on `srv.tls_sockets`, each connection a `Link` (which takes the
    context current at its accept).  Each takes a duplicate of its socket, so that closing it
    leaves the socket bound."""
    assert srv.loop is not None
    for listener in srv.tls_listeners:
        listener.close()
    srv.tls_listeners.clear()
    for sock in srv.tls_sockets:  # listening with tcp-backlog since they were bound
        srv.tls_listeners.append(Acceptor(srv.loop, sock.dup(), lambda conn, peer: Link(srv)))


def close(srv: Server) -> None:
    for listener in srv.tls_listeners:
        listener.close()
    for sock in srv.tls_sockets:
        sock.close()
    srv.tls_sockets = []


def _openssl_error(exc: ssl.SSLError) -> str:
    """OpenSSL 3's ERR_error_string of the error ("error:0A00010B:SSL routines::wrong version
    number"), the text Redis logs; the packed code is rebuilt from the library and reason names."""
    text = describe(exc)
    lib_code = next((code for code, name in _ssl.lib_codes_to_names.items() if name == exc.library), None)
    pair = _ssl.err_names_to_codes.get(exc.reason or "")
    if lib_code is None or pair is None or pair[0] != lib_code:
        return text
    return f"error:{(lib_code & 0xFF) << 23 | pair[1] & 0x7FFFFF:08X}:{text}"


class Link(asyncio.Protocol):
    """One TLS connection: the TCP transport's protocol below, the transport of the protocol above.

    Above is a Client (a tls-port connection, made once the handshake is done), or `upper`, a
    protocol given at the start: a cluster bus link (server/cluster/bus.py), accepted on the
    cluster port or opened by this node (`server_side` False: this side says hello first).  A
    failed handshake is logged by `failure_log` (default: Redis's line for a client) and the
    connection dropped; an `upper` hears of the loss whether or not the handshake was done.

    Invariants: the SSLObject's context is the one current at the accept (or the connect); the
    upper protocol's connection_made runs once the handshake is done (`self.client` is set
    then); whatever the SSLObject puts in `_out` is written to the TCP transport before control
    returns to the loop."""

    def __init__(self, srv: Server, upper: asyncio.Protocol | None = None, context: ssl.SSLContext | None = None,
                 server_side: bool = True, failure_log: Callable[[str], None] | None = None) -> None:
        self.srv = srv
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        ctx = context if context is not None else srv.tls_context
        self.ssl = ctx.wrap_bio(self._in, self._out, server_side=server_side)
        self.raw: asyncio.Transport | None = None
        self.client: Any = None  # the Client, or `upper`, once the handshake is done
        self.upper = upper
        self.failure_log = failure_log

    # ---- the TCP transport's protocol ----------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = transport  # type: ignore[assignment]
        if not self.ssl.server_side:
            self.feed(b"")  # the client's hello

    def eof_received(self) -> bool:
        if self.client is None and self.upper is None:  # the peer left halfway through the handshake
            s = self.get_extra_info("socket")
            fd = s.fileno() if s is not None else -1
            LOG.warning("Error accepting a client connection: error:0A000126:SSL routines::unexpected eof "
                        f"while reading (conn: fd={fd})")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client is not None:
            self.client.connection_lost(exc)
        elif self.upper is not None:
            self.upper.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause_writing()

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume_writing()

    def feed(self, data: bytes) -> None:
        """Bytes read from the socket (by the loop, or by a busy script's poll): the handshake's,
        then the Client's once decrypted (see "A record's way in and out")."""
        inb = self._in
        inb.write(data)
        client = self.client
        if client is None:
            if not self._handshake():
                return
            client = self.client
        tls = self.ssl
        got: bytes | None = None
        more: list[bytes] | None = None
        ended = False
        try:
            while True:
                n = inb.pending
                if not n:
                    n = tls.pending()
                    if not n:
                        break
                chunk = tls.read(n)
                if not chunk:  # the peer's close_notify: its clean end of the connection
                    ended = True
                    break
                if got is None:
                    got = chunk
                elif more is None:
                    more = [got, chunk]
                else:
                    more.append(chunk)
        except ssl.SSLWantReadError:  # a record not whole yet: the rest comes with a later read
            pass
        except ssl.SSLError:  # a bad record: the connection ends, as in Redis
            if self.raw is not None:
                self.raw.close()
        if self._out.pending:  # a read may answer (a key update)
            self._flush()
        if got is not None and not client.closed:
            client.data_received(got if more is None else _join(more))
        if ended:  # Redis frees the client on its read of 0, after the commands read before it
            if self.upper is None and not client.closed:
                client.close()  # its replies so far go first
            elif self.raw is not None:
                self.raw.close()

    data_received = feed

    def _handshake(self) -> bool:
        """The handshake's step on the bytes fed: True once it is done (the upper protocol made)."""
        try:
            self.ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        except ssl.SSLError as exc:  # clientAcceptHandler's log line; the connection goes
            self._flush()
            if self.failure_log is None:
                LOG.warning(f"Error accepting a client connection: {_openssl_error(exc)}")
            else:
                self.failure_log(_openssl_error(exc))
            if self.raw is not None:
                self.raw.abort()
            return False
        self._flush()
        self.client = Client(self.srv) if self.upper is None else self.upper
        self.client.connection_made(self)
        return True

    def _flush(self) -> None:
        if self._out.pending and self.raw is not None and not self.raw.is_closing():
            self.raw.write(self._out.read())

    # ---- the Client's transport ----------------------------------------------------------------
    def write(self, data: bytes) -> None:
        n = self.ssl.write(data)  # the whole of it: a memory BIO never refuses a record
        if n < len(data):
            self._encrypt(memoryview(data)[n:])
        raw = self.raw
        if raw is not None and not raw.is_closing():
            raw.write(self._out.read())

    def writelines(self, parts: Iterable[bytes]) -> None:
        """Output in pieces (client.flush_output's big replies): each encrypted in turn, one
        write of the records to the TCP transport."""
        for data in parts:
            self._encrypt(data)
        self._flush()

    def _encrypt(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        tls = self.ssl
        while view:
            n = tls.write(view)
            view = view[n:]

    def close(self) -> None:
        if self.raw is not None:
            self.raw.close()

    def abort(self) -> None:
        if self.raw is not None:
            self.raw.abort()

    def is_closing(self) -> bool:
        return self.raw is None or self.raw.is_closing()

    def pause_reading(self) -> None:
        if self.raw is not None:
            self.raw.pause_reading()

    def resume_reading(self) -> None:
        if self.raw is not None:
            self.raw.resume_reading()

    def get_write_buffer_size(self) -> int:
        return self.raw.get_write_buffer_size() if self.raw is not None else 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self.ssl
        if name == "sslcontext":
            return self.ssl.context
        if name == "peercert":
            return self.ssl.getpeercert()
        if name == "cipher":
            return self.ssl.cipher()
        return self.raw.get_extra_info(name, default) if self.raw is not None else default
