"""A client's buffers and limits, as figures and checks that know the client only by its interface:
query and reply buffer sizes, output buffer limits, client eviction, per-client lifecycle events
(disconnect clean-up, MONITOR feeds, the slow log), and a client's CLIENT LIST line, its memory and
the rule for its name (clientinfo).

Rule: imports only table/ and base/ of the server.
"""
