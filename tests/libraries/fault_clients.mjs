// ioredis and node-redis against raxdb's faults on demand (DEBUG FAULT, docs/testing-your-code.md#faults),
// on a server on PORT (argv[2]) started with raxdb-test-controls yes: what each library does when
// its connection is dropped, when connecting is refused for a while, and when a command meets
// -LOADING or -TRYAGAIN.  The faults are armed from a second connection (`ctl`), as a test would.
// Prints "ok <check>" per passing check; any failure prints the error and exits 1.
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const fault = (ctl, ...args) => ctl.call("DEBUG", "FAULT", ...args);
// the next `name` event (events.once would reject on the "error" a lost connection emits first)
const next = (emitter, name) => new Promise((resolve) => emitter.once(name, resolve));

async function ioredisChecks(ctl) {
  let attempts = 0;
  // retryStrategy: how long to wait before each reconnection attempt (here a short fixed backoff)
  const r = new Redis({ port, retryStrategy: (times) => { attempts = times; return 20; } });
  r.on("error", () => {});  // a refused reconnection is reported here, then retried
  const id = await r.client("ID");
  const reconnecting = next(r, "reconnecting");
  assert.equal(await fault(ctl, "DROP", "ID", String(id)), 1);
  await reconnecting;
  assert.equal(await r.set("k", "after-drop"), "OK");  // queued while reconnecting, then sent
  assert.notEqual(await r.client("ID"), id);
  console.log("ok ioredis reconnects after a drop");

  attempts = 0;
  assert.equal(await fault(ctl, "REFUSE", "FOR", "0.3"), "OK");
  const again = next(r, "reconnecting");
  await fault(ctl, "DROP", "ID", String(await r.client("ID")));
  await again;
  assert.equal(await r.get("k"), "after-drop");  // once the server listens again
  assert.ok(attempts > 1, `refused attempts retried: ${attempts}`);
  console.log("ok ioredis retries refused connections");

  await fault(ctl, "ERROR", "LOADING", "COUNT", "1");
  await assert.rejects(r.get("k"), /^ReplyError: LOADING Redis is loading the dataset in memory/);
  assert.equal(await r.get("k"), "after-drop");  // ioredis does not retry LOADING: the caller does
  await fault(ctl, "ERROR", "TRYAGAIN", "COUNT", "1");
  await assert.rejects(r.mget("a", "b"), /^ReplyError: TRYAGAIN/);  // retried by ioredis's Cluster only
  console.log("ok ioredis surfaces LOADING and TRYAGAIN");
  r.disconnect();
}

async function nodeRedisChecks(ctl) {
  let attempts = 0;
  const c = createClient({ socket: { port, reconnectStrategy: (retries) => { attempts = retries; return 20; } } });
  c.on("error", () => {});  // the drop and the refused attempts are reported here, then retried
  await c.connect();
  const id = await c.clientId();
  const reconnecting = next(c, "reconnecting");
  assert.equal(await fault(ctl, "DROP", "ID", String(id)), 1);
  await reconnecting;
  assert.equal(await c.set("k", "node-after-drop"), "OK");  // queued while offline, then sent
  assert.notEqual(await c.clientId(), id);
  console.log("ok node-redis reconnects after a drop");

  assert.equal(await fault(ctl, "REFUSE", "FOR", "0.3"), "OK");
  const again = next(c, "reconnecting");
  await fault(ctl, "DROP", "ID", String(await c.clientId()));
  await again;
  assert.equal(await c.get("k"), "node-after-drop");
  assert.ok(attempts > 1, `refused attempts retried: ${attempts}`);
  console.log("ok node-redis retries refused connections");

  await fault(ctl, "ERROR", "LOADING", "COUNT", "1");
  await assert.rejects(c.get("k"), (e) => e.message === "LOADING Redis is loading the dataset in memory");
  assert.equal(await c.get("k"), "node-after-drop");
  console.log("ok node-redis surfaces LOADING");
  await c.quit();
}

const ctl = new Redis({ port });
try {
  await ioredisChecks(ctl);
  await nodeRedisChecks(ctl);
  await fault(ctl, "CLEAR");
} catch (e) {
  console.log(e);
  process.exit(1);
}
ctl.disconnect();
