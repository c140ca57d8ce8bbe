"""t_multi: not implemented yet (placeholder so the package imports)."""
