"""Foundations every layer may use: Redis's error replies, the log, numbers as Redis's C reads them,
the latency monitor, the process title, malloc's thresholds, the versions reported, which modules
run compiled, durable file writes, what every layer may know of a load in progress, and the
typing.Protocols (interfaces) through which lower layers name the server and its clients.

Rule: imports nothing of raxdb.server outside base/ (only protocol/, storage/, raxdb's
__version__ and the standard library).
"""
