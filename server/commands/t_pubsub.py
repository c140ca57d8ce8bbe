"""t_pubsub: not implemented yet (placeholder so the package imports)."""
