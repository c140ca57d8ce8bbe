"""CLIENT subcommands (Redis's networking.c clientCommand), with Redis 7.0's replies and errors.

CLIENT LIST / INFO lines carry the same fields in the same order as Redis 7.0 (plus lib-name and
lib-ver on a server answering as 7.2+: compat-version, which also has SETINFO and NO-TOUCH), so tools that parse them keep
working; buffer figures are raxdb's own.  The line, a client's memory and the rule for its name
are conn/clientinfo.py's (the log, the ACL log and client eviction use them too); here they are
parsed for and answered.  CLIENT PAUSE keeps its state on the Server (`Server.pause`,
`Server.paused`); which commands wait and holding them is the dispatcher's job
(`Client._paused_for`).
CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO parse and answer here; the tracking itself
is events/tracking.py.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.protocol.request import string2ll
from raxdb.server.base.errors import SYNTAX, CommandError, c_str, subcommand_syntax
from raxdb.server.commands.t_config import help_reply
from raxdb.server.conn import lifecycle
from raxdb.server.conn.clientinfo import client_info_line, validate_client_name
from raxdb.server.conn.obuf import client_class
from raxdb.server.events import tracking
from raxdb.server.table.args import maybe_int, option_word
from raxdb.server.table.registry import NO_REPLY, command


# ---- CLIENT LIST / INFO ------------------------------------------------------------------------
def _text_reply(c, text: str) -> bytes:
    return c.enc.verbatim(text.encode(errors="replace"))


_TYPES = {b"normal": "normal", b"master": "master", b"slave": "slave", b"replica": "slave", b"pubsub": "pubsub"}


def _parse_type(arg: bytes) -> str:
    t = _TYPES.get(option_word(arg))
    if t is None:
        raise CommandError(f"ERR Unknown client type '{arg.decode(errors='replace')}'")
    return t


@command("client|list")
def client_list(c, argv):
    clients = list(c.server.clients.values())
    if len(argv) == 4 and option_word(argv[2]) == b"type":
        t = _parse_type(argv[3])
        clients = [x for x in clients if client_class(x) == t]
    elif len(argv) > 3 and option_word(argv[2]) == b"id":
        chosen = []
        for a in argv[3:]:
            cid = maybe_int(a)
            if cid is None or cid <= 0:
                if cid is None:
                    raise CommandError("ERR Invalid client ID")
                continue
            x = c.server.clients.get(cid)
            if x is not None:
                chosen.append(x)
        clients = chosen
    elif len(argv) != 2:
        raise CommandError(SYNTAX)
    return _text_reply(c, "".join(client_info_line(x, c) + "\n" for x in clients))


@command("client|info")
def client_info(c, argv):
    return _text_reply(c, client_info_line(c, c) + "\n")


# ---- identity ----------------------------------------------------------------------------------
@command("client|id")
def client_id(c, argv):
    return R.integer(c.id)


@command("client|setname")
def client_setname(c, argv):
    validate_client_name(argv[2])
    c.name = argv[2]
    return R.OK


@command("client|getname")
def client_getname(c, argv):
    return R.bulk(c.name) if c.name else c.enc.null


def _validate_attr(value: bytes, attr: bytes) -> None:
    for b in value:
        if b < 33 or b > 126:
            raise CommandError(f"ERR {attr.decode(errors='replace')} cannot contain spaces, newlines or "
                               "special characters.")


@command("client|setinfo")
def client_setinfo(c, argv):
    attr, value = argv[2], argv[3]
    low = option_word(attr)
    if low not in (b"lib-name", b"lib-ver"):
        raise CommandError(f"ERR Unrecognized option '{attr.decode(errors='replace')}'")
    _validate_attr(value, attr)
    if low == b"lib-name":
        c.lib_name = value
    else:
        c.lib_ver = value
    return R.OK


# ---- KILL --------------------------------------------------------------------------------------
def _kill(c, victim) -> None:
    if victim is c:
        c.close_after_replies()
    else:
        victim.kill_reason = "killed"
        victim.close()


def kill_filter(c, argv: list[bytes], i: int, skipme: bool = True, by_name: bool = False):
    """CLIENT KILL's filter, `<option> <value>` pairs from argv[i] on (ID, TYPE, ADDR, LADDR, USER,
    SKIPME; NAME too with `by_name`, for DEBUG FAULT DROP): a test of a client, true for the
    clients every option given picks.  Redis's errors for a bad option or value."""
    srv = c.server
    cid = name = None
    ctype = addr = laddr = user = None
    while i < len(argv):
        if i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        opt, val = option_word(argv[i]), argv[i + 1]
        if opt == b"id":
            n = string2ll(val)
            if n is None or n <= 0:
                raise CommandError("ERR client-id should be greater than 0")
            cid = n
        elif opt == b"type":
            ctype = _parse_type(val)
        elif opt == b"addr":
            addr = val
        elif opt == b"laddr":
            laddr = val
        elif opt == b"user":
            user = srv.acl.users.get(val)
            if user is None:
                raise CommandError(b"ERR No such user '%s'" % c_str(val))
        elif opt == b"skipme":
            low = option_word(val)
            if low not in (b"yes", b"no"):
                raise CommandError(SYNTAX)
            skipme = low == b"yes"
        elif opt == b"name" and by_name:
            name = val
        else:
            raise CommandError(SYNTAX)
        i += 2

    def picks(x) -> bool:
        return not ((cid is not None and x.id != cid) or (ctype is not None and client_class(x) != ctype)
                    or (addr is not None and x.addr.encode() != addr)
                    or (laddr is not None and x.laddr.encode() != laddr)
                    or (user is not None and x.user is not user) or (name is not None and x.name != name)
                    or (skipme and x is c))

    return picks


@command("client|kill")
def client_kill(c, argv):
    old_form = len(argv) == 3  # CLIENT KILL addr:port: every client with that address, itself too
    if old_form:
        picks = kill_filter(c, [b"addr", argv[2]], 0, skipme=False)
    else:
        picks = kill_filter(c, argv, 2)
    killed = 0
    for x in list(c.server.clients.values()):
        if picks(x):
            _kill(c, x)
            killed += 1
    if old_form:  # unix socket clients share one address
        if not killed:
            raise CommandError("ERR No such client")
        return R.OK
    return R.integer(killed)


# ---- modes -------------------------------------------------------------------------------------
def _on_off(arg: bytes) -> bool:
    low = option_word(arg)
    if low == b"on":
        return True
    if low == b"off":
        return False
    raise CommandError(SYNTAX)


@command("client|reply")
def client_reply(c, argv):
    mode = option_word(argv[2])
    if mode == b"on":
        c.reply_mode = "on"
        c.update_plain()
        return R.OK
    if mode == b"off":
        c.reply_mode = "off"
    elif mode == b"skip":
        if c.reply_mode == "on":
            c.reply_mode = "skip_next"  # the dispatcher drops this reply and the next command's
    else:
        raise CommandError(SYNTAX)
    c.update_plain()
    return NO_REPLY


@command("client|no-evict")
def client_no_evict(c, argv):
    c.no_evict = _on_off(argv[2])  # noted (out of client eviction's sum, or in it) after its batch
    return R.OK


@command("client|no-touch")
def client_no_touch(c, argv):
    c.no_touch = _on_off(argv[2])
    c.update_plain()  # a client in this mode takes the full path (Client._call_untouched)
    return R.OK


@command("client|pause")
def client_pause(c, argv):
    if len(argv) > 4:
        raise subcommand_syntax(argv)
    ms = string2ll(argv[2])
    if ms is None:
        raise CommandError("ERR timeout is not an integer or out of range")
    if ms < 0:
        raise CommandError("ERR timeout is negative")
    writes_only = False
    if len(argv) == 4:
        mode = option_word(argv[3])
        if mode == b"write":
            writes_only = True
        elif mode != b"all":
            raise CommandError("ERR CLIENT PAUSE mode must be WRITE or ALL")
    c.server.pause(c.server.now_ms + ms, writes_only)
    return R.OK


@command("client|unpause")
def client_unpause(c, argv):
    c.server.unpause()
    return R.OK


@command("client|unblock")
def client_unblock(c, argv):
    if len(argv) > 4:
        raise subcommand_syntax(argv)
    cid = maybe_int(argv[2])
    if cid is None:
        raise CommandError("ERR value is not an integer or out of range")
    as_error = False
    if len(argv) == 4:
        reason = option_word(argv[3])
        if reason == b"error":
            as_error = True
        elif reason != b"timeout":
            raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    target = c.server.clients.get(cid)
    hook = lifecycle.UNBLOCK_HOOK[0]
    if target is None or not target.blocked or hook is None:
        return R.ZERO
    return R.ONE if hook(target, as_error) else R.ZERO


# ---- client-side caching (server/events/tracking.py) ------------------------------------------------
@command("client|tracking")
def client_tracking(c, argv):
    prefixes: list[bytes] = []
    redirect = 0
    bcast = optin = optout = noloop = False
    i = 3
    while i < len(argv):
        opt = option_word(argv[i])
        more = len(argv) - 1 - i
        if opt == b"redirect" and more:
            i += 1
            if redirect:
                raise CommandError("ERR A client can only redirect to a single other client")
            rid = maybe_int(argv[i])
            if rid is None:
                raise CommandError("ERR value is not an integer or out of range")
            if rid not in c.server.clients:
                raise CommandError("ERR The client ID you want redirect to does not exist")
            redirect = rid
        elif opt == b"bcast":
            bcast = True
        elif opt == b"optin":
            optin = True
        elif opt == b"optout":
            optout = True
        elif opt == b"noloop":
            noloop = True
        elif opt == b"prefix" and more:
            i += 1
            prefixes.append(argv[i])
        else:
            raise CommandError(SYNTAX)
        i += 1
    mode = option_word(argv[2])
    if mode == b"on":
        err = tracking.check_enable(c, bcast, optin, optout, prefixes)
        if err is not None:
            raise CommandError(err)
        tracking.enable(c, redirect, bcast, optin, optout, noloop, prefixes)
    elif mode == b"off":
        tracking.disable(c)
    else:
        raise CommandError(SYNTAX)
    return R.OK


@command("client|caching")
def client_caching(c, argv):
    ct = c.tracking
    if ct is None:
        raise CommandError("ERR CLIENT CACHING can be called only when the client is in tracking mode with "
                           "OPTIN or OPTOUT mode enabled")
    opt = option_word(argv[2])
    if opt == b"yes":
        if not ct.optin:
            raise CommandError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif opt == b"no":
        if not ct.optout:
            raise CommandError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise CommandError(SYNTAX)
    ct.caching = True
    return R.OK


@command("client|getredir")
def client_getredir(c, argv):
    return R.integer(c.tracking.redirect if c.tracking is not None else -1)


@command("client|trackinginfo")
def client_trackinginfo(c, argv):
    return tracking.tracking_info(c)



_HELP = [
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
]
# Redis 7.2's (compat-version): SETINFO after SETNAME, NO-TOUCH last
_SETNAME_END = _HELP.index("SETNAME <name>") + 2
_HELP_72 = [*_HELP[:_SETNAME_END], "SETINFO <option> <value>", "    Set client meta attr. Options are:",
            "    * LIB-NAME: the client lib name.", "    * LIB-VER: the client lib version.",
            *_HELP[_SETNAME_END:], "NO-TOUCH (ON|OFF)", "    Will not touch LRU/LFU stats when this mode is on."]


@command("client|help")
def client_help(c, argv):
    return help_reply("CLIENT", _HELP_72 if c.server.config.compat_version >= (7, 2) else _HELP)
