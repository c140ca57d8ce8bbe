"""Who may do what: ACL users, their permission check and the ACL log; protected mode.

Rule: imports only conn/, table/ and base/ of the server.
"""
