// ioredis and node-redis over TLS against a server's TLS port (argv[2]), with the certificates in
// argv[3] (ca.crt, client.crt, client.key): the `tls` options applications pass.
// Prints one line per check with what it got; the Python side compares raxdb's with Redis's.
import { readFileSync } from "node:fs";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const dir = process.argv[3];
const tls = {
  ca: readFileSync(`${dir}/ca.crt`),
  cert: readFileSync(`${dir}/client.crt`),
  key: readFileSync(`${dir}/client.key`),
  servername: "localhost",
};

async function ioredisChecks() {
  const r = new Redis({ host: "127.0.0.1", port, tls, lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  await r.set("io:k", "v");
  const got = await r.pipeline().get("io:k").incr("io:n").lrange("nolist", 0, -1).exec();
  console.log("ioredis", JSON.stringify([await r.ping(), got]));
  r.disconnect();
  // no client certificate: refused while tls-auth-clients is yes
  const bare = new Redis({ host: "127.0.0.1", port, tls: { ca: tls.ca, servername: "localhost" }, lazyConnect: true,
                           maxRetriesPerRequest: 0, retryStrategy: () => null });
  bare.on("error", () => {});
  try {
    await bare.connect();
    console.log("ioredis no-cert", await bare.ping());
  } catch (e) {
    console.log("ioredis no-cert refused");
  }
  bare.disconnect();
}

async function nodeRedisChecks() {
  for (const RESP of [2, 3]) {
    const c = createClient({ socket: { host: "127.0.0.1", port, tls: true, ...tls }, RESP });
    c.on("error", () => {});
    await c.connect();
    await c.set("nr:k", "v");
    const multi = await c.multi().get("nr:k").incr(`nr:n${RESP}`).hSet("nr:h", "f", "1").exec();
    console.log(`node-redis resp${RESP}`, JSON.stringify([await c.ping(), multi, await c.hGetAll("nr:h")]));
    await c.quit();
  }
}

await ioredisChecks();
await nodeRedisChecks();
process.exit(0);
