"""t_bitops: not implemented yet (placeholder so the package imports)."""
