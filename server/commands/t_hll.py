"""t_hll: not implemented yet (placeholder so the package imports)."""
