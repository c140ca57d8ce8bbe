"""t_zset: not implemented yet (placeholder so the package imports)."""
