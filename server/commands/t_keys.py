"""t_keys: not implemented yet (placeholder so the package imports)."""
