"""Persistence: RDB snapshots (SAVE, BGSAVE, save points, loading at start-up), the append-only
file (manifest, writing, rewriting, loading), serving clients while a dataset loads, and what a
forked child reports to its parent.

Rule: imports only the layers below it (scripting and everything under it).
"""
