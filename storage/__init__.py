"""raxdb storage: the keyspace and the data types.  No asyncio and no server imports here:
everything is plain data structures driven by the command layer on the loop thread."""
