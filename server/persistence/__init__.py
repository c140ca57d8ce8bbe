"""Persistence: RDB snapshots (SAVE, BGSAVE, save points, loading at start-up), the append-only
file (manifest, writing, rewriting, loading), emptying the dataset before a load (and for
FLUSHALL), serving clients while a dataset loads, and what a forked child reports to its parent.

Rule: imports only the layers below it (scripting and everything under it).
"""
