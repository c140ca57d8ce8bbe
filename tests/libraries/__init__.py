"""Client libraries (redis-py, node clients, job queues) against raxdb and, to prove the tests, redis-server."""
