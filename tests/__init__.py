"""The test suite, grouped as Redis groups its own (conftest.py marks each test by its folder)."""
