"""Server behaviour, differential against redis-server: connections, the protocol front end, config, ACL, pub/sub, scripting, transactions, propagation, introspection."""
