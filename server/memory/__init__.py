"""Memory: the used_memory figure, maxmemory and key eviction, a key's MEMORY USAGE figure, the
keys' access times and LFU counters the policies pick by, the overhead account behind INFO memory
and MEMORY STATS, and what lazyfree would free.

Rule: imports only the layers below it (events, config, security, conn, table, base).
"""
