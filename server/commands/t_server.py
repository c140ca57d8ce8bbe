"""Server commands (Redis's server.c / db.c / debug.c admin side): FLUSHDB, FLUSHALL, DBSIZE, SWAPDB,
INFO, TIME, LASTSAVE, ROLE, SLOWLOG, MONITOR, MEMORY, DEBUG, SHUTDOWN, LOLWUT.

CONFIG, CLIENT and COMMAND live in t_config, t_client and t_command (imported at the bottom so
importing this family registers them all).  Replies and errors are Redis 7.0's word for word;
where raxdb has no equivalent of a Redis internal (allocator statistics, RDB serialisation) the
figures are estimates with the same shape.  What other rooms share is called down into: emptying
every database (persistence/emptydata.py, for FLUSHALL and DEBUG RELOAD), a key's MEMORY USAGE
figure (memory/usage.py), the memory account (memory/overhead.py).
"""

from __future__ import annotations

import sys
import time

from raxdb.protocol import reply as R
from raxdb.server.admin import crashreport, digest, pauses
from raxdb.server.admin import info as info_mod
from raxdb.server.base import clock
from raxdb.server.base.errors import (
    DB_INDEX,
    NO_SUCH_KEY,
    NOT_INTEGER,
    SYNTAX,
    CommandError,
    subcommand_syntax,
)
from raxdb.server.base.log import LOG
from raxdb.server.base.numparse import strtod, strtoll
from raxdb.server.commands import testcontrols
from raxdb.server.commands.t_config import help_reply
from raxdb.server.commands.t_keys import object_encoding, object_value
from raxdb.server.commands.t_string import SHARED_INTS
from raxdb.server.config.options import ConfigError, memtoull
from raxdb.server.conn import clientbufs, lifecycle
from raxdb.server.events import propagate, tracking, watch
from raxdb.server.events.keyaccess import (
    is_string,
    lookup_write,
    signal_modified,
    signal_ready,
    string_encoding,
)
from raxdb.server.memory import evict, lazyfree
from raxdb.server.memory import overhead as memoverhead
from raxdb.server.memory.usage import key_usage
from raxdb.server.net import blocking
from raxdb.server.persistence import snapshot
from raxdb.server.persistence.emptydata import empty_data
from raxdb.server.persistence.snapshot import LoadError
from raxdb.server.security.protected import protected_allowed, protected_denied
from raxdb.server.table.args import maybe_int, option_word, positive_long
from raxdb.server.table.registry import NO_REPLY, command


# ---- keyspace-wide ------------------------------------------------------------------------------
def _flush_mode(argv: list[bytes], start: int) -> None:
    if len(argv) > start + 1:
        raise CommandError("ERR syntax error")
    if len(argv) == start + 1 and option_word(argv[start]) not in (b"async", b"sync"):
        raise CommandError("ERR syntax error")


@command("flushdb")
def flushdb(c, argv):
    _flush_mode(argv, 1)
    if c.db.watched:
        watch.touch_flushed(c.db)  # WATCHed keys that exist are modified by the flush
    tracking.flushed(c.server)
    blocking.signal_deleted_streams(c.db)
    n = c.db.flush()
    if lazyfree.flush_is_async(c.server, argv, 1):
        lazyfree.flushed_async(c.server, n)
    c.server.dirty += n
    propagate.force(c)  # replayed even when the database was already empty
    return R.OK


@command("flushall")
def flushall(c, argv):
    _flush_mode(argv, 1)
    srv = c.server
    srv.dirty += empty_data(srv, lazyfree.flush_is_async(srv, argv, 1))
    propagate.force(c)  # replayed even when every database was already empty
    p = srv.persistence
    p.kill_child()
    if srv.config.values["save"]:
        p.save()  # flushAllDataAndResetRDB: the empty dataset is saved at once
    return R.OK


@command("dbsize")
def dbsize(c, argv):
    return R.integer(len(c.db))


@command("swapdb")
def swapdb(c, argv):
    srv = c.server
    if srv.cluster is not None:
        raise CommandError("ERR SWAPDB is not allowed in cluster mode")
    a, b = maybe_int(argv[1]), maybe_int(argv[2])
    if a is None:
        raise CommandError("ERR invalid first DB index")
    if b is None:
        raise CommandError("ERR invalid second DB index")
    n = len(srv.dbs)
    if not (0 <= a < n and 0 <= b < n):
        raise CommandError(DB_INDEX)
    if a != b:
        da, db_ = srv.dbs[a], srv.dbs[b]
        # Before the swap, as Redis orders it: WATCHed keys see the other side's contents
        # (touchAllWatchedKeysInDb, with its rules for keys dead but not yet reclaimed), and
        # blocked XREADGROUPs whose stream goes away fail.
        watch.touch_swapped(da, db_, srv.now_ms)
        blocking.signal_deleted_streams(da, db_)
        blocking.signal_deleted_streams(db_, da)
        da.swap_contents(db_)
        if srv.maxmemory:
            evict.dbs_changed(srv)
        # Blocked clients waiting on keys that now hold data are woken (scanDatabaseForReadyKeys).
        # Client tracking hears nothing: its keys are not per database.
        for d in (da, db_):
            for key in list(d.blocking):
                value = d.stored(key)
                if value is not None:
                    signal_ready(d, key, value)
    srv.dirty += 1  # even SWAPDB n n: Redis replays it all the same
    return R.OK


# ---- INFO and small introspection ---------------------------------------------------------------
@command("info")
def info(c, argv):
    return c.enc.verbatim(info_mod.generate(c.server, argv[1:], c))


@command("time")
def time_(c, argv):
    now = clock.us(c.server)
    return R.bulk_array([b"%d" % (now // 1_000_000), b"%d" % (now % 1_000_000)])


@command("lastsave")
def lastsave(c, argv):
    return R.integer(c.server.lastsave)


@command("role")
def role(c, argv):
    return c.server.repl.role_reply(c)


# ---- SLOWLOG ------------------------------------------------------------------------------------
@command("slowlog|get")
def slowlog_get(c, argv):
    if len(argv) > 3:
        raise subcommand_syntax(argv)
    count = 10
    if len(argv) == 3:
        n = maybe_int(argv[2])
        if n is None or n < -1:
            raise CommandError("ERR count should be greater than or equal to -1")
        count = n if n != -1 else len(c.server.slowlog)
    entries = list(c.server.slowlog)[:count]
    return R.array([lifecycle.encode_slowlog_entry(e, c.enc) for e in entries])


@command("slowlog|len")
def slowlog_len(c, argv):
    return R.integer(len(c.server.slowlog))


@command("slowlog|reset")
def slowlog_reset(c, argv):
    c.server.slowlog.clear()
    return R.OK


@command("slowlog|help")
def slowlog_help(c, argv):
    return help_reply("SLOWLOG", [
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
    ])


# ---- MONITOR ------------------------------------------------------------------------------------
@command("monitor")
def monitor(c, argv):
    if c.in_exec:
        raise CommandError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if c.is_monitor:
        return NO_REPLY  # already monitoring: ignored, as Redis does
    lifecycle.start_monitor(c)
    return R.OK


# ---- MEMORY -------------------------------------------------------------------------------------
@command("memory|usage")
def memory_usage(c, argv):
    samples = 5  # OBJ_COMPUTE_SIZE_DEF_SAMPLES
    i = 3
    while i < len(argv):
        if option_word(argv[i]) == b"samples" and i + 1 < len(argv):
            n = maybe_int(argv[i + 1])
            if n is None:
                raise CommandError(NOT_INTEGER)
            if n < 0:
                raise CommandError(SYNTAX)
            samples = n or 2**63 - 1  # SAMPLES 0: every element
            i += 2
        else:
            raise CommandError(SYNTAX)
    value = c.db.stored(argv[2])
    if value is None:
        return c.enc.null
    return R.integer(key_usage(argv[2], value, samples))


@command("memory|stats")
def memory_stats(c, argv):
    srv = c.server
    enc = c.enc
    o = memoverhead.overhead(srv, c)
    used, peak, startup, keys = o.used, o.peak, o.startup, o.keys
    pairs = [
        R.bulk(b"peak.allocated"), R.integer(peak),
        R.bulk(b"total.allocated"), R.integer(used),
        R.bulk(b"startup.allocated"), R.integer(startup),
        R.bulk(b"replication.backlog"), R.integer(o.repl_backlog),
        R.bulk(b"clients.slaves"), R.integer(o.clients_slaves),
        R.bulk(b"clients.normal"), R.integer(o.clients_normal),
        R.bulk(b"cluster.links"), R.ZERO,
        R.bulk(b"aof.buffer"), R.integer(o.aof_buffer),
        R.bulk(b"lua.caches"), R.ZERO,
        R.bulk(b"functions.caches"), R.ZERO,
    ]
    for dbid, main, exp in o.dbs:
        pairs += [R.bulk(b"db.%d" % dbid), enc.map([
            R.bulk(b"overhead.hashtable.main"), R.integer(main),
            R.bulk(b"overhead.hashtable.expires"), R.integer(exp),
            R.bulk(b"overhead.hashtable.slot-to-keys"), R.ZERO])]
    overhead, dataset, net = o.total, o.dataset, o.net
    pairs += [
        R.bulk(b"overhead.total"), R.integer(overhead),
        R.bulk(b"keys.count"), R.integer(keys),
        R.bulk(b"keys.bytes-per-key"), R.integer((used - startup) // keys if keys else 0),
        R.bulk(b"dataset.bytes"), R.integer(dataset),
        R.bulk(b"dataset.percentage"), enc.double(dataset * 100.0 / net),
        R.bulk(b"peak.percentage"), enc.double(used * 100.0 / peak if peak else 100.0),
        R.bulk(b"allocator.allocated"), R.integer(used),
        R.bulk(b"allocator.active"), R.integer(used),
        R.bulk(b"allocator.resident"), R.integer(used),
        R.bulk(b"allocator-fragmentation.ratio"), enc.double(1.0),
        R.bulk(b"allocator-fragmentation.bytes"), R.ZERO,
        R.bulk(b"allocator-rss.ratio"), enc.double(1.0),
        R.bulk(b"allocator-rss.bytes"), R.ZERO,
        R.bulk(b"rss-overhead.ratio"), enc.double(1.0),
        R.bulk(b"rss-overhead.bytes"), R.ZERO,
        R.bulk(b"fragmentation"), enc.double(1.0),
        R.bulk(b"fragmentation.bytes"), R.ZERO,
    ]
    return enc.map(pairs)


@command("memory|doctor")
def memory_doctor(c, argv):
    used = c.server.used_memory()
    if used - memoverhead.startup_memory(c.server, used) < 5 * 1024 * 1024:
        text = (b"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be "
                b"used in these conditions. Please, leave for your mission on Earth and fill it with some data. "
                b"The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
    else:
        text = (b"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs "
                b"on this base.\n")
    return c.enc.verbatim(text)


@command("memory|malloc-stats")
def memory_malloc_stats(c, argv):
    return R.bulk(b"Stats not supported for the current allocator")


@command("memory|purge")
def memory_purge(c, argv):
    from raxdb.server.base import heap

    heap.purge()  # (Redis: jemalloc's dirty pages; its reply is +OK whatever the allocator did)
    return R.OK


@command("memory|help")
def memory_help(c, argv):
    return help_reply("MEMORY", [
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    ])


# ---- DEBUG --------------------------------------------------------------------------------------
_DEBUG_HELP = [
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
]


def _debug_encoded(c, argv: list[bytes]) -> bytes:
    """DEBUG LISTPACK <key> / QUICKLIST <key> [<0|1>]: Redis's reply for a value of that encoding
    (its lpRepr and quicklistRepr print to stdout; raxdb notes the value in the log instead)."""
    want = "listpack" if argv[1].lower() == b"listpack" else "quicklist"
    if len(argv) != 3 and not (want == "quicklist" and len(argv) == 4):
        raise subcommand_syntax(argv)
    value = object_value(c, argv[2])
    if value is None:
        raise CommandError(NO_SUCH_KEY)
    encoding = None if is_string(value) else object_encoding(value)
    # Redis 7.4 takes a listpackex hash too (its listpack of fields, values and deadlines)
    if encoding != want and not (want == "listpack" and encoding == "listpackex"):
        raise CommandError(f"ERR Not a {want} encoded object.")
    LOG.verbose(f"{want} of {argv[2]!r}: {value!r}")  # the log, not stdout: a daemon's stdout may be gone
    return R.status(("Listpack" if want == "listpack" else "Quicklist") + " structure printed on stdout")


def _debug_client_eviction(c, argv: list[bytes]) -> bytes:
    """DEBUG CLIENT-EVICTION: the clients eviction may pick, by Redis's power-of-two buckets of
    their noted memory (32 KiB and under, ..., 8 GiB and over)."""
    if len(argv) != 2:
        raise subcommand_syntax(argv)
    srv = c.server
    if not srv.client_evict_limit:
        raise CommandError("ERR maxmemory-clients is disabled.")
    sums, counts = [0] * 19, [0] * 19
    for cl in srv.clients.values():
        if cl.mem_noted and not cl.closed and not cl.no_evict:
            b = max(15, min(33, cl.mem_noted.bit_length())) - 15
            sums[b] += cl.mem_noted
            counts[b] += 1
    out = []
    for j in range(19):
        low = "bucket          0" if j == 0 else "bucket %10d" % (1 << (j - 1 + 15))
        high = "+            : " if j == 18 else " - %10d: " % ((1 << (j + 15)) - 1)
        out.append(f"{low}{high}tot-mem: {sums[j]:10d}, clients: {counts[j]}\n")
    return c.enc.verbatim("".join(out).encode())


def _debug_htstats(c, argv: list[bytes]) -> bytes:
    """DEBUG HTSTATS <dbid>: dictGetStats of the database's main and expires tables, for a
    chained hash table of Redis's size for that many keys (its power-of-two growth), the keys
    spread over it by their hash: Redis's spread depends on its per-process hash seed anyway."""
    if len(argv) != 3:
        raise subcommand_syntax(argv)
    dbid = maybe_int(argv[2])
    if dbid is None:
        raise CommandError(NOT_INTEGER)
    srv = c.server
    if not 0 <= dbid < len(srv.dbs):
        raise CommandError("ERR Out of range database")
    db = srv.dbs[dbid]
    text = "[Dictionary HT]\n" + _table_stats(db.key_list()) + "[Expires HT]\n" + _table_stats(db.expires)
    return c.enc.verbatim(text.encode())


def _table_stats(keys) -> str:
    """_dictGetStatsHt for table 0."""
    n = len(keys)
    if not n:
        return "Hash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n"
    size = max(4, 1 << (n - 1).bit_length())
    chains = [0] * size
    for k in keys:
        chains[hash(k) & (size - 1)] += 1
    slots = size - chains.count(0)
    longest = max(chains)
    vector = [0] * 50  # DICT_STATS_VECTLEN: chains of 49 and more counted together
    for length in chains:
        vector[min(length, 49)] += 1
    lines = [f"Hash table 0 stats (main hash table):\n table size: {size}\n number of elements: {n}\n"
             f" different slots: {slots}\n max chain length: {longest}\n"
             f" avg chain length (counted): {n / slots:.2f}\n avg chain length (computed): {n / slots:.2f}\n"
             " Chain length distribution:\n"]
    for i in range(49):
        if vector[i]:
            lines.append(f"   {i}: {vector[i]} ({vector[i] / size * 100:.2f}%)\n")
    return "".join(lines)


def _debug_fixed(c, argv: list[bytes]) -> bytes:
    """The subcommands whose reply does not depend on the data: STRUCTSIZE (a 64-bit build's C
    structures), STRINGMATCH-TEST (the glob matcher has no C fuzz target to run), LEAK,
    DROP-CLUSTER-PACKET-FILTER (the bus ignores messages of that type; -1 none), CLUSTERLINK
    KILL TO|FROM|ALL <node> (frees the node's outbound, inbound or both bus links; the cron
    reconnects)."""
    sub, n = argv[1].lower(), len(argv)
    if sub == b"structsize" and n == 2:
        return R.bulk(b"bits:64 robj:16 dictentry:24 sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 sdshdr64:17 ")
    if sub == b"stringmatch-test" and n == 2:
        return R.status("Apparently Redis did not crash: test passed")
    if sub == b"leak" and n == 3:
        _LEAKED.append(argv[2])
        return R.OK
    if sub == b"drop-cluster-packet-filter" and n == 3:
        kind = maybe_int(argv[2])
        if kind is None:
            raise CommandError(NOT_INTEGER)
        if c.server.cluster is not None:
            c.server.cluster.drop_filter = kind
        return R.OK
    if sub == b"clusterlink" and n == 5 and argv[2].lower() == b"kill":
        return _debug_clusterlink_kill(c, argv)
    raise subcommand_syntax(argv)


def _debug_clusterlink_kill(c, argv: list[bytes]) -> bytes:
    cl = c.server.cluster
    if cl is None:
        raise CommandError("ERR Debug option only available for cluster mode enabled setup!")
    node = cl.st.lookup(argv[4].decode(errors="replace"))
    if node is None:
        raise CommandError(b"ERR Unknown node " + argv[4])
    direction = argv[3].lower()
    links = {b"to": (node.link,), b"from": (node.inbound_link,), b"all": (node.link, node.inbound_link)}
    for link in links.get(direction, ()):
        if link is not None:
            link.drop()
    if direction not in links:  # Redis replies the error and then +OK too: two replies
        return c.error_reply(CommandError(b"ERR Unknown direction " + argv[3]).msg) + R.OK
    return R.OK


_LEAKED: list[bytes] = []  # DEBUG LEAK's strings, never freed


_DEBUG_LOW_LEVEL = {
    b"listpack": _debug_encoded, b"quicklist": _debug_encoded, b"client-eviction": _debug_client_eviction,
    b"htstats": _debug_htstats, b"structsize": _debug_fixed, b"stringmatch-test": _debug_fixed,
    b"leak": _debug_fixed, b"drop-cluster-packet-filter": _debug_fixed, b"clusterlink": _debug_fixed,
}


def _debug_populate(c, argv: list[bytes]) -> bytes:
    """DEBUG POPULATE count [prefix] [size]: string keys <prefix>:<n> (an existing key is left
    alone) holding "value:<n>", or its first <size> bytes zero-padded to <size>.  Like Redis's,
    they are neither propagated nor counted as changes; the names are cut at 127 bytes, as
    Redis's 128-byte buffer cuts them."""
    count = positive_long(argv[2])
    size = positive_long(argv[4]) if len(argv) == 5 else 0
    prefix = argv[3] if len(argv) >= 4 else b"key"
    db = c.db
    for j in range(count):
        key = (b"%s:%d" % (prefix, j))[:127]
        if lookup_write(c, key) is not None:
            continue
        value = b"value:%d" % j
        if size:
            value = value[:size].ljust(size, b"\0")
        db.add(key, value)
        if db.signals:  # signalModifiedKey, without modified()'s count of a change
            signal_modified(c.server, c, db, key)
    return R.OK


def _debug_object(c, key: bytes) -> bytes:
    db = c.db
    value = db.stored(key)  # the dict as it is: a key past its deadline is still shown, as in Redis
    if value is None:
        raise CommandError(NO_SUCH_KEY)
    address = id(value)
    if is_string(value):
        enc = string_encoding(value)
        shared = enc == "int" and 0 <= int(value) < 10000
        refcount = 2147483647 if shared else 1
        # Redis's shared integers have one address each, whichever key holds them; its INCR
        # changes an unshared counter's robj in place, so that address stays: the bytes here are
        # new each time, the key's record is not
        address = id(SHARED_INTS[int(value)]) if shared else db.record_id(key)
    else:
        enc = value.encoding()
        refcount = 1
    rdb, _ = snapshot.rdb_format()  # imported by the first that needs it: DEBUG's others do not
    w = rdb.Writer(c.server.config.values["rdbcompression"] == "yes")
    rdb.write_value(w, value)  # rdbSavedObjectLen: the value's RDB body, as SAVE would write it
    serialized = len(w.buf)
    access = db.access_ms(key) or c.server.now_ms
    lru = (access // 1000) & ((1 << 24) - 1)
    idle = max(0, c.server.now_ms - access) // 1000
    text = (f"Value at:0x{address:x} refcount:{refcount} encoding:{enc} serializedlength:{serialized} "
            f"lru:{lru} lru_seconds_idle:{idle}")
    return R.status(text)


def _debug_reload(c, options: list[bytes]) -> bytes:
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the dataset (functions too), load the
    dump file back; MERGE lets loaded keys replace existing ones instead of failing."""
    merge, flush, save = False, True, True
    for opt in options:
        word = option_word(opt)
        if word == b"merge":
            merge = True
        elif word == b"noflush":
            flush = False
        elif word == b"nosave":
            save = False
        else:
            raise CommandError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
    srv = c.server
    p = srv.persistence
    if save and not p.save():
        raise CommandError("ERR")
    if flush:
        empty_data(srv, False, with_functions=True)
    try:
        with open(p.path(), "rb") as f:
            data = f.read()
        p.load_bytes(data, merge)
    except (OSError, LoadError) as exc:
        LOG.warning(f"Error loading the RDB dump: {exc}")
        raise CommandError("ERR Error trying to load the RDB dump") from None
    LOG.warning("DB reloaded by DEBUG RELOAD")
    return R.OK


def _debug_protocol(c, kind: bytes) -> bytes:
    enc = c.enc
    if kind == b"string":
        return R.bulk(b"Hello World")
    if kind == b"integer":
        return R.integer(12345)
    if kind == b"double":
        return enc.double(3.141)
    if kind == b"bignum":
        return enc.big_number(b"1234567999999999999999999999999999999")
    if kind == b"null":
        return enc.null
    if kind == b"array":
        return R.array([R.integer(i) for i in range(3)])
    if kind == b"set":
        return enc.set([R.integer(i) for i in range(3)])
    if kind == b"map":
        return enc.map([x for i in range(3) for x in (R.integer(i), enc.boolean(i == 1))])
    if kind == b"attrib":
        body = R.bulk(b"Some real reply following the attribute")
        if enc.version == 2:
            return body
        return (b"|1\r\n" + R.bulk(b"key-popularity") + R.array([R.bulk(b"key:123"), R.integer(90)]) + body)
    if kind == b"push":
        if enc.version == 2:
            raise CommandError("ERR RESP2 is not supported by this command")
        return (enc.push_header(2) + R.bulk(b"server-cpu-usage") + R.integer(42)
                + R.bulk(b"Some real reply following the push reply"))
    if kind == b"verbatim":
        return enc.verbatim(b"This is a verbatim\nstring")
    if kind == b"true":
        return enc.boolean(True)
    if kind == b"false":
        return enc.boolean(False)
    raise CommandError("ERR Wrong protocol type name. Please use one of the following: "
                       "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")


_CRASHES = (b"segfault", b"panic", b"restart", b"crash-and-recover", b"oom", b"assert")
_OOM_SIZE = (1 << 64) // 2 - 1  # zmalloc(SIZE_MAX/2), which Redis's allocator refuses


def _debug_crash(c, argv: list[bytes], sub: bytes) -> bytes:
    """DEBUG SEGFAULT / PANIC / OOM / ASSERT (the process ends: server/admin/crashreport.py) and
    RESTART / CRASH-AND-RECOVER [ms] (it runs again), whatever arguments follow, as in Redis."""
    here = sys._getframe()
    if sub == b"segfault":
        crashreport.segfault(here)
    if sub == b"panic":
        crashreport.panic(f"DEBUG PANIC called at Unix time {int(time.time())}", here)
    if sub == b"oom":
        crashreport.out_of_memory(_OOM_SIZE, here)
    if sub == b"assert":
        crashreport.assert_failed(c, argv, "1 == 2", here)
    delay = 0
    if len(argv) >= 3:
        given = maybe_int(argv[2])
        if given is None:
            raise CommandError(NOT_INTEGER)
        delay = given
    crashreport.restart(c.server, sub == b"restart", max(0, delay))
    raise CommandError("ERR failed to restart the server. Check server logs.")


@command("debug")
def debug(c, argv):
    sub = option_word(argv[1])
    controlled = testcontrols.dispatch(c, sub, argv)  # raxdb's test controls: their own switch
    if controlled is not None:
        return controlled
    if not protected_allowed(c, "enable-debug-command"):
        raise protected_denied("DEBUG", "enable-debug-command")
    n = len(argv)
    srv = c.server
    if sub == b"help" and n == 2:
        return help_reply("DEBUG", _DEBUG_HELP + testcontrols.help_lines(srv))
    if sub == b"sleep" and n == 3:
        secs = strtod(argv[2]) or 0.0
        time.sleep(max(0.0, secs))  # blocks the whole server, exactly what DEBUG SLEEP is for
        return R.OK
    if sub == b"object" and n == 3:
        return _debug_object(c, argv[2])
    if sub in _CRASHES:
        return _debug_crash(c, argv, sub)
    if sub == b"populate" and 3 <= n <= 5:
        return _debug_populate(c, argv)
    if sub == b"reload":
        return _debug_reload(c, argv[2:])
    if sub in _DEBUG_LOW_LEVEL:
        return _DEBUG_LOW_LEVEL[sub](c, argv)
    if sub == b"config-rewrite-force-all" and n == 2:
        try:
            srv.config.rewrite(force_all=True)
        except ConfigError as exc:
            raise CommandError(f"ERR CONFIG-REWRITE-FORCE-ALL failed: {str(exc).rpartition(': ')[2]}") from None
        return R.OK
    if sub == b"loadaof" and n == 2:
        from raxdb.server.persistence.aofload import debug_loadaof  # noqa: PLC0415 - first use only

        debug_loadaof(c)
        return R.OK
    if sub == b"set-skip-checksum-validation" and n == 3:
        srv.skip_checksum_validation = (maybe_int(argv[2]) or 0) != 0
        return R.OK
    if sub == b"digest" and n == 2:
        return R.status(digest.dataset_digest(srv.dbs).encode())
    if sub == b"digest-value":
        return R.array([R.status(d.encode()) for d in digest.digest_values(c.db, argv[2:])])
    if sub == b"pauses" and n == 2 and (recorder := pauses.current()) is not None:
        # the pause recorder's report (server/admin/pauses.py, a bench aid; without it, Redis's
        # unknown-subcommand error as for any other name)
        return R.bulk(recorder.take().encode())
    if sub == b"pause-cron" and n == 3:
        srv.cron_paused = (maybe_int(argv[2]) or 0) != 0  # atoi: a non-number is 0
        return R.OK
    if sub == b"replybuffer" and n == 4:
        # the reply buffer's modelled resizing (server/conn/clientbufs.py)
        what = argv[2].lower()
        cron = srv.clients_cron
        if what == b"peak-reset-time":
            arg = argv[3].lower()
            if arg == b"never":
                cron.peak_reset_ms = -1
            elif arg == b"reset":
                cron.peak_reset_ms = clientbufs.PEAK_RESET_MS
            else:
                ms = maybe_int(argv[3])
                if ms is None:
                    raise CommandError(NOT_INTEGER)
                cron.peak_reset_ms = ms
        elif what == b"resizing":
            cron.resizing = (maybe_int(argv[3]) or 0) != 0  # atoi
        else:
            raise subcommand_syntax(argv)
        return R.OK
    if sub == b"set-disable-deny-scripts" and n == 3:
        srv.script_deny_disabled = (maybe_int(argv[2]) or 0) != 0
        return R.OK
    if sub == b"aof-flush-sleep" and n == 3:  # microseconds before each AOF write (a test aid)
        srv.aof.flush_sleep_us = strtoll(argv[2])
        return R.OK
    if sub == b"set-active-expire" and n == 3:
        srv.active_expire_enabled = argv[2] != b"0"
        return R.OK
    if sub == b"replicate" and n >= 3:
        # straight into the stream, in whatever db it last selected (replicationFeedSlaves with
        # slaveseldb): a replica runs what it is given, a test's way to make data diverge
        srv.repl.feed(srv.repl.seldb, list(argv[2:]))
        return R.OK
    if sub == b"change-repl-id" and n == 2:
        srv.repl.change_replid()
        srv.repl.clear_replid2()
        return R.OK
    if sub == b"quicklist-packed-threshold" and n == 3:
        size = memtoull(argv[2])
        if size is None or size > 4 * 1024**3:
            raise CommandError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
        srv.quicklist_packed_threshold = size or 1024**3
        return R.OK
    if sub == b"protocol" and n == 3:
        return _debug_protocol(c, option_word(argv[2]))
    if sub == b"error" and n == 3:
        raise CommandError(argv[2])
    if sub == b"log" and n == 3:
        LOG.warning("DEBUG LOG: " + argv[2].decode(errors="replace"))
        return R.OK
    raise subcommand_syntax(argv)


# ---- SHUTDOWN -----------------------------------------------------------------------------------
@command("shutdown")
def shutdown(c, argv):
    flags: set[bytes] = set()
    abort = False
    for a in argv[1:]:
        low = option_word(a)
        if low in (b"nosave", b"save", b"now", b"force"):
            flags.add(low)
        elif low == b"abort":
            abort = True
        else:
            raise CommandError(SYNTAX)
    if (abort and flags) or {b"nosave", b"save"} <= flags:
        raise CommandError(SYNTAX)
    if abort:
        if not c.server.shutdown.abort():
            raise CommandError("ERR No shutdown in progress.")
        return R.OK
    if b"now" not in flags and c.in_exec:
        raise CommandError("ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client")
    save = True if b"save" in flags else False if b"nosave" in flags else None
    c.server.shutdown.command(c, save, b"now" in flags, b"force" in flags)
    return NO_REPLY


# ---- LOLWUT -------------------------------------------------------------------------------------
@command("lolwut")
def lolwut(c, argv):
    version = 0
    if len(argv) >= 3 and option_word(argv[1]) == b"version":
        v = maybe_int(argv[2])
        if v is None:
            raise CommandError(NOT_INTEGER)
        version = v
    footer = f"Redis ver. {c.server.redis_version}\n"
    if version == 5:
        art = "\n".join("".join("\u2800\u28ff"[(x * 7 + y * 3) % 2] for x in range(32)) for y in range(8))
        footer = f"{art}\n\nGeorg Nees - schotter, plotter on paper, 1968. {footer}"
    elif version == 6:
        art = "\n".join("".join(" .:-=+*#"[(x ^ y) % 8] for x in range(40)) for y in range(10))
        footer = (f"{art}\nDedicated to the 8 bit game developers of past and present.\n"
                  f"Original 8 bit image from Plaguemon by hikikomori. {footer}")
    return c.enc.verbatim(footer.encode())


# Registering the other server-side families with this one (CONFIG, CLIENT, COMMAND).
from raxdb.server.commands import t_client, t_command, t_config  # noqa: E402,F401
