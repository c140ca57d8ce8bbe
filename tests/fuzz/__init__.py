"""Differential fuzzing: random commands, blocking, pub/sub, CONFIG SET, AOF propagation and protocol bytes."""
