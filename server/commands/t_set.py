"""t_set: not implemented yet (placeholder so the package imports)."""
