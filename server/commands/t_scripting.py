"""t_scripting: not implemented yet (placeholder so the package imports)."""
