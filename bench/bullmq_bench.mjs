// BullMQ's add and process against a server on PORT (argv[2]): N jobs (argv[3]) added with addBulk,
// then processed by a Worker with concurrency 50 (a processor that returns at once), each timed.
// Prints one line of JSON: {"add_s": ..., "process_s": ...}. bench/bench.py runs it against
// raxdb and redis-server; BullMQ and ioredis come from tests/libraries' node_modules.
import { createRequire } from "node:module";

const require = createRequire(new URL("../tests/libraries/package.json", import.meta.url));
const { Queue, Worker } = require("bullmq");
const Redis = require("ioredis");

const port = Number(process.argv[2]);
const n = Number(process.argv[3] || 5000);
const connection = { host: "127.0.0.1", port, maxRetriesPerRequest: null };

const admin = new Redis({ port, host: "127.0.0.1" });
await admin.flushall();
const queue = new Queue("bench", { connection });
await queue.waitUntilReady();
const jobs = Array.from({ length: n }, (_, i) => ({ name: "job", data: { i } }));
let t = process.hrtime.bigint();
await queue.addBulk(jobs);
const add = Number(process.hrtime.bigint() - t) / 1e9;

let done = 0;
let finish;
const all = new Promise((resolve) => { finish = resolve; });
t = process.hrtime.bigint();
const worker = new Worker("bench", async (job) => job.data.i, { connection, concurrency: 50 });
worker.on("completed", () => { if (++done === n) finish(); });
await all;
const processed = Number(process.hrtime.bigint() - t) / 1e9;
await worker.close();
await queue.close();
await admin.quit();
console.log(JSON.stringify({ add_s: add, process_s: processed }));
