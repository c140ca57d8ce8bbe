"""t_hash: not implemented yet (placeholder so the package imports)."""
