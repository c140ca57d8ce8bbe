"""raxdb's server: the asyncio front end, the command table and the command implementations."""
