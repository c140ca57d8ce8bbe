// ioredis's Cluster and node-redis's createCluster against a Redis Cluster whose slots are being
// migrated (test_cluster_clients.py moves them): node cluster_clients.mjs CLIENT PORT KEYS TAG,
// CLIENT one of ioredis, node-redis-resp2, node-redis-resp3; PORT any master's.
// Rounds: each writes KEYS new keys TAG:round:i (spread over every slot), 200 commands in flight,
// reads back every key whose SET was acknowledged, prints {"acked":N,"nerrors":N,"nwrong":N,
// "errors":[...],"wrong":[...]} (the first 20 failures and mismatches) and reads a line from
// stdin: "more" for another round, anything else to quit.
import { createInterface } from "node:readline";
import { connect } from "./cluster_connect.mjs";

const [client, portArg, keysArg, tag] = process.argv.slice(2);
const port = Number(portArg);
const total = Number(keysArg);
const IN_FLIGHT = 200;

async function round(c, r, acked, errors, wrong) {
  const key = (i) => `${tag}:${r}:${i}`;
  const value = (i) => `${tag}-value-${r}-${i}`;
  for (let start = 0; start < total; start += IN_FLIGHT) {
    const batch = [];
    for (let i = start; i < Math.min(total, start + IN_FLIGHT); i++) {
      batch.push(c.set(key(i), value(i)).then(
        (res) => { if (res === "OK") acked.push(i); else errors.push(`SET ${key(i)}: ${res}`); },
        (e) => errors.push(`SET ${key(i)}: ${e.message}`)));
    }
    await Promise.all(batch);
  }
  for (let start = 0; start < acked.length; start += IN_FLIGHT) {
    await Promise.all(acked.slice(start, start + IN_FLIGHT).map((i) => c.get(key(i)).then(
      (res) => { if (res !== value(i)) wrong.push(`${key(i)} = ${res}`); },
      (e) => errors.push(`GET ${key(i)}: ${e.message}`))));
  }
}

async function main() {
  const c = await connect(client, [port]);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  for (let r = 0; ; r++) {
    const acked = [];
    const errors = [];
    const wrong = [];
    await round(c, r, acked, errors, wrong);
    console.log(JSON.stringify({ acked: acked.length, nerrors: errors.length, nwrong: wrong.length,
                                 errors: errors.slice(0, 20), wrong: wrong.slice(0, 20) }));
    const next = await lines.next();
    if (next.done || next.value !== "more") break;
  }
  await c.quit();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
