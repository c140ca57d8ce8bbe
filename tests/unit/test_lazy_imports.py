"""Standard-library modules start-up leaves to their first use (#56).

hashlib and hmac (a password's hash and comparison, a script's SHA1: server/security/acl.py,
server/table/scriptflags.py), glob (an `include` with wildcards: server/config/options.py) and the
idna codec (a `bind` host name given as str: server/core.py resolves ASCII names as bytes) are not
imported by a server's start (hashlib and hmac come once it serves, after the idle imports of the
command families: server/main.py's `_ready`).  What must hold: a started server has not imported them, and their
first use, in a fresh interpreter, gives what the module gives at once (the same hashes on the
first call and on later ones; a host name, not only an address, binds).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.diff import RawConnection, parse
from tests.support.servers import free_port, start_raxdb

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("hashlib", "hmac", "glob", "encodings.idna")

# A server started as main() starts one (a config from argv, the listeners bound), the modules
# imported once it serves, and then the first use of each lazy import, in the same interpreter.
_PROBE = r"""
import json, os, sys
from raxdb.server.main import main

def ready():
    serving = sorted(m for m in sys.modules if m in LAZY)
    from raxdb.server.security.acl import User, hash_password
    from raxdb.server.table.scriptflags import sha1hex
    first = [sha1hex(b"return 1").decode(), hash_password(b"secret").decode()]
    again = [sha1hex(b"return 1").decode(), hash_password(b"secret").decode()]
    print(json.dumps({"serving": serving, "first": first, "again": again}), flush=True)
    os._exit(0)

main(["--port", sys.argv[1], "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], on_ready=ready)
"""


def test_start_up_leaves_them_and_first_use_imports_them(tmp_path):
    code = f"LAZY = {LAZY!r}\n{_PROBE}"
    out = subprocess.run([sys.executable, "-c", code, str(free_port())], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["serving"] == []
    expected = [hashlib.sha1(b"return 1").hexdigest(), hashlib.sha256(b"secret").hexdigest()]
    assert seen["first"] == expected and seen["again"] == expected


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_first_password_and_script_after_start():
    """requirepass on the command line (hashed while the configuration loads), AUTH against it,
    and a script's SHA1 (EVAL then EVALSHA of the same body) in a server started afresh."""
    srv = start_raxdb("--requirepass", "s3cret")
    try:
        c = RawConnection(srv.port)
        assert c.call("AUTH", "wrong").startswith(b"-WRONGPASS")
        assert parse(c.call("AUTH", "s3cret")) == b"OK"
        assert parse(c.call("EVAL", "return 7", "0")) == 7
        sha = hashlib.sha1(b"return 7").hexdigest()
        assert parse(c.call("SCRIPT", "EXISTS", sha)) == [1]
        assert parse(c.call("EVALSHA", sha, "0")) == 7
        c.close()
    finally:
        srv.stop()


def test_bind_by_host_name():
    """`bind localhost`: a name, resolved as bytes (no idna codec), binds as an address does."""
    srv = start_raxdb(bind="localhost")
    try:
        with socket.create_connection(("localhost", srv.port), timeout=30) as s:  # whichever it resolved to
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            assert s.recv(16) == b"+PONG\r\n"
    finally:
        srv.stop()
