// Redis 7.4's hash field expiration as ioredis and node-redis send it, against a server on PORT
// (argv[2]) started with compat-version 7.4 (tests/libraries/test_hfe_clients.py): a session-store
// pattern (a hash per user, a field per session with its own TTL), then the field expiring on the
// server's clock (DEBUG CLOCK ADVANCE: the server is started with raxdb's test controls).
// Prints "ok <check>" per passing check; any failure prints the error and exits 1.
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);

async function ioredisChecks() {
  const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  await r.flushall();
  await r.hset("user:1:sessions", { s1: "tok1", s2: "tok2", s3: "tok3" });
  assert.deepEqual(await r.hexpire("user:1:sessions", 60, "FIELDS", 2, "s1", "nope"), [1, -2]);
  assert.deepEqual(await r.hpexpire("user:1:sessions", 120000, "NX", "FIELDS", 2, "s1", "s2"), [0, 1]);
  assert.deepEqual(await r.httl("user:1:sessions", "FIELDS", 3, "s1", "s2", "s3"), [60, 120, -1]);
  assert.deepEqual(await r.hpersist("user:1:sessions", "FIELDS", 1, "s2"), [1]);
  assert.equal(await r.call("OBJECT", "ENCODING", "user:1:sessions"), "listpackex");
  await r.call("DEBUG", "CLOCK", "ADVANCE", "61");
  assert.deepEqual(await r.hgetall("user:1:sessions"), { s2: "tok2", s3: "tok3" });
  assert.deepEqual(await r.hexpire("user:1:sessions", 0, "FIELDS", 2, "s2", "s3"), [2, 2]);
  assert.equal(await r.exists("user:1:sessions"), 0);
  console.log("ok ioredis hexpire");
  r.disconnect();
}

async function nodeRedisChecks(RESP) {
  const c = createClient({ socket: { port }, RESP });
  await c.connect();
  await c.flushAll();
  await c.hSet("rate:ip", { hits: "1", burst: "5" });
  assert.deepEqual(await c.hExpire("rate:ip", ["hits", "none"], 10), [1, -2]);
  assert.deepEqual(await c.hExpire("rate:ip", "hits", 5, "GT"), [0]);
  assert.deepEqual(await c.hTTL("rate:ip", ["hits", "burst"]), [10, -1]);
  assert.equal(await c.hIncrBy("rate:ip", "hits", 1), 2);
  assert.deepEqual(await c.hTTL("rate:ip", "hits"), [10]);
  await c.sendCommand(["DEBUG", "CLOCK", "ADVANCE", "11"]);
  assert.equal(await c.hGet("rate:ip", "hits"), null);
  assert.deepEqual(await c.hKeys("rate:ip"), ["burst"]);
  console.log(`ok node-redis hExpire resp${RESP}`);
  await c.quit();
}

try {
  await ioredisChecks();
  await nodeRedisChecks(2);
  await nodeRedisChecks(3);
} catch (err) {
  console.error(err);
  process.exit(1);
}
