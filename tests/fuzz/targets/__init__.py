"""Coverage-guided fuzz targets (atheris, libFuzzer's engine) for every decoder raxdb runs on bytes
from outside: RESP requests, RESTORE payloads, RDB files, AOF files and manifests, cluster bus
messages, nodes.conf, redis.conf text and the Lua bridge.

Why here, beside the pytest files of tests/fuzz/ and not among them: a target is not a test (pytest
collects test_*.py only, so these modules are never collected), but it is test code, linted with
tests/, and its corpus (tests/fuzz/corpus/<target>/) is replayed by a test
(tests/fuzz/test_fuzz_targets.py).  `make fuzz` runs each target for FUZZ_SECONDS (run.py).

Rule: a target calls the decoder in-process, never over a socket, and fails only where the
property fails: a crash (an exception the decoder does not document), a hang (libFuzzer's
-timeout), an allocation past the cap (common.py's memory limit).  Every module here defines NAME,
`setup()` (what is built once) and `one_input(data)`.
"""
