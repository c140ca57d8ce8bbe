"""Certificates and TLS clients for the TLS tests (tests/integration/test_tls*.py).

Certificates are made with the openssl command (as Redis's utils/gen-test-certs.sh makes its
own): a CA, two server certificates signed by it (the second for rotation), a client certificate
signed by it, a client certificate signed by an unrelated CA (untrusted) and one signed by the CA
that has already expired.  `make_certs` returns their paths by name: "ca_crt", "server_key", ...
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import redis

Certs = dict[str, str]

HAVE_TOOLS = shutil.which("openssl") is not None and shutil.which("redis-cli") is not None


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _signed(d: Path, name: str, ca: str, ext: bool = False, days: str = "30") -> None:
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=d)
    _openssl("req", "-new", "-sha256", "-subj", f"/O=raxdb-test/CN={name}", "-key", f"{name}.key", "-out",
             f"{name}.csr", cwd=d)
    extra = ["-extfile", "san.ext"] if ext else []
    _openssl("x509", "-req", "-sha256", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", days, "-out", f"{name}.crt", *extra, cwd=d)


def make_certs(d: Path) -> Certs:
    for ca in ("ca", "otherca"):
        _openssl("genrsa", "-out", f"{ca}.key", "2048", cwd=d)
        _openssl("req", "-x509", "-new", "-nodes", "-sha256", "-key", f"{ca}.key", "-days", "30", "-subj",
                 f"/O=raxdb-test/CN={ca}", "-out", f"{ca}.crt", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _signed(d, "server", "ca", ext=True)
    _signed(d, "server2", "ca", ext=True)
    _signed(d, "client", "ca")
    _signed(d, "stranger", "otherca")  # a client certificate the server's CA did not sign
    _signed(d, "expired", "ca", days="-1")  # signed by the CA, valid until yesterday
    (d / "bad.key").write_text("not a key\n")
    return {p.stem + p.suffix.replace(".", "_"): str(p) for p in d.iterdir()}


def tls_args(c: Certs, port: int, *extra: str) -> list[str]:
    """A server's TLS options: a TLS port, the server certificate, the CA."""
    return ["--tls-port", str(port), "--tls-cert-file", c["server_crt"], "--tls-key-file", c["server_key"],
            "--tls-ca-cert-file", c["ca_crt"], *extra]


def client(c: Certs, port: int, cert: str | None = "client", **kw: Any) -> redis.Redis:
    """redis-py over TLS (a `rediss://` URL), with the client certificate `cert` or none."""
    opts: dict[str, Any] = {"ssl_ca_certs": c["ca_crt"], "ssl_cert_reqs": "required", "socket_timeout": 20}
    if cert is not None:
        opts.update(ssl_certfile=c[f"{cert}_crt"], ssl_keyfile=c[f"{cert}_key"])
    opts.update(kw)
    return redis.Redis.from_url(f"rediss://127.0.0.1:{port}", **opts)


def cli(c: Certs, port: int, *args: str, cert: bool = True) -> str:
    """redis-cli --tls, with the client certificate or without."""
    cmd = ["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--tls", "--cacert", c["ca_crt"]]
    if cert:
        cmd += ["--cert", c["client_crt"], "--key", c["client_key"]]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=30).stdout
