// The cluster client of each kind the cluster tests drive (cluster_clients.mjs,
// cluster_failover_clients.mjs): connect(CLIENT, PORTS), CLIENT one of ioredis, node-redis-resp2,
// node-redis-resp3; PORTS the seed nodes' ports (any of the cluster's nodes).
import Redis from "ioredis";
import { createCluster } from "redis";

export const CLIENTS = ["ioredis", "node-redis-resp2", "node-redis-resp3"];

export async function connect(client, ports) {
  if (!CLIENTS.includes(client)) throw new Error(`unknown client ${client}`);
  if (client === "ioredis") {
    // retries enough for a slot that stays open while its keys move (ASK/MOVED each count one)
    return new Redis.Cluster(ports.map((port) => ({ host: "127.0.0.1", port })), { maxRedirections: 64 });
  }
  const c = createCluster({
    rootNodes: ports.map((port) => ({ socket: { host: "127.0.0.1", port } })),
    RESP: client === "node-redis-resp3" ? 3 : 2,
    maxCommandRedirections: 64,
  });
  await c.connect();
  return c;
}
