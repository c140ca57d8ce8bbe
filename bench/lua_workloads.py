"""The scripting workloads of `make bench` and bench/hotpath.py: the scripts and the functions
library both load into a server before their rows, and the commands that call them.

INCR_SCRIPT is the smallest script that calls the server (one redis.call, an integer back); MIX_SCRIPT
is what a job queue's scripts do: a few commands on small hashes and sorted sets, random keys.
"""

from __future__ import annotations

import hashlib

INCR_SCRIPT = b"return redis.call('incr', KEYS[1])"
MIX_SCRIPT = (b"local v = redis.call('hget', KEYS[1], 'field:3')\n"
              b"redis.call('hset', KEYS[1], 'field:3', ARGV[1])\n"
              b"redis.call('zadd', KEYS[2], 5, 'member:5')\n"
              b"return redis.call('zcard', KEYS[2])")
LIBRARY = (b"#!lua name=benchlib\n"
           b"redis.register_function('bench_incr', function(keys, args) return redis.call('incr', keys[1]) end)")

INCR_SHA = hashlib.sha1(INCR_SCRIPT).hexdigest().encode()
MIX_SHA = hashlib.sha1(MIX_SCRIPT).hexdigest().encode()
RAND = b"__rand_int__"

# name -> the command (redis-benchmark replaces each __rand_int__ by 12 random digits)
WORKLOADS: dict[str, list[bytes]] = {
    "EVALSHA_INCR": [b"EVALSHA", INCR_SHA, b"1", b"counter:" + RAND],
    "EVALSHA_MIX": [b"EVALSHA", MIX_SHA, b"2", b"h:" + RAND, b"z:" + RAND, b"value:new"],
    "FCALL_INCR": [b"FCALL", b"bench_incr", b"1", b"counter:" + RAND],
}


def setup_commands() -> list[list[bytes]]:
    """What a server needs before the rows: the two scripts cached and the library loaded."""
    return [[b"SCRIPT", b"LOAD", INCR_SCRIPT], [b"SCRIPT", b"LOAD", MIX_SCRIPT],
            [b"FUNCTION", b"LOAD", b"REPLACE", LIBRARY]]
