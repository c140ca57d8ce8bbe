"""Configuration: the option table, redis.conf syntax, command-line options, CONFIG GET / SET /
REWRITE semantics, and oom-score-adj (a configuration applied to the process).

Rule: imports only the layers below it (security, conn, table, base).
"""
