# Declarations for compiling t_zset.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
# ZADD and ZCARD, which job queues' scripts call most, hold their client, server and database
# typed (server/base/fields.pxd, storage/keyspace.pxd) and their sorted set as the ZSet extension
# type, and ZADD adds through zset_add (storage/zset.pxd): C calls and C struct fields, as the hash
# handlers have them.  A score of plain digits is read in C (server/base/numparse.pxd).  They are
# registered with command() after their definitions because a cpdef function takes no decorator.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.base.numparse cimport digits_value
from raxdb.server.events.keyaccess cimport lookup_or_create, lookup_read, lookup_write, modified, notify, written
from raxdb.server.table.args cimport option_word, to_int
from raxdb.storage.keyspace cimport Database
from raxdb.storage.zset cimport ZSet, zset_add


cpdef get_zset(ClientFields c, key, write=*)

# A score argument (ZADD's options path, GEOADD's coordinates: t_geo.pxd cimports it), a C double.
cpdef double parse_score(arg, err=*) except? -1.0

@cython.locals(zs=ZSet, srv=ServerFields, v=cython.longlong, score=cython.double, out=cython.long,
               max_entries=Py_ssize_t, max_value=Py_ssize_t)
cpdef zadd(ClientFields c, argv)

# The add core ZADD's options, ZINCRBY and GEOADD share: the same C calls, over a typed loop.
@cython.locals(zs=ZSet, db=Database, k=Py_ssize_t, added=Py_ssize_t, updated=Py_ssize_t, out=cython.long,
               score=cython.double, max_entries=Py_ssize_t, max_value=Py_ssize_t, processed=bint, srv=ServerFields)
cpdef zadd_scored(ClientFields c, key, list scores, list members, long flags, bint ch)

@cython.locals(zs=ZSet)
cpdef zcard(ClientFields c, argv)

# ZRANGEBYSCORE's path (a job queue's look for due jobs): the range parsing, the range and the
# reply are C calls from the handlers.
@cython.locals(whole=cython.longlong)
cpdef _range_bound(arg)

cpdef parse_score_range(lo, hi)

cpdef score_range(zs, r, reverse, offset=*, limit=*, texts=*)

cpdef pairs_reply(c, pairs, withscores)

@cython.locals(n=Py_ssize_t, j=Py_ssize_t)
cpdef zrange_generic(c, argv, Py_ssize_t key_idx, dst, rangetype, reverse)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef zincrby(ClientFields c, argv)
cpdef zscore(ClientFields c, argv)
cpdef zmscore(ClientFields c, argv)
cpdef zrank(ClientFields c, argv)
cpdef zrevrank(ClientFields c, argv)
cpdef zcount(ClientFields c, argv)
cpdef zrange(ClientFields c, argv)
cpdef zrangestore(ClientFields c, argv)
cpdef zrevrange(ClientFields c, argv)
cpdef zrangebyscore(ClientFields c, argv)
cpdef zrevrangebyscore(ClientFields c, argv)
cpdef zrem(ClientFields c, argv)
cpdef zpopmin(ClientFields c, argv)
cpdef zscan(ClientFields c, argv)
cpdef zlexcount(ClientFields c, argv)
cpdef zrangebylex(ClientFields c, argv)
cpdef zrevrangebylex(ClientFields c, argv)
cpdef zremrangebyrank(ClientFields c, argv)
cpdef zremrangebyscore(ClientFields c, argv)
cpdef zremrangebylex(ClientFields c, argv)
cpdef zpopmax(ClientFields c, argv)
cpdef zmpop(ClientFields c, argv)
cpdef bzpopmin(ClientFields c, argv)
cpdef bzpopmax(ClientFields c, argv)
cpdef bzmpop(ClientFields c, argv)
cpdef zunion(ClientFields c, argv)
cpdef zinter(ClientFields c, argv)
cpdef zdiff(ClientFields c, argv)
cpdef zunionstore(ClientFields c, argv)
cpdef zinterstore(ClientFields c, argv)
cpdef zdiffstore(ClientFields c, argv)
cpdef zintercard(ClientFields c, argv)
cpdef zrandmember(ClientFields c, argv)
