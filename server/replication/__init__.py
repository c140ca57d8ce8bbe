"""Replication: the state both roles share (replication ID, offset, backlog, feed), the master
side (SYNC / PSYNC, full and partial resyncs), the replica side (REPLICAOF, the link, applying
the stream) and FAILOVER.

Rule: imports only the layers below it (persistence and everything under it).
"""
