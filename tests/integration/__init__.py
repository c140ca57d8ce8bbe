"""Whole servers over their life: persistence, AOF, loading, replication, failover, start-up, supervision, crash reports, redis-cli, the container."""
