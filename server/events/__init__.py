"""What a read or write of a key sets off: key access (lookupKey, setKey, signalModifiedKey),
keyspace notifications, WATCH (and the end of a transaction, which releases it), client-side
caching (tracking), propagation to the AOF and replicas, and pub/sub delivery.

Rule: imports only the layers below it (config, security, conn, table, base).
"""
