"""The data types: their commands against redis-server, and their encodings against models and Redis's bytes."""
