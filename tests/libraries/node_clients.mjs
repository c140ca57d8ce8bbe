// ioredis and node-redis against a server on PORT (argv[2]), as applications use them:
// connect, commands, pipeline, MULTI, pub/sub, Lua (defineCommand / defineScript), streams,
// node-redis's client-side cache (CLIENT TRACKING).
// Prints "ok <check>" per passing check; any failure prints the error and exits 1.
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createClient, defineScript } from "redis";

const port = Number(process.argv[2]);

async function ioredisChecks() {
  const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  await r.flushall();
  assert.equal(await r.set("k", "v"), "OK");
  assert.equal(await r.get("k"), "v");
  assert.deepEqual(await r.hgetall("nohash"), {});
  await r.hset("h", { a: "1", b: "2" });
  assert.deepEqual(await r.hgetall("h"), { a: "1", b: "2" });
  console.log("ok ioredis basic");

  const results = await r.pipeline().set("p", "1").incr("p").get("p").lpush("p", "x").exec();
  assert.deepEqual(results.slice(0, 3), [[null, "OK"], [null, 2], [null, "2"]]);
  assert.match(String(results[3][0]), /WRONGTYPE/);
  console.log("ok ioredis pipeline");

  const tx = await r.multi().set("m", "1").incr("m").exec();
  assert.deepEqual(tx, [[null, "OK"], [null, 2]]);
  await r.watch("m");
  const other = new Redis({ port });
  await other.set("m", "changed");
  assert.equal(await r.multi().set("m", "mine").exec(), null);  // WATCH fired
  assert.equal(await r.get("m"), "changed");
  console.log("ok ioredis multi/watch");

  r.defineCommand("incrTwice", {
    numberOfKeys: 1,
    lua: "redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[1])",
  });
  assert.equal(await r.incrTwice("ctr"), 2);
  await r.script("FLUSH");
  assert.equal(await r.incrTwice("ctr"), 4);  // NOSCRIPT -> EVAL fallback
  console.log("ok ioredis defineCommand");

  const sub = new Redis({ port });
  const received = new Promise((resolve) => {
    sub.on("message", (channel, message) => resolve([channel, message]));
  });
  await sub.subscribe("news");
  assert.equal(await other.publish("news", "hello"), 1);
  assert.deepEqual(await received, ["news", "hello"]);
  const preceived = new Promise((resolve) => {
    sub.on("pmessage", (pattern, channel, message) => resolve([pattern, channel, message]));
  });
  await sub.psubscribe("n*");
  await other.publish("nope", "hi");
  assert.deepEqual(await preceived, ["n*", "nope", "hi"]);
  console.log("ok ioredis pubsub");

  const id1 = await r.xadd("st", "*", "f", "v1");
  await r.xadd("st", "MAXLEN", "~", "100", "*", "f", "v2");
  assert.equal(await r.xlen("st"), 2);
  await r.xgroup("CREATE", "st", "g", "0");
  const read = await r.xreadgroup("GROUP", "g", "c", "COUNT", "10", "STREAMS", "st", ">");
  assert.deepEqual(read[0][1].map((e) => e[1]), [["f", "v1"], ["f", "v2"]]);
  assert.equal(await r.xack("st", "g", id1), 1);
  console.log("ok ioredis streams");

  sub.disconnect();
  other.disconnect();
  r.disconnect();
}

async function nodeRedisChecks(resp) {
  const incrBy = defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: "return redis.call('INCRBY', KEYS[1], ARGV[1])",
    parseCommand(parser, key, n) {
      parser.pushKey(key);
      parser.push(String(n));
    },
    transformReply(reply) { return reply; },
  });
  const c = createClient({ socket: { port }, RESP: resp, scripts: { incrBy } });
  c.on("error", (e) => { throw e; });
  await c.connect();
  await c.flushAll();
  assert.equal(await c.set("k", "v"), "OK");
  assert.equal(await c.get("k"), "v");
  await c.hSet("h", { a: "1" });
  const h = await c.hGetAll("h");
  assert.equal(h.a ?? h.get?.("a"), "1");
  console.log(`ok node-redis basic resp${resp}`);

  const multi = await c.multi().set("m", "1").incr("m").get("m").exec();
  assert.deepEqual(multi, ["OK", 2, "2"]);
  const pipe = await c.multi().set("p", "x").get("p").execAsPipeline();
  assert.deepEqual(pipe, ["OK", "x"]);
  console.log(`ok node-redis multi/pipeline resp${resp}`);

  assert.equal(await c.incrBy("n", 5), 5);
  await c.scriptFlush();
  assert.equal(await c.incrBy("n", 5), 10);  // EVALSHA -> NOSCRIPT -> EVAL
  console.log(`ok node-redis scripts resp${resp}`);

  const sub = c.duplicate();
  await sub.connect();
  const got = new Promise((resolve) => {
    sub.subscribe("chan", (message, channel) => resolve([channel, message]));
  });
  while ((await c.pubSubNumSub("chan")).chan !== 1) { /* until the subscription is registered */ }
  assert.equal(await c.publish("chan", "hi"), 1);
  assert.deepEqual(await got, ["chan", "hi"]);
  console.log(`ok node-redis pubsub resp${resp}`);

  await c.xAdd("st", "*", { f: "v" });
  const entries = await c.xRange("st", "-", "+");
  assert.equal(entries.length, 1);
  assert.equal(entries[0].message.f, "v");
  console.log(`ok node-redis streams resp${resp}`);

  await sub.quit();
  await c.quit();
}

async function nodeRedisCacheChecks() {
  // clientSideCache: CLIENT TRACKING ON at connect, reads cached, invalidation pushes obeyed.
  const c = createClient({ socket: { port }, RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  const w = createClient({ socket: { port } });
  c.on("error", (e) => { throw e; });
  await c.connect();
  await w.connect();
  const cache = c.clientSideCache;
  await w.set("cached", "1");
  assert.equal(await c.get("cached"), "1");
  assert.equal(await c.get("cached"), "1");
  assert.equal(cache.stats().hitCount, 1);  // the second GET never reached the server
  const invalidated = new Promise((resolve) => cache.once("invalidate", resolve));
  await w.set("cached", "2");
  assert.equal(String(await invalidated), "cached");
  assert.equal(await c.get("cached"), "2");
  const flushed = new Promise((resolve) => cache.once("invalidate", resolve));
  await w.flushAll();
  assert.equal(await flushed, null);  // FLUSHALL: every key
  assert.equal(await c.get("cached"), null);
  console.log("ok node-redis client-side cache");
  await w.quit();
  await c.quit();
}

try {
  await ioredisChecks();
  await nodeRedisChecks(2);
  await nodeRedisChecks(3);
  await nodeRedisCacheChecks();
  console.log("done");
  process.exit(0);
} catch (e) {
  console.error("FAILED:", e);
  process.exit(1);
}
