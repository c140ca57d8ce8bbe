// A cluster client (ioredis Cluster, node-redis createCluster) writing and reading keys while the
// cluster fails over (test_cluster_failover_clients.py drives it; cluster_writers.py's Python
// writers do the same in process):
//   node cluster_failover_clients.mjs CLIENT PORTS KEYS TAG IN_FLIGHT
// CLIENT: ioredis, node-redis-resp2, node-redis-resp3; PORTS: the seed nodes, comma-separated.
// IN_FLIGHT lanes each SET TAG:i = TAG-value-i for the next i in turn, until told "stop" and at
// least KEYS were acknowledged; then GET every acknowledged key back.  Commands on stdin, one a
// line, each answered with a JSON line on stdout:
//   status -> {"acked": N, "issued": N, "ackedAfter": N}   (ackedAfter: acked with i >= the mark)
//   mark   -> {"mark": I}   I: the next i to be issued; errors of SETs with i >= I are "after"
//   stop   -> the report, once all is read back: {"acked": [i in the order acknowledged],
//             "setErrors": [[i, after, message]] (the first 50 and the first 50 after the mark),
//             "nSetErrors", "nSetErrorsAfter", "lastSetError" (the largest i that failed),
//             "missing": [i read back as nil], "wrong": [[i, value]] (first 20), "nWrong",
//             "getErrors": [[i, message]] (first 20), "nGetErrors",
//             "kinds": {message with digits as N: count}, "writeSeconds", "readSeconds"}
import { createInterface } from "node:readline";
import { inspect } from "node:util";
import { connect } from "./cluster_connect.mjs";

const [client, portsArg, keysArg, tag, inFlightArg] = process.argv.slice(2);
const total = Number(keysArg);
const inFlight = Number(inFlightArg);
const key = (i) => `${tag}:${i}`;
const value = (i) => `${tag}-value-${i}`;

const s = {
  issued: 0, acked: [], mark: Infinity, ackedAfter: 0, stop: false,
  setErrors: [], nSetErrors: 0, nSetErrorsAfter: 0, lastSetError: -1, kinds: {},
  missing: [], wrong: [], nWrong: 0, getErrors: [], nGetErrors: 0,
};
const say = (obj) => new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + "\n", resolve));
// an AggregateError (a connect that failed on every address) has no message of its own
const text = (e) => e.message || (e.errors || []).map((x) => x.message).join("; ") ||
  inspect(e, { breakLength: Infinity }).split(" at ")[0].trim();
const kind = (msg) => { const k = String(msg).replace(/\d+/g, "N"); s.kinds[k] = (s.kinds[k] || 0) + 1; };

async function writeLane(c) {
  while (!(s.stop && s.acked.length >= total)) {
    const i = s.issued++;
    try {
      const res = await c.set(key(i), value(i));
      if (res !== "OK") throw new Error(`reply ${res}`);
      s.acked.push(i);
      if (i >= s.mark) s.ackedAfter++;
    } catch (e) {
      const after = i >= s.mark;
      s.nSetErrors++;
      s.lastSetError = Math.max(s.lastSetError, i);
      if (after) s.nSetErrorsAfter++;
      if (s.setErrors.length < 50 || (after && s.nSetErrorsAfter <= 50)) s.setErrors.push([i, after, text(e)]);
      kind(text(e));
      // a client that fails at once (no socket to wait on) must not starve stdin
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

async function readLane(c, todo) {
  for (let i = todo.next(); !i.done; i = todo.next()) {
    try {
      const res = await c.get(key(i.value));
      if (res === null) {
        s.missing.push(i.value);
      } else if (res !== value(i.value)) {
        if (s.nWrong++ < 20) s.wrong.push([i.value, res]);
      }
    } catch (e) {
      if (s.nGetErrors++ < 20) s.getErrors.push([i.value, text(e)]);
      kind(text(e));
    }
  }
}

async function main() {
  const c = await connect(client, portsArg.split(",").map(Number));
  // errors the client emits outside any command (a node's socket) are its own business
  c.on("error", () => {});
  let stopped;
  const stopping = new Promise((resolve) => { stopped = resolve; });
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "status") say({ acked: s.acked.length, issued: s.issued, ackedAfter: s.ackedAfter });
    else if (line === "mark") { s.mark = s.issued; say({ mark: s.mark }); }
    else if (line === "stop") { s.stop = true; stopped(); }
  });
  const t0 = performance.now();
  await Promise.all([...Array(inFlight)].map(() => writeLane(c)));
  await stopping;
  const t1 = performance.now();
  const todo = s.acked[Symbol.iterator]();
  await Promise.all([...Array(inFlight)].map(() => readLane(c, todo)));
  const t2 = performance.now();
  await say({ ...s, issued: undefined, mark: undefined, ackedAfter: undefined, stop: undefined,
        writeSeconds: (t1 - t0) / 1000, readSeconds: (t2 - t1) / 1000 });
  await c.quit();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
