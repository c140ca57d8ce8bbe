#!/usr/bin/env python3
"""Container health check: PING the server, exit 0 on +PONG (or -NOAUTH: alive, password set).

Standard library only, so the image needs no redis-cli.  RAXDB_HOST / RAXDB_PORT override the
default 127.0.0.1:6379.
"""

import os
import socket
import sys


def main() -> int:
    host = os.environ.get("RAXDB_HOST", "127.0.0.1")
    port = int(os.environ.get("RAXDB_PORT", "6379"))
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            reply = s.recv(64)
    except OSError as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    if reply.startswith(b"+PONG") or reply.startswith(b"-NOAUTH"):
        return 0
    print(f"unhealthy: unexpected reply {reply!r}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
