"""raxdb storage: the keyspace and the data types.  No asyncio and no server imports here:
everything is plain data structures driven by the command layer on the loop thread.

Value contract (what `storage.keyspace.Database` holds per key):
- strings are `bytes` (int/embstr/raw inferred from content), `keyspace.EmbStr` (a bytes subclass
  for the rare value Redis holds embstr although it reads as an integer) or `bytearray` (raw,
  modified in place); `keyspace.is_string` is the string test (by exact class: a set of integers
  is kept as an `Intset`, a bytes subclass, see set_type.py);
- every other type is an object with
    `type_name`  class attribute: "list", "hash", "set", "zset" or "stream" (TYPE, SCAN TYPE),
    `encoding()` the OBJECT ENCODING name it really has now ("listpack", "quicklist", "hashtable",
                 "intset", "skiplist", "stream"),
    `copy()`     an independent deep copy (COPY),
    `mem_usage()` an estimate in bytes of what the value occupies (MEMORY USAGE),
    `__len__`    its element count.
A command that empties a container deletes the key (Redis never keeps empty aggregates).
"""
