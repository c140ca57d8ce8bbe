"""t_blocking: not implemented yet (placeholder so the package imports)."""
