"""Running the server: INFO, shutdown, crash reports and the watchdog, daemonize / supervised /
pidfile, modules (raxdb loads none), and DEBUG DIGEST.

Rule: imports only the layers below it (replication and everything under it).
"""
