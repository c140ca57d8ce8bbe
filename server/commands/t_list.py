"""t_list: not implemented yet (placeholder so the package imports)."""
