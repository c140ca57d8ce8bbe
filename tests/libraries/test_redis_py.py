"""redis-py against raxdb, as applications use it: sync and asyncio, RESP2 and RESP3.

Pipelines with and without MULTI, WATCH-based optimistic locking, Lock, register_script, pub/sub
with get_message and listen, streams helpers, CLIENT SETINFO on connect, connection pools and
health checks.  Every assertion is on what the library hands back, so a reply shape the library
does not expect fails here even when the bytes look plausible.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
import redis
import redis.asyncio as aredis


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def rc(request, raxdb):
    client = redis.Redis(port=raxdb.port, protocol=request.param, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
async def arc(request, raxdb):
    client = aredis.Redis(port=raxdb.port, protocol=request.param, decode_responses=True)
    await client.flushall()
    yield client
    await client.aclose()


# ---- sync ---------------------------------------------------------------------------------------

def test_basic_types(rc):
    assert rc.set("s", "v", ex=100) is True
    assert rc.get("s") == "v"
    assert rc.incrby("n", 5) == 5
    assert rc.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert rc.hgetall("h") == {"a": "1", "b": "2"}
    assert rc.rpush("l", "x", "y") == 2
    assert rc.lrange("l", 0, -1) == ["x", "y"]
    assert rc.sadd("set", "m1", "m2") == 2
    assert rc.smembers("set") == {"m1", "m2"}
    assert rc.zadd("z", {"a": 1.5, "b": 2}) == 2
    # redis-py gives pairs as tuples in RESP2 and as lists in RESP3, against Redis too
    assert [tuple(p) for p in rc.zrange("z", 0, -1, withscores=True)] == [("a", 1.5), ("b", 2.0)]
    assert rc.zscore("z", "a") == 1.5
    assert rc.ttl("s") == 100
    assert rc.exists("s", "nope") == 1
    assert rc.type("h") == "hash"


def test_pipeline_without_transaction(rc):
    with rc.pipeline(transaction=False) as p:
        p.set("a", 1).incr("a").get("a").lpush("a", "x")
        result = p.execute(raise_on_error=False)
    assert result[:3] == [True, 2, "2"]
    assert isinstance(result[3], redis.ResponseError)


def test_pipeline_transaction(rc):
    with rc.pipeline() as p:
        p.set("a", 1).incr("a").hset("h", "f", "v").hgetall("h")
        assert p.execute() == [True, 2, 1, {"f": "v"}]
    with rc.pipeline() as p:
        p.set("b", "x").incr("b").get("b")
        with pytest.raises(redis.ResponseError):
            p.execute()
    assert rc.get("b") == "x"  # runtime errors do not roll back


def test_watch_optimistic_locking(rc, raxdb):
    rc.set("balance", 100)
    other = redis.Redis(port=raxdb.port)

    def withdraw(pipe: redis.client.Pipeline) -> None:
        balance = int(pipe.get("balance"))
        if not hasattr(withdraw, "interfered"):
            withdraw.interfered = True  # type: ignore[attr-defined]
            other.incrby("balance", 50)  # a concurrent write between WATCH and EXEC
        pipe.multi()
        pipe.set("balance", balance - 30)

    rc.transaction(withdraw, "balance")
    assert rc.get("balance") == "120"
    other.close()


def test_lock(rc):
    lock = rc.lock("res", timeout=5, blocking=False)
    assert lock.acquire()
    assert not rc.lock("res", blocking=False).acquire()
    assert lock.locked() and lock.owned()
    lock.extend(10)
    lock.release()
    assert not lock.locked()


def test_register_script(rc):
    script = rc.register_script("return {KEYS[1], ARGV[1], redis.call('incr', KEYS[1])}")
    assert script(keys=["k"], args=["a"]) == ["k", "a", 1]
    rc.script_flush()
    assert script(keys=["k"], args=["b"]) == ["k", "b", 2]
    assert rc.script_exists(script.sha) == [True]


def test_pubsub_get_message(rc):
    p = rc.pubsub()
    p.subscribe("chan")
    p.psubscribe("ch*")
    assert p.get_message(timeout=5) == {"type": "subscribe", "pattern": None, "channel": "chan", "data": 1}
    assert p.get_message(timeout=5)["type"] == "psubscribe"
    assert rc.publish("chan", "hello") == 2
    msgs = [p.get_message(timeout=5), p.get_message(timeout=5)]
    assert {(m["type"], m["channel"], m["data"]) for m in msgs} == {("message", "chan", "hello"),
                                                                       ("pmessage", "chan", "hello")}
    assert rc.pubsub_numsub("chan") == [("chan", 1)]
    assert rc.pubsub_numpat() == 1
    p.close()


def test_pubsub_listen_in_thread(rc, raxdb):
    p = rc.pubsub(ignore_subscribe_messages=True)
    p.subscribe("events")
    got = []
    done = threading.Event()

    def reader():
        for m in p.listen():
            if m["type"] == "message":
                got.append(m["data"])
                if m["data"] == "stop":
                    done.set()
                    return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    while rc.pubsub_numsub("events") != [("events", 1)]:
        pass
    for word in ("a", "b", "stop"):
        rc.publish("events", word)
    assert done.wait(10)
    assert got == ["a", "b", "stop"]
    p.close()


def test_pubsub_health_check_while_subscribed(raxdb):
    for protocol in (2, 3):
        client = redis.Redis(port=raxdb.port, protocol=protocol, health_check_interval=1)
        p = client.pubsub()
        p.subscribe("hc")
        assert p.get_message(timeout=5)["type"] == "subscribe"
        p.check_health()  # PING inside the subscribed context, answered as Redis does
        client.publish("hc", "x")
        msg = None
        while msg is None or msg["type"] != "message":
            msg = p.get_message(timeout=5)
        assert msg["data"] == b"x"
        p.close()
        client.close()


def test_streams_helpers(rc):
    i1 = rc.xadd("st", {"f": "v1"})
    i2 = rc.xadd("st", {"f": "v2"}, maxlen=100, approximate=True)
    assert rc.xlen("st") == 2
    assert [e[0] for e in rc.xrange("st")] == [i1, i2]
    rc.xgroup_create("st", "g", id="0")
    read = rc.xreadgroup("g", "c1", {"st": ">"}, count=10)
    if isinstance(read, dict):  # RESP3
        entries = read["st"][0]
    else:
        entries = read[0][1]
    assert [e[1] for e in entries] == [{"f": "v1"}, {"f": "v2"}]
    assert rc.xack("st", "g", i1) == 1
    pending = rc.xpending("st", "g")
    assert pending["pending"] == 1
    assert rc.xinfo_groups("st")[0]["name"] == "g"


def test_client_setinfo_on_connect():
    """redis-py's connect sends CLIENT SETINFO: a 7.2 server (compat-version 7.2) keeps what it says."""
    import raxdb

    with raxdb.serve({"compat-version": "7.2"}, mode="thread") as srv:
        client = redis.Redis(port=srv.port)
        info = client.client_info()
        assert info["lib-name"].startswith("redis-py")
        assert info["lib-ver"] == redis.__version__
        client.close()


def test_connection_pool_shared_across_threads(raxdb):
    pool = redis.ConnectionPool(port=raxdb.port, max_connections=4)
    client = redis.Redis(connection_pool=pool)
    client.delete("pooled")
    errors = []

    def worker():
        try:
            for _ in range(50):
                client.incr("pooled")
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert client.get("pooled") == b"200"
    assert 1 <= len(pool._available_connections) <= 4
    pool.disconnect()


def test_health_check_interval_pings_idle_connections(raxdb):
    client = redis.Redis(port=raxdb.port, health_check_interval=1)
    client.set("hc", "1")
    conn = client.connection_pool.get_connection()
    conn.next_health_check = 0  # as if idle past the interval: the next command PINGs first
    client.connection_pool.release(conn)
    assert client.get("hc") == b"1"
    client.close()


# ---- asyncio ------------------------------------------------------------------------------------

async def test_async_pipeline_and_transaction(arc):
    async with arc.pipeline(transaction=True) as p:
        p.set("a", "1")
        p.incr("a")
        p.hset("h", mapping={"x": "1"})
        p.hgetall("h")
        assert await p.execute() == [True, 2, 1, {"x": "1"}]
    async with arc.pipeline(transaction=False) as p:
        p.get("a")
        p.exists("a", "b")
        assert await p.execute() == ["2", 1]


async def test_async_watch(arc, raxdb):
    await arc.set("v", 1)
    other = aredis.Redis(port=raxdb.port)
    async with arc.pipeline() as p:
        await p.watch("v")
        await other.set("v", 2)
        p.multi()
        p.set("v", 3)
        with pytest.raises(redis.WatchError):
            await p.execute()
    assert await arc.get("v") == "2"
    await other.aclose()


async def test_async_pubsub(arc):
    p = arc.pubsub()
    await p.subscribe("ach")
    msg = await p.get_message(timeout=5)
    assert msg["type"] == "subscribe"
    assert await arc.publish("ach", "hi") == 1
    while True:
        msg = await p.get_message(timeout=5)
        if msg and msg["type"] == "message":
            break
    assert msg["data"] == "hi"
    await p.aclose()


async def test_async_lock_and_script(arc):
    lock = arc.lock("alock", timeout=5)
    assert await lock.acquire(blocking=False)
    assert not await arc.lock("alock").acquire(blocking=False)
    await lock.release()
    script = arc.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert await script(keys=["n"], args=[3]) == 3
    await arc.script_flush()
    assert await script(keys=["n"], args=[3]) == 6


async def test_async_concurrent_clients(arc, raxdb):
    clients = [aredis.Redis(port=raxdb.port) for _ in range(5)]
    await asyncio.gather(*(c.incr("shared") for c in clients for _ in range(20)))
    assert await arc.get("shared") == "100"
    for c in clients:
        await c.aclose()
