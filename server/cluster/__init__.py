"""Redis Cluster: the cluster's state, nodes.conf, slot routing and the cluster bus.

Between replication/ (below) and admin/ (above): `state` (clusterState and clusterNode),
`nodesconf` (the nodes.conf format), `wire` (the bus's binary messages, sans I/O), `bus` (the
links and what messages do), `replicas` (CLUSTER REPLICATE, following a master, replica
migration), `failover` (elections, votes, manual failover), `routing` (getNodeByQuery: MOVED, ASK,
CROSSSLOT, CLUSTERDOWN...), `manager` (the Cluster a server holds in cluster mode: its configuration, cron and hooks).
The CLUSTER command and its subcommands are commands/t_cluster.py's.
"""
