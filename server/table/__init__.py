"""The command table: Command records declared as data (registry), Redis 7.0's COMMAND / COMMAND
DOCS metadata decoded into named fields, argument parsing with Redis's acceptance rules, key
positions (getkeys) and the flags a script declares.

Rule: imports only base/ of the server.
"""
