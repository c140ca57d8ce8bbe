"""Random Redis commands for the differential fuzz test (tests/fuzz/test_fuzz.py).

`Gen(rng).<family>()` returns one command (a list of str) of that family: strings, keys, lists,
hashes, sets, zsets or streams.  Every family draws its keys from the same six names, so commands
meet values of other types (WRONGTYPE paths) and multi-key commands meet each other's results
(lex-range commands alone read a seventh key, whose members all score 0: see `zsets`);
values, counts, scores, lex bounds and stream IDs come from small pools that include the edge cases
(bad numbers, infinities, exhausted IDs), so that a few hundred commands reach them.  Stream IDs
are explicit or `ms-*` (never `*`), and the commands whose replies depend on the clock or on
randomness (SPOP, SRANDMEMBER, XINFO CONSUMERS idle times, PEXPIRETIME after a relative EXPIRE, ...)
are left out, so that two servers fed the same commands must give the same replies.
"""

from __future__ import annotations

import random

KEYS = ["k0", "k1", "k2", "k3", "{t}a", "{t}b"]
LEX_KEY = "zlex"


class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.r = rng
        self.ms = 1
        # Inside MULTI the replies come back in EXEC's array, where the comparison cannot mask
        # clock-dependent fields; the generator then leaves out TTL and the idle-time replies.
        self.in_multi = False

    def key(self):
        return self.r.choice(KEYS)

    def val(self):
        r = self.r
        c = r.random()
        if c < 0.3:
            return str(r.randint(-20, 20))
        if c < 0.4:
            return r.choice(["", "0", "-0", "1.5", "1e3", "inf", "-inf", "nan", " 1", "9223372036854775807",
                             "-9223372036854775808", "9223372036854775808", "0x10", "+1", "01", "3.0", "a" * 70])
        return r.choice("abcdefgh") * r.randint(1, 4)

    def num(self, lo=-5, hi=10):
        r = self.r
        if r.random() < 0.05:
            return r.choice(["x", "1.5", "-0", "9223372036854775808", "-9223372036854775809", "", "+3"])
        return str(r.randint(lo, hi))

    def score(self):
        r = self.r
        c = r.random()
        if c < 0.1:
            return r.choice(["-inf", "+inf", "inf", "(1", "(-2", "1.5", "x", "nan", "(", "1e2"])
        return str(r.randint(-5, 5))

    def lex(self):
        return self.r.choice(["-", "+", "[a", "(b", "[c", "(aa", "a", "[", "(", "[dddd"])

    def sid(self):
        r = self.r
        c = r.random()
        if c < 0.1:
            return r.choice(["-", "+", "0", "0-0", "0-1", "18446744073709551615-18446744073709551615",
                             "x", "1-x", "(1", "(0-0", "$", ">", "18446744073709551615"])
        ms = r.randint(0, self.ms + 1)
        if r.random() < 0.3:
            return str(ms)
        return f"{ms}-{r.randint(0, 3)}"

    # --- families -------------------------------------------------------
    def strings(self):
        r, k, v = self.r, self.key, self.val
        c = r.choice(["SET", "GET", "APPEND", "INCR", "INCRBY", "DECRBY", "INCRBYFLOAT", "GETRANGE", "SETRANGE",
                      "STRLEN", "GETDEL", "GETSET", "MGET", "MSET", "MSETNX", "SETNX", "LCS", "SETBIT", "GETBIT",
                      "BITCOUNT", "BITPOS", "BITOP", "BITFIELD", "DECR", "SUBSTR", "GETEX", "SETEX", "PSETEX"])
        if c == "SET":
            a = ["SET", k(), v()]
            for opt in r.sample(["EX 100", "PX 100000", "KEEPTTL", "NX", "XX", "GET", "EX 0", "EXAT 1", "PX -1",
                                 "EX x"], r.randint(0, 2)):
                a += opt.split()
            return a
        if c in ("GET", "INCR", "DECR", "STRLEN", "GETDEL"):
            return [c, k()]
        if c in ("APPEND", "GETSET", "SETNX"):
            return [c, k(), v()]
        if c in ("INCRBY", "DECRBY"):
            return [c, k(), self.num(-100, 100)]
        if c == "INCRBYFLOAT":
            return [c, k(), r.choice(["1.5", "-2", "0.1", "1e2", "x", "inf", "3"])]
        if c in ("GETRANGE", "SUBSTR"):
            return [c, k(), self.num(-5, 5), self.num(-5, 5)]
        if c == "SETRANGE":
            return [c, k(), self.num(0, 10), v()]
        if c == "MGET":
            return [c] + [k() for _ in range(r.randint(1, 3))]
        if c in ("MSET", "MSETNX"):
            a = [c]
            for _ in range(r.randint(1, 3)):
                a += [k(), v()]
            if r.random() < 0.05:
                a.append(k())
            return a
        if c == "LCS":
            a = [c, k(), k()]
            a += r.sample(["LEN", "IDX", "MINMATCHLEN 1", "WITHMATCHLEN"], r.randint(0, 2))
            return " ".join(a).split()
        if c == "SETBIT":
            return [c, k(), self.num(0, 40), r.choice(["0", "1", "2"])]
        if c == "GETBIT":
            return [c, k(), self.num(0, 40)]
        if c == "BITCOUNT":
            a = [c, k()]
            if r.random() < 0.6:
                a += [self.num(-5, 5), self.num(-5, 5)]
                if r.random() < 0.5:
                    a.append(r.choice(["BIT", "BYTE", "bit", "X"]))
            return a
        if c == "BITPOS":
            a = [c, k(), r.choice(["0", "1"])]
            for _ in range(r.randint(0, 2)):
                a.append(self.num(-5, 5))
            if len(a) == 5 and r.random() < 0.5:
                a.append(r.choice(["BIT", "BYTE"]))
            return a
        if c == "BITOP":
            op = r.choice(["AND", "OR", "XOR", "NOT"])
            n = 1 if op == "NOT" and r.random() < 0.8 else r.randint(1, 3)
            return [c, op, k()] + [k() for _ in range(n)]
        if c == "BITFIELD":
            a = [c, k()]
            for _ in range(r.randint(1, 3)):
                t = r.choice(["u8", "i8", "u4", "i16", "u63", "i64", "u64", "x"])
                off = r.choice(["0", "3", "#1", "8"])
                op = r.choice(["GET", "SET", "INCRBY", "OVERFLOW"])
                if op == "GET":
                    a += ["GET", t, off]
                elif op == "OVERFLOW":
                    a += ["OVERFLOW", r.choice(["WRAP", "SAT", "FAIL"])]
                else:
                    a += [op, t, off, self.num(-300, 300)]
            return a
        if c == "GETEX":
            a = [c, k()]
            if r.random() < 0.5:
                a += r.choice([["EX", "100"], ["PERSIST"], ["PX", "0"], ["EX", "x"]])
            return a
        if c in ("SETEX", "PSETEX"):
            return [c, k(), r.choice(["100000", "0", "-1", "x", "9223372036854775807"]), v()]
        raise AssertionError(c)

    def keys(self):
        r, k = self.r, self.key
        c = r.choice(["DEL", "EXISTS", "TYPE", "RENAME", "RENAMENX", "COPY", "EXPIRE", "PERSIST", "OBJECT", "TOUCH",
                      "DBSIZE", "KEYS", "UNLINK", "TTL", "OBJECT", "OBJECT", "MOVE", "SORT", "SORT", "EXPIREAT",
                      "PEXPIREAT", "SWAPDB", "MULTI", "EXEC", "EXEC", "DISCARD",
                      "WATCH", "UNWATCH"])
        if c in ("DEL", "EXISTS", "TOUCH", "UNLINK"):
            return [c] + [k() for _ in range(r.randint(1, 3))]
        if c in ("TYPE", "PERSIST", "TTL"):
            return ["TYPE" if c == "TTL" and self.in_multi else c, k()]
        if c in ("EXPIREAT", "PEXPIREAT"):
            # far in the future, or already past (deletes the key), never about to run out
            when = r.choice(["4102444800", "4102444801", "1", "0", "-5", "x", "9223372036854775807"])
            a = [c, k(), when + ("000" if c == "PEXPIREAT" and when.isdigit() and len(when) > 2 else "")]
            if r.random() < 0.4:
                a.append(r.choice(["NX", "XX", "GT", "LT"]))
            return a
        if c in ("MULTI", "EXEC", "DISCARD", "UNWATCH"):
            if c != "UNWATCH":
                self.in_multi = c == "MULTI"
            return [c]
        if c == "WATCH":
            return [c] + [k() for _ in range(r.randint(1, 2))]
        if c == "SWAPDB":
            return [c, "0", r.choice(["1", "1", "0", "x", "99"])]
        if c in ("RENAME", "RENAMENX"):
            return [c, k(), k()]
        if c == "COPY":
            a = [c, k(), k()]
            if r.random() < 0.5:
                a.append("REPLACE")
            return a
        if c == "EXPIRE":
            a = [c, k(), r.choice(["100", "200", "-1", "x"])]
            if r.random() < 0.5:
                a.append(r.choice(["NX", "XX", "GT", "LT", "nx"]))
            return a
        if c == "OBJECT":
            return [c, "ENCODING", k()]
        if c == "SORT":
            # Only total orders: a hashtable set or a skiplist sorted set loads its elements in its
            # dict's order, which differs between the servers, so ALPHA with a BY pattern (ties
            # keep the load order) and LIMIT on an unsorted (BY nosort) set would differ, and a
            # STORE would carry the difference on.  tests/unit/type/test_sort.py covers those on lists.
            a = [c, k()]
            by = r.choice([None, None, "nosort", "k*", "{t}*->f1"])
            if by is not None:
                a += ["BY", by]
            if by != "nosort" and r.random() < 0.3:
                a += ["LIMIT", self.num(-1, 2), self.num(-1, 3)]
            if r.random() < 0.3:
                a += ["GET", r.choice(["#", "k*", "{t}*->f1"])]
            if r.random() < 0.3:
                a.append("DESC")
            if by in (None, "nosort") and r.random() < 0.5:
                a.append("ALPHA")
            if r.random() < 0.3:
                a += ["STORE", k()]
            return a
        if c == "MOVE":
            return [c, k(), r.choice(["1", "0", "x", "20"])]
        if c == "DBSIZE":
            return [c]
        if c == "KEYS":
            return [c, r.choice(["*", "k*", "k[0-1]", "{t}?", "*b"])]
        raise AssertionError(c)

    def lists(self):
        r, k, v = self.r, self.key, self.val
        c = r.choice(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LPOP", "RPOP", "LRANGE", "LINDEX", "LINSERT", "LLEN",
                      "LREM", "LSET", "LTRIM", "LPOS", "LMOVE", "RPOPLPUSH", "LMPOP"])
        if c in ("LPUSH", "RPUSH", "LPUSHX", "RPUSHX"):
            return [c, k()] + [v() for _ in range(r.randint(1, 4))]
        if c in ("LPOP", "RPOP"):
            a = [c, k()]
            if r.random() < 0.4:
                a.append(self.num(-1, 4))
            return a
        if c == "LRANGE":
            return [c, k(), self.num(-6, 6), self.num(-6, 6)]
        if c == "LINDEX":
            return [c, k(), self.num(-6, 6)]
        if c == "LINSERT":
            return [c, k(), r.choice(["BEFORE", "AFTER", "x"]), v(), v()]
        if c == "LLEN":
            return [c, k()]
        if c == "LREM":
            return [c, k(), self.num(-3, 3), v()]
        if c == "LSET":
            return [c, k(), self.num(-4, 4), v()]
        if c == "LTRIM":
            return [c, k(), self.num(-6, 6), self.num(-6, 6)]
        if c == "LPOS":
            a = [c, k(), v()]
            for opt in r.sample(["RANK", "COUNT", "MAXLEN"], r.randint(0, 2)):
                a += [opt, self.num(-2, 3)]
            return a
        if c == "LMOVE":
            return [c, k(), k(), r.choice(["LEFT", "RIGHT"]), r.choice(["LEFT", "RIGHT", "UP"])]
        if c == "RPOPLPUSH":
            return [c, k(), k()]
        if c == "LMPOP":
            n = r.randint(1, 3)
            a = [c, str(n) if r.random() > 0.05 else "0"] + [k() for _ in range(n)]
            a.append(r.choice(["LEFT", "RIGHT"]))
            if r.random() < 0.5:
                a += ["COUNT", self.num(0, 4)]
            return a
        raise AssertionError(c)

    def hashes(self):
        r, k, v = self.r, self.key, self.val
        f = lambda: r.choice(["f1", "f2", "f3", "f4", "n"])  # noqa: E731
        c = r.choice(["HSET", "HSETNX", "HGET", "HMGET", "HDEL", "HLEN", "HEXISTS", "HINCRBY", "HINCRBYFLOAT",
                      "HKEYS", "HVALS", "HGETALL", "HSTRLEN", "HMSET"])
        if c in ("HSET", "HMSET"):
            a = [c, k()]
            for _ in range(r.randint(1, 3)):
                a += [f(), v()]
            return a
        if c == "HSETNX":
            return [c, k(), f(), v()]
        if c in ("HGET", "HEXISTS", "HSTRLEN"):
            return [c, k(), f()]
        if c in ("HMGET", "HDEL"):
            return [c, k()] + [f() for _ in range(r.randint(1, 3))]
        if c in ("HLEN", "HKEYS", "HVALS", "HGETALL"):
            return [c, k()]
        if c == "HINCRBY":
            return [c, k(), f(), self.num(-100, 100)]
        if c == "HINCRBYFLOAT":
            return [c, k(), f(), r.choice(["1.5", "-2", "0.1", "1e2", "x", "inf", "3"])]
        raise AssertionError(c)

    def sets(self):
        r, k = self.r, self.key
        m = lambda: r.choice(["1", "2", "3", "a", "b", "-1", "10"])  # noqa: E731
        c = r.choice(["SADD", "SREM", "SISMEMBER", "SMISMEMBER", "SCARD", "SMEMBERS", "SINTER", "SUNION", "SDIFF",
                      "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "SMOVE", "SINTERCARD"])
        if c in ("SADD", "SREM", "SMISMEMBER"):
            return [c, k()] + [m() for _ in range(r.randint(1, 4))]
        if c == "SISMEMBER":
            return [c, k(), m()]
        if c in ("SCARD", "SMEMBERS"):
            return [c, k()]
        if c in ("SINTER", "SUNION", "SDIFF"):
            return [c] + [k() for _ in range(r.randint(1, 3))]
        if c.endswith("STORE"):
            return [c, k()] + [k() for _ in range(r.randint(1, 3))]
        if c == "SMOVE":
            return [c, k(), k(), m()]
        if c == "SINTERCARD":
            n = r.randint(1, 3)
            a = [c, str(n)] + [k() for _ in range(n)]
            if r.random() < 0.5:
                a += ["LIMIT", self.num(0, 3)]
            return a
        raise AssertionError(c)

    def zsets(self):
        r, k = self.r, self.key
        m = lambda: r.choice(["a", "b", "c", "d", "e"])  # noqa: E731
        c = r.choice(["ZADD", "ZREM", "ZSCORE", "ZMSCORE", "ZINCRBY", "ZCARD", "ZCOUNT", "ZRANGE", "ZRANGEBYSCORE",
                      "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZRANK", "ZREVRANK", "ZPOPMIN", "ZPOPMAX", "ZUNIONSTORE",
                      "ZINTERSTORE", "ZDIFF", "ZLEXCOUNT", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX",
                      "ZRANGESTORE", "ZMPOP", "ZUNION", "ZINTER", "ZDIFFSTORE", "ZINTERCARD", "ZADDLEX", "ZREMLEX"])
        # Lex ranges read only LEX_KEY, whose members all score 0: over mixed scores Redis's answer
        # depends on its skiplist's random levels, so it is not reproducible.
        if c == "ZADDLEX":
            return ["ZADD", LEX_KEY] + [x for _ in range(r.randint(1, 3)) for x in ("0", m())]
        if c == "ZREMLEX":
            return ["ZREM", LEX_KEY, m()]
        if c == "ZADD":
            a = [c, k()]
            a += r.sample(["NX", "XX", "GT", "LT", "CH", "INCR"], r.choice([0, 0, 1, 2]))
            for _ in range(r.randint(1, 3)):
                a += [self.score() if r.random() < 0.2 else str(r.randint(-3, 3)), m()]
            return a
        if c == "ZREM":
            return [c, k()] + [m() for _ in range(r.randint(1, 3))]
        if c in ("ZSCORE", "ZRANK", "ZREVRANK"):
            return [c, k(), m()]
        if c == "ZMSCORE":
            return [c, k()] + [m() for _ in range(r.randint(1, 3))]
        if c == "ZINCRBY":
            return [c, k(), r.choice(["1", "-2", "1.5", "x", "inf"]), m()]
        if c == "ZCARD":
            return [c, k()]
        if c in ("ZCOUNT", "ZREMRANGEBYSCORE"):
            return [c, k(), self.score(), self.score()]
        if c in ("ZLEXCOUNT", "ZREMRANGEBYLEX"):
            return [c, LEX_KEY, self.lex(), self.lex()]
        if c == "ZREMRANGEBYRANK":
            return [c, k(), self.num(-4, 4), self.num(-4, 4)]
        if c in ("ZRANGE", "ZRANGESTORE"):
            mode = r.choice(["", "BYSCORE", "BYLEX"])
            a = [c] + ([k()] if c == "ZRANGESTORE" else []) + [LEX_KEY if mode == "BYLEX" else k()]
            if mode == "BYSCORE":
                a += [self.score(), self.score(), "BYSCORE"]
            elif mode == "BYLEX":
                a += [self.lex(), self.lex(), "BYLEX"]
            else:
                a += [self.num(-4, 4), self.num(-4, 4)]
            if r.random() < 0.3:
                a.append("REV")
            if r.random() < 0.3:
                a += ["LIMIT", self.num(-1, 2), self.num(-1, 3)]
            if c == "ZRANGE" and r.random() < 0.4:
                a.append("WITHSCORES")
            return a
        if c in ("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"):
            a = [c, k(), self.score(), self.score()]
            if r.random() < 0.4:
                a.append("WITHSCORES")
            if r.random() < 0.3:
                a += ["LIMIT", self.num(-1, 2), self.num(-1, 3)]
            return a
        if c == "ZRANGEBYLEX":
            a = [c, LEX_KEY, self.lex(), self.lex()]
            if r.random() < 0.3:
                a += ["LIMIT", self.num(-1, 2), self.num(-1, 3)]
            return a
        if c in ("ZPOPMIN", "ZPOPMAX"):
            a = [c, k()]
            if r.random() < 0.5:
                a.append(self.num(-1, 3))
            return a
        if c in ("ZUNIONSTORE", "ZINTERSTORE", "ZUNION", "ZINTER", "ZDIFF", "ZDIFFSTORE", "ZINTERCARD"):
            n = r.randint(1, 3)
            a = [c] + ([k()] if c.endswith("STORE") else []) + [str(n)] + [k() for _ in range(n)]
            if c in ("ZUNIONSTORE", "ZINTERSTORE", "ZUNION", "ZINTER"):
                if r.random() < 0.3:
                    a += ["WEIGHTS"] + [r.choice(["1", "2", "-1", "0.5", "x"]) for _ in range(n)]
                if r.random() < 0.3:
                    a += ["AGGREGATE", r.choice(["SUM", "MIN", "MAX", "x"])]
            if c in ("ZUNION", "ZINTER", "ZDIFF") and r.random() < 0.4:
                a.append("WITHSCORES")
            if c == "ZINTERCARD" and r.random() < 0.4:
                a += ["LIMIT", self.num(0, 3)]
            return a
        if c == "ZMPOP":
            n = r.randint(1, 3)
            a = [c, str(n)] + [k() for _ in range(n)] + [r.choice(["MIN", "MAX"])]
            if r.random() < 0.5:
                a += ["COUNT", self.num(0, 3)]
            return a
        raise AssertionError(c)

    def streams(self):
        r, k = self.r, self.key
        c = r.choice(["XADD", "XADD", "XADD", "XDEL", "XLEN", "XRANGE", "XREVRANGE", "XTRIM", "XGROUP", "XREADGROUP",
                      "XACK", "XPENDING", "XREAD", "XSETID", "XINFO", "XAUTOCLAIM", "XCLAIM", "MEMORY"])
        if c == "MEMORY" and self.in_multi:  # compared for streams only, which EXEC's reply cannot tell
            c = "XLEN"
        if c == "XADD":
            a = [c, k()]
            if r.random() < 0.1:
                a.append("NOMKSTREAM")
            if r.random() < 0.2:
                a += [r.choice(["MAXLEN", "MINID"]), r.choice(["=", "~", ""])]
                a.append(self.num(0, 6) if a[-2] == "MAXLEN" else self.sid())
                if a[-2] == "~" and r.random() < 0.3:
                    a += ["LIMIT", self.num(0, 5)]
                a = [x for x in a if x != ""]
            if r.random() < 0.5:
                self.ms += r.randint(0, 1)
                ident = f"{self.ms}-*" if r.random() < 0.3 else f"{self.ms}-{r.randint(0, 5)}"
            else:
                ident = self.sid()
            a.append(ident)
            for _ in range(r.randint(1, 2)):
                a += [r.choice(["f", "g", "h"]), self.val()]
            return a
        if c == "XDEL":
            return [c, k()] + [self.sid() for _ in range(r.randint(1, 3))]
        if c == "XLEN":
            return [c, k()]
        if c in ("XRANGE", "XREVRANGE"):
            a = [c, k(), self.sid(), self.sid()]
            if r.random() < 0.4:
                a += ["COUNT", self.num(-1, 4)]
            return a
        if c == "XTRIM":
            a = [c, k(), r.choice(["MAXLEN", "MINID"])]
            if r.random() < 0.5:
                a.append(r.choice(["=", "~"]))
            a.append(self.num(0, 6) if a[2] == "MAXLEN" else self.sid())
            if a[-2] == "~" and r.random() < 0.3:
                a += ["LIMIT", self.num(0, 5)]
            return a
        g = lambda: r.choice(["g1", "g2"])  # noqa: E731
        cons = lambda: r.choice(["c1", "c2"])  # noqa: E731
        if c == "XGROUP":
            sub = r.choice(["CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"])
            if sub == "CREATE":
                a = [c, sub, k(), g(), r.choice(["$", "0", self.sid()])]
                if r.random() < 0.3:
                    a.append("MKSTREAM")
                if r.random() < 0.3:
                    a += ["ENTRIESREAD", self.num(-1, 5)]
                return a
            if sub == "SETID":
                a = [c, sub, k(), g(), r.choice(["$", "0", self.sid()])]
                if r.random() < 0.3:
                    a += ["ENTRIESREAD", self.num(-1, 5)]
                return a
            if sub == "DESTROY":
                return [c, sub, k(), g()]
            return [c, sub, k(), g(), cons()]
        if c == "XREADGROUP":
            a = [c, "GROUP", g(), cons()]
            if r.random() < 0.5:
                a += ["COUNT", self.num(0, 3)]
            if r.random() < 0.2:
                a.append("NOACK")
            n = r.randint(1, 2)
            ks = [k() for _ in range(n)]
            a += ["STREAMS"] + ks + [r.choice([">", ">", "0", self.sid()]) for _ in range(n)]
            return a
        if c == "XACK":
            return [c, k(), g()] + [self.sid() for _ in range(r.randint(1, 3))]
        if c == "XPENDING":
            a = [c, k(), g()]
            if not self.in_multi and r.random() < 0.5:  # extended: the comparison masks its idle times
                if r.random() < 0.3:
                    a += ["IDLE", r.choice(["0", "100000", "x"])]
                a += [self.sid(), self.sid(), self.num(0, 5)]
                if r.random() < 0.5:
                    a.append(cons())
            return a
        if c == "XREAD":
            a = [c]
            if r.random() < 0.5:
                a += ["COUNT", self.num(0, 3)]
            n = r.randint(1, 2)
            a += ["STREAMS"] + [k() for _ in range(n)] + [self.sid().replace("+", "$") for _ in range(n)]
            return a
        if c == "XSETID":
            a = [c, k(), self.sid()]
            if r.random() < 0.3:
                a += ["ENTRIESADDED", self.num(0, 20)]
            if r.random() < 0.3:
                a += ["MAXDELETEDID", self.sid()]
            return a
        if c == "MEMORY":
            return ["MEMORY", "USAGE", k()] + (["SAMPLES", r.choice(["0", "1", "2"])] if r.random() < 0.4 else [])
        if c == "XINFO":
            sub = r.choice(["STREAM", "GROUPS"] if self.in_multi else ["STREAM", "GROUPS", "CONSUMERS", "FULL"])
            if sub == "FULL":  # delivery and seen times: masked by the comparison, so not inside MULTI
                return [c, "STREAM", k(), "FULL"] + (["COUNT", self.num(0, 3)] if r.random() < 0.5 else [])
            return [c, sub, k()] + ([g()] if sub == "CONSUMERS" else [])
        if c == "XAUTOCLAIM":
            a = [c, k(), g(), cons(), r.choice(["0", "0", "100000", "x"]), self.sid()]
            if r.random() < 0.5:
                a += ["COUNT", self.num(0, 3)]
            if r.random() < 0.3:
                a.append("JUSTID")
            return a
        if c == "XCLAIM":
            a = [c, k(), g(), cons(), r.choice(["0", "0", "100000", "-1"])] + [self.sid() for _ in range(r.randint(1, 2))]
            for opt in r.sample(["JUSTID", "FORCE", "RETRYCOUNT", "LASTID"], r.randint(0, 2)):
                a.append(opt)
                if opt == "RETRYCOUNT":
                    a.append(self.num(-1, 5))
                elif opt == "LASTID":
                    a.append(self.sid())
            return a
        raise AssertionError(c)

    def blocking(self):
        """A blocking command over the shared keys, for tests/fuzz/test_fuzz.py's blocked clients: pops,
        moves and stream reads that wait forever (or 1000 s) when they find nothing."""
        r, k = self.r, self.key
        c = r.choice(["BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
                      "XREAD", "XREADGROUP", "XREADGROUP"])
        if c in ("BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"):
            return [c] + [k() for _ in range(r.randint(1, 3))] + [r.choice(["0", "0", "1000"])]
        if c == "BLMOVE":
            return [c, k(), k(), r.choice(["LEFT", "RIGHT"]), r.choice(["LEFT", "RIGHT"]), "0"]
        if c == "BRPOPLPUSH":
            return [c, k(), k(), "0"]
        if c in ("BLMPOP", "BZMPOP"):
            n = r.randint(1, 3)
            a = [c, "0", str(n)] + [k() for _ in range(n)]
            a.append(r.choice(["LEFT", "RIGHT"]) if c == "BLMPOP" else r.choice(["MIN", "MAX"]))
            if r.random() < 0.5:
                a += ["COUNT", str(r.randint(1, 3))]
            return a
        keys = [k() for _ in range(r.randint(1, 2))]
        if c == "XREAD":
            a = [c] + (["COUNT", str(r.randint(1, 3))] if r.random() < 0.5 else [])
            return a + ["BLOCK", "0", "STREAMS"] + keys + [r.choice(["$", "$", "0", f"{self.ms}-0"]) for _ in keys]
        a = [c, "GROUP", r.choice(["g1", "g2"]), r.choice(["c1", "c2", "c3"])]
        if r.random() < 0.5:
            a += ["COUNT", str(r.randint(1, 3))]
        if r.random() < 0.2:
            a.append("NOACK")
        return a + ["BLOCK", "0", "STREAMS"] + keys + [">" if r.random() < 0.9 else "0" for _ in keys]

    def waking(self):
        """A command for the writer that faces blocked clients: mostly lists, zsets and streams
        (what wakes them), and the ways waiters are disturbed: deletes, type changes, group
        creation and destruction, SWAPDB, FLUSHDB, transactions."""
        r = self.r
        if r.random() < 0.1:
            k = self.key()
            a = r.choice([["XGROUP", "CREATE", k, r.choice(["g1", "g2"]), r.choice(["$", "0"]), "MKSTREAM"],
                          ["DEL", k], ["XGROUP", "DESTROY", k, "g1"], ["SWAPDB", "0", "1"], ["FLUSHDB"],
                          ["SET", k, "x"], ["MULTI"], ["EXEC"], ["EXEC"]])
            if a[0] in ("MULTI", "EXEC"):
                self.in_multi = a[0] == "MULTI"
            return a
        return getattr(self, r.choice(["lists", "lists", "zsets", "zsets", "streams", "streams", "keys", "strings",
                                       "sets"]))()


FAMILIES = ["strings", "keys", "lists", "hashes", "sets", "zsets", "streams"]
