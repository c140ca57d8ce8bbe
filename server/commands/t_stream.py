"""t_stream: not implemented yet (placeholder so the package imports)."""
