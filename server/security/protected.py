"""Protected mode, and the "local" setting of the enable-* options (Redis's islocalClient).

With protected-mode yes and no password on the default user, a connection from anywhere but the
loopback interface or the unix socket is answered DENIED and closed.  enable-debug-command,
enable-module-command and enable-protected-configs take yes, no or local: "local" admits the same
local connections (and the server's own clients, which have no address).

Rule: imports only security/acl.py and the layers below; the client is known by its interface.
Invariant: "local" is Redis's test on the address text: 127.0.0.1 or ::1 exactly, not the rest
of 127/8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.base.errors import CommandError
from raxdb.server.security import acl

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client

DENIED = (  # the whole reply, written before the connection closes
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set "
    b"for the default user. In this mode connections are only accepted from the loopback interface. If you "
    b"want to connect from external computers to Redis you may adopt one of the following solutions: 1) "
    b"Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback "
    b"interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis "
    b"is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change "
    b"permanent. 2) Alternatively you can just disable the protected mode by editing the Redis "
    b"configuration file, and setting the protected mode option to 'no', and then restarting the server. "
    b"3) If you started the server manually just for testing, restart it with the '--protected-mode no' "
    b"option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of "
    b"the above things in order for the server to start accepting connections from the outside.\r\n"
)


def is_local_client(c: Client) -> bool:
    """islocalClient: a unix socket client, or a TCP one from 127.0.0.1 or ::1 exactly (Redis
    compares the address text, so the rest of 127/8 is not local)."""
    return c.unix_socket or c.addr.rsplit(":", 1)[0] in ("127.0.0.1", "[::1]")


def protected_mode_denies(c: Client) -> bool:
    """Is `c`, just connected, refused by protected mode?"""
    srv = c.server
    if srv.config.values["protected-mode"] != "yes" or not srv.acl.default.flags & acl.NOPASS:
        return False
    return not is_local_client(c)


def is_local(c: Client) -> bool:
    """A local connection (islocalClient) or the server's own (no address): the "local" setting
    of enable-* options."""
    return not c.addr or is_local_client(c)


def enabled(mode: str, local: bool) -> bool:
    """An enable-* option's value (yes, no, local) for a connection that is `local` or not."""
    return mode == "yes" or (mode == "local" and local)


def protected_allowed(c: Client, option: str) -> bool:
    """May `c` run a command that enable-debug-command / enable-module-command guards?"""
    return enabled(c.server.config.values[option], is_local(c))


def protected_denied(name: str, option: str) -> CommandError:
    return CommandError(f"ERR {name} command not allowed. If the {option} option is set to \"local\", you can "
                        "run it from a local connection, otherwise you need to set this option in the "
                        "configuration file, and then restart the server.")
