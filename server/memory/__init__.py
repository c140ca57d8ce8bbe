"""Memory: the used_memory figure, maxmemory and key eviction, the overhead account behind INFO
memory and MEMORY STATS, and what lazyfree would free.

Rule: imports only the layers below it (events, config, security, conn, table, base).
"""
