"""Server CPU per request of the TLS layer (server/net/tls.py's Link) with the command path behind it,
without sockets: a real Client behind a Link, its records fed as the loop hands them over.

A client SSLObject (TLS 1.3, the ciphers both servers pick by default) encrypts every request before
the timed loop; the loop feeds each read's records to `Link.data_received` and runs the
end-of-iteration flush (`flush_pending`, which the live loop runs by call_soon), whose write is
encrypted by the Link and handed to a C-level sink (uvloop's write and the kernel are not counted).
Process time, so other load on the machine moves it less than ops/s; alternate two trees' runs.

    .venv/bin/python bench/tls_layer.py [--only SET,GET] [-P 1] [-n 100000] [--rounds 3]
    bench/tls_layer.py --once WORKLOAD P N    # one run, for callgrind (bench/instr.sh's way: two N)
"""

from __future__ import annotations

import argparse
import collections
import random
import ssl
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.hotpath import WORKLOADS, batches, make_client  # noqa: E402
from raxdb.server.net import client as _client  # noqa: E402
from raxdb.server.net.tls import Link  # noqa: E402
from tests.support.tlscerts import make_certs  # noqa: E402

ROWS = ("SET", "GET", "INCR", "LPUSH", "HSET", "ZADD", "XADD", "LRANGE_100")


class Raw:
    """The TCP transport below the Link: its writes go to a C-level sink (or, during the
    handshake, to the client's incoming BIO)."""

    def __init__(self) -> None:
        self.sink: collections.deque[bytes] = collections.deque(maxlen=1)
        self.write = self.sink.append
        self.get_write_buffer_size = int

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def close(self) -> None:
        pass

    abort = close


def connect(srv: object) -> tuple[Link, ssl.SSLObject, ssl.MemoryBIO]:
    certs = make_certs(Path(tempfile.mkdtemp(prefix="tls-layer-")))
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(certs["server_crt"], certs["server_key"])
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    cin, cout = ssl.MemoryBIO(), ssl.MemoryBIO()
    cli = cctx.wrap_bio(cin, cout, server_side=False)
    link = Link(srv, context=sctx)  # type: ignore[arg-type]
    raw = Raw()
    raw.write = cin.write  # type: ignore[method-assign]  # the handshake's replies reach the client
    link.connection_made(raw)  # type: ignore[arg-type]
    for _ in range(10):
        try:
            cli.do_handshake()
            break
        except ssl.SSLWantReadError:
            link.data_received(cout.read())
    link.data_received(cout.read())  # the client's Finished
    raw.write = raw.sink.append  # type: ignore[method-assign]
    return link, cli, cout


def run(name: str, pipeline: int, n: int) -> float:
    c = make_client(setup=name not in ("SET", "GET", "INCR"))
    srv = c.server
    srv.call_soon = lambda fn, *args: None  # the flush is run below, once per read
    link, cli, cout = connect(srv)
    rnd = random.Random(7)
    plain = batches(name, pipeline, rnd)
    reads = []
    for i in range(max(1, n // pipeline)):
        cli.write(plain[i % len(plain)])
        reads.append(cout.read())
    feed, flush = link.data_received, _client.flush_pending
    t0 = time.process_time()
    for data in reads:
        feed(data)
        flush(srv)
    dt = time.process_time() - t0
    return dt * 1e6 / (len(reads) * pipeline)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(ROWS))
    ap.add_argument("-P", type=int, nargs="*", default=[1, 16])
    ap.add_argument("-n", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--once", nargs=3, metavar=("WORKLOAD", "P", "N"))
    opts = ap.parse_args()
    if opts.once:
        run(opts.once[0], int(opts.once[1]), int(opts.once[2]))
        return
    for name in opts.only.split(","):
        assert name in WORKLOADS, name
        for p in opts.P:
            best = min(run(name, p, opts.n) for _ in range(opts.rounds))
            print(f"{name:12} -P {p:<3} {best:6.2f} us/request (TLS layer and command, best of {opts.rounds})")


if __name__ == "__main__":
    main()
