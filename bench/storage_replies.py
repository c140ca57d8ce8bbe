"""The storage calls that write replies from a listpack, alone, for counting under callgrind (two
runs of N and M calls differenced): python bench/storage_replies.py ROOT MODE N (ROOT: the tree to import).
MODE xrange100: Stream.resp_range of 100 entries from a random start over a 20,000-entry stream (3 integer fields,
as hotpath's XRANGE_1000_INT); lrange100 / lrange600: Quicklist.bulks of 100 / 600 "xxx" elements."""
import random
import sys

sys.path.insert(0, sys.argv[1])
from raxdb.storage.quicklist import Quicklist  # noqa: E402
from raxdb.storage.stream import MAX_ID, Stream, node_limits  # noqa: E402

mode, n = sys.argv[2], int(sys.argv[3])
rng = random.Random(1)
if mode == "xrange100":
    s = Stream()
    mb, me, _ = node_limits(4096, 100)
    for i in range(1, 20001):
        s.add([b"XADD", b"k", b"%d-0" % i, b"n", b"%d" % i, b"kind", b"%d" % (i % 7), b"ts", b"%d" % (1_700_000_000 + i)],
              3, i, 0, i << 64, mb, me)
    starts = [rng.randrange(1, 19800) << 64 for _ in range(n)]
    for st in starts:
        s.resp_range(st, MAX_ID, 100, False)
else:
    q = Quicklist.from_items([b"xxx"] * 1000)
    stop = 100 if mode == "lrange100" else 600
    for _ in range(n):
        q.bulks(0, stop)
