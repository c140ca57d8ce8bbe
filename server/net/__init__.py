"""The network side: the client connection (an asyncio Protocol with the parse -> dispatch -> reply
hot path), blocking operations and the ready-keys queue, the unix socket and TLS listeners, MIGRATE's
cached connections to other servers, and the faults a test arms (DEBUG FAULT).

Rule: imports only the layers below it (memory, events, config, security, conn, table, base);
what it needs of scripting, persistence or replication reaches it as a hook on the server.
"""
