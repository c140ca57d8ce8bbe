"""raxdb's test controls: DEBUG subcommands, a raxdb extension, that let a test suite move the
server's clock and inject faults (docs/testing.md says what each is for).

Rule: this module is the switch and the registry, nothing else.  A control registers its DEBUG
subcommand here with `@control(name, help)`, from a command module of its own (`MODULES`), which
the first DEBUG imports (`dispatch` or `help_lines`; a start imports none of them, #56), or
commands/__init__.py's `import_all`; DEBUG (t_server) asks `dispatch` first.

Invariants:
- The controls exist only on a server started with `raxdb-test-controls yes` (an immutable, hidden
  option: CONFIG GET finds it by its exact name only).  raxdb.serve() and the pytest plugin start
  their servers with it; a server started any other way answers DEBUG exactly as Redis 7.0.15
  does, but for the control's own names, which it refuses with TEST_CONTROLS_OFF rather than
  "unknown subcommand", so a test against the wrong server fails with a reason.
- DEBUG HELP lists the controls only where they are on.
- A control is gated by the switch alone, not by enable-debug-command: a server started for tests
  need not open the rest of DEBUG.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from raxdb.server.base.errors import CommandError

OPTION = "raxdb-test-controls"
Handler = Callable[[Any, list[bytes]], bytes]
CONTROLS: dict[bytes, Handler] = {}  # the lowercased DEBUG subcommand -> its handler
HELP: list[str] = []  # DEBUG HELP's lines for the controls, in registration order
# The command modules that register the controls, imported in this order (DEBUG HELP's)
MODULES = ("t_testclock", "t_testcluster", "t_testfaults")
_loaded = False


def load() -> None:
    """Import the modules that register the controls, once."""
    global _loaded
    if not _loaded:
        _loaded = True
        for name in MODULES:
            importlib.import_module(f"{__package__}.{name}")


def control(name: str, help_lines: list[str]) -> Callable[[Handler], Handler]:
    """Register `handler(c, argv)` as `DEBUG <name> ...` (argv is DEBUG's whole argument list)."""

    def register(handler: Handler) -> Handler:
        CONTROLS[name.lower().encode()] = handler
        HELP.extend(help_lines)
        return handler

    return register


def enabled(server: Any) -> bool:
    return server.config.values[OPTION] == "yes"


def off_error(sub: bytes) -> CommandError:
    return CommandError(f"ERR DEBUG {sub.decode(errors='replace').upper()} is a raxdb test control, and this server "
                        f"was started without them: start it with '{OPTION} yes' (raxdb.serve() and the pytest "
                        "plugin do)")


def dispatch(c: Any, sub: bytes, argv: list[bytes]) -> bytes | None:
    """The reply of the control `sub` (lowercased), or None when `sub` is not a control."""
    load()
    handler = CONTROLS.get(sub)
    if handler is None:
        return None
    if not enabled(c.server):
        raise off_error(sub)
    return handler(c, argv)


def help_lines(server: Any) -> list[str]:
    load()
    return HELP if enabled(server) else []
