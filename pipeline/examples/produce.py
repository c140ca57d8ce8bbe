"""Produce page-view events into a stream with XADD (pipelined), event time = entry ID time.

Events are spread evenly over the last `--minutes` minutes with explicit `<ms>-*` IDs, so a
single run fills several one-minute windows; IDs never go backwards, so re-running appends after
what is already there.
"""

from __future__ import annotations

import argparse
import random
import time

import redis
from redis.typing import EncodableT, FieldT

PAGES = ["/", "/search", "/product/1", "/product/2", "/product/3", "/cart", "/checkout", "/help"]
WEIGHTS = [30, 20, 12, 10, 8, 10, 6, 4]


def produce(client: redis.Redis, stream: str, events: int, minutes: float, seed: int = 7) -> int:
    """XADD `events` page views into `stream`; returns how many were added."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    start = now - int(minutes * 60_000)
    last = client.xinfo_stream(stream)["last-generated-id"] if client.exists(stream) else b"0-0"
    start = max(start, int(last.split(b"-")[0]) + 1)
    step = max((now - start) / max(events, 1), 0)
    pipe = client.pipeline(transaction=False)
    for i in range(events):
        page = rng.choices(PAGES, WEIGHTS)[0]
        fields: dict[FieldT, EncodableT] = {"page": page, "user": f"u{rng.randrange(500)}",
                                            "ms_on_page": rng.randrange(100, 60_000)}
        pipe.xadd(stream, fields, id=f"{start + int(i * step)}-*")
        if len(pipe) >= 1000:
            pipe.execute()
    pipe.execute()
    return events


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--stream", default="pageviews")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--minutes", type=float, default=10)
    args = parser.parse_args(argv)
    client = redis.Redis(host=args.host, port=args.port, protocol=2)
    count = produce(client, args.stream, args.events, args.minutes)
    print(f"XADDed {count} events to {args.stream!r}; XLEN is now {client.xlen(args.stream)}")


if __name__ == "__main__":
    main()
