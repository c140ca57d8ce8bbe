// BullMQ against a server on PORT (argv[2]) through DRIVER (argv[3]: ioredis, node-redis-resp2 or
// node-redis-resp3), as an application uses it: a Queue adds jobs, a Worker processes them,
// QueueEvents (XREAD BLOCK on the events stream) reports completions.
// BullMQ runs almost everything as Lua scripts (addStandardJob, moveToActive, moveToFinished, ...), and
// an idle worker waits in BZPOPMIN on the marker key. Prints "ok <check>" per passing check; any failure
// prints the error and exits 1. Every wait has a bound (waitUntilFinished's ttl, a timer), no sleeps.
import assert from "node:assert/strict";
import { FlowProducer, Queue, QueueEvents, Worker } from "bullmq";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const driver = process.argv[3];
const resp = { "node-redis-resp2": 2, "node-redis-resp3": 3 }[driver];
assert.ok(driver === "ioredis" || resp, `unknown driver ${driver}`);
// each component gets its own connection: options for ioredis (BullMQ connects it), a native client for
// node-redis (BullMQ adapts it and duplicates it for blocking commands)
const connect = () => (resp ? createClient({ socket: { host: "127.0.0.1", port }, RESP: resp })
  : { host: "127.0.0.1", port, maxRetriesPerRequest: null });
const WAIT_MS = 20000;

function within(ms, promise, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

const admin = new Redis({ port, lazyConnect: true });
await admin.connect();
await admin.flushall();

const queue = new Queue("raxdb", { connection: connect() });
const events = new QueueEvents("raxdb", { connection: connect() });
const processed = [];
const worker = new Worker("raxdb", async (job) => {
  processed.push(job.name);
  if (job.name === "fail") throw new Error(`boom ${job.attemptsMade}`);
  if (job.name === "progress") await job.updateProgress(50);
  if (job.name === "parent") {
    const children = Object.values(await job.getChildrenValues());
    return children.reduce((a, b) => a + b, 0);
  }
  return job.data.a + job.data.b;
}, { connection: connect(), concurrency: 1 });

async function main() {
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady(), worker.waitUntilReady()]);
  const info = await admin.info("server");
  assert.match(info, /redis_version:7\.0\./);  // BullMQ's minimum is 5.0.0: raxdb must pass its check
  console.log("ok bullmq connect");

  const job = await queue.add("add", { a: 2, b: 3 });
  assert.equal(await job.waitUntilFinished(events, WAIT_MS), 5);
  const done = await queue.getJob(job.id);
  assert.equal(done.returnvalue, 5);
  assert.equal(await done.getState(), "completed");
  console.log("ok bullmq round trip");

  const failing = await queue.add("fail", {}, { attempts: 2, backoff: { type: "fixed", delay: 10 } });
  await assert.rejects(failing.waitUntilFinished(events, WAIT_MS), /boom 1/);
  const failed = await queue.getJob(failing.id);
  assert.equal(await failed.getState(), "failed");
  assert.equal(failed.attemptsMade, 2);
  assert.equal((await queue.getJobCounts("failed")).failed, 1);
  console.log("ok bullmq retries and failure");

  const progressSeen = new Promise((resolve) => {
    events.on("progress", ({ jobId, data }) => resolve([jobId, data]));
  });
  const progress = await queue.add("progress", { a: 1, b: 1 });
  assert.deepEqual(await within(WAIT_MS, progressSeen, "progress event"), [progress.id, 50]);
  assert.equal(await progress.waitUntilFinished(events, WAIT_MS), 2);
  console.log("ok bullmq progress events");

  const delayed = await queue.add("add", { a: 20, b: 22 }, { delay: 200 });
  assert.equal(await delayed.getState(), "delayed");
  assert.equal(await delayed.waitUntilFinished(events, WAIT_MS), 42);
  const high = await queue.add("add", { a: 0, b: 7 }, { priority: 1 });
  assert.equal(await high.waitUntilFinished(events, WAIT_MS), 7);
  console.log("ok bullmq delayed and prioritized");

  const flows = new FlowProducer({ connection: connect() });
  const tree = await flows.add({
    name: "parent", queueName: "raxdb", data: {},
    children: [1, 2, 3].map((i) => ({ name: "add", queueName: "raxdb", data: { a: i, b: i } })),
  });
  assert.equal(await tree.job.waitUntilFinished(events, WAIT_MS), 12);
  await flows.close();
  console.log("ok bullmq flow");

  const ticks = [];
  const twoTicks = new Promise((resolve) => {
    events.on("completed", async ({ jobId }) => {
      const j = await queue.getJob(jobId);
      if (j?.name === "tick" && ticks.push(jobId) === 2) resolve();
    });
  });
  await queue.upsertJobScheduler("ticker", { every: 50, limit: 2 }, { name: "tick", data: { a: 1, b: 0 } });
  await within(WAIT_MS, twoTicks, "two scheduled jobs");
  assert.equal(new Set(ticks).size, 2);
  assert.equal(await queue.removeJobScheduler("ticker"), true);
  console.log("ok bullmq job scheduler");

  const counts = await queue.getJobCounts("completed", "failed", "waiting", "active", "delayed");
  assert.deepEqual(counts, { completed: 10, failed: 1, waiting: 0, active: 0, delayed: 0 });
  assert.equal(processed.filter((n) => n === "fail").length, 2);
  console.log("ok bullmq counts");
}

let code = 0;
try {
  await main();
  console.log("done");
} catch (e) {
  console.error("FAILED:", e);
  code = 1;
}
await within(WAIT_MS, Promise.all([worker.close(), events.close(), queue.close()]), "close").catch((e) => {
  console.error("close:", e);
  code = 1;
});
admin.disconnect();
process.exit(code);
