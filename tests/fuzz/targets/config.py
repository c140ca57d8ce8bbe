"""Fuzz target: redis.conf text (server/config/options.py's Config.load_text, as start-up reads a
config file).

Properties: only FatalConfigError (Redis's FATAL CONFIG FILE ERROR report).  `include` is recorded,
not followed (the fuzzer would open any path on the machine, /dev/zero among them), and the working
directory the `dir` directive changes is put back after each input.
"""

from __future__ import annotations

import os
import tempfile

NAME = "config"
INSTRUMENT = ("raxdb.server.config", "raxdb.protocol.request", "raxdb.server.security.acl")  # the modules whose coverage guides the fuzzer
# not instrumented: the fresh Config each input starts from (the same defaults every time), and the
# typed views a directive refreshes from values its option parser has checked: 30-40% of the time
UNINSTRUMENTED = ("raxdb.server.config.options.Config.__init__", "raxdb.server.config.options.Config.refresh")
_home = ""


def setup() -> None:
    global _home
    from raxdb.server.config.options import Config

    Config._include = lambda self, pattern: None  # type: ignore[method-assign]
    _home = tempfile.mkdtemp(prefix="raxdb-fuzz-config-")
    os.chdir(_home)


def one_input(data: bytes) -> None:
    from raxdb.server.config.options import Config, FatalConfigError

    try:
        Config().load_text(data, "fuzz.conf")
    except FatalConfigError:
        pass
    finally:
        if os.getcwd() != _home:
            os.chdir(_home)
