"""Client-side caching: which clients may hold which keys, and telling them when those keys change
(Redis's tracking.c, as 7.0 behaves).

Two ways to be told, chosen by CLIENT TRACKING ON:

- **Default mode.**  After a read-only command of a tracking client, every key the command named
  (COMMAND GETKEYS's positions, hit or miss or WRONGTYPE alike) is remembered in `Tracking.table`:
  key -> ids of the clients that may cache it.  The next change of the key (a write, expiry,
  eviction) sends each of them one invalidation and forgets the key, so a client hears of a key
  once per read.  Keys are global, not per database, as in Redis.  OPTIN remembers only reads
  after CLIENT CACHING yes, OPTOUT all but those after CLIENT CACHING no (the flag lasts one
  command, or one MULTI ... EXEC; CLIENT subcommands leave it standing, as resetClient does).
  Inside a script, each read command remembers the keys the script declared (numkeys), not the
  keys it read: scripts are cached by their declared keys.
- **BCAST.**  Nothing is remembered per read.  Every change of a key under a registered prefix is
  collected per prefix and sent once per event-loop iteration (Redis's beforeSleep), the keys in
  byte order, one array per prefix.  NOLOOP leaves out the keys the client changed itself.

Delivery (sendTrackingMessage): a RESP3 client gets the push ["invalidate", [keys]]; a RESP2
client hears only through REDIRECT to a connection subscribed in RESP2, which gets a Pub/Sub
message on __redis__:invalidate.  A redirect whose target has gone marks the client
broken_redirect and, in RESP3, pushes ["tracking-redir-broken", id].  FLUSHDB and FLUSHALL send a
null ("every key") to every tracking client and empty the table.  An invalidation owed to the
client whose command is running waits until after that command's reply (tracking_pending_keys):
a pipeline sees `+OK` then the push, and MULTI's push follows EXEC's array.

Cost when nobody tracks: nothing on the fast loop, and one slot test per write.  A tracking
client is not `plain`, so its commands take execute(), which ends them with `after_command`,
and `Client.call()` remembers their reads.  Writers reach `invalidate` through
the signal guard every writer already has (`Database.signals`, see server/events/keyaccess.py), set on
every database from the first CLIENT TRACKING ON on.  The table, once made, lives as long as the
server, as Redis's does: keys remembered for clients that have left are dropped lazily, by the
next change of the key, and count in INFO until then.

Deliberate differences: 7.0 answers a PREFIX list that overlaps itself past its first prefix
with an error *and* +OK, enabling tracking anyway (fixed in 7.2); raxdb replies only the error
and changes nothing.  When tracking-table-max-keys is exceeded, Redis forgets randomly chosen
keys (invalidating them); raxdb forgets the longest-remembered ones.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any, cast

from raxdb.protocol import reply as R
from raxdb.server.base.errors import c_str
from raxdb.server.conn import lifecycle
from raxdb.server.conn.obuf import client_class
from raxdb.server.table.getkeys import key_positions

if TYPE_CHECKING:  # checked against the protocols the lower layers work with; no bases at run time
    from raxdb.server.base import interfaces
    from raxdb.server.base.interfaces import Client, Command, Server

    _DeclaredClientTracking = interfaces.ClientTracking
    _DeclaredTracking = interfaces.Tracking
else:
    _DeclaredClientTracking = _DeclaredTracking = object

_PUSH = b">2\r\n$10\r\ninvalidate\r\n"
_MESSAGE = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
_NULL = {2: b"$-1\r\n", 3: b"_\r\n"}
_FLUSHED = None  # in `Tracking.pending`: the flush's null, rather than a key
# Read-only script commands remember nothing themselves: their scripts' reads do.
_SCRIPT_RO = frozenset({"eval_ro", "evalsha_ro", "fcall_ro"})


class ClientTracking(_DeclaredClientTracking):
    """A client's CLIENT TRACKING state (Redis's CLIENT_TRACKING_* flags and its prefixes)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "broken", "prefixes")

    def __init__(self) -> None:
        self.redirect = 0
        self.bcast = self.optin = self.optout = self.noloop = False
        self.caching = False  # CLIENT CACHING yes/no given for the next command
        self.broken = False  # the redirect target has gone
        self.prefixes: dict[bytes, None] = {}


class _Prefix:
    """One BCAST prefix: the clients registered for it, and the keys under it changed since the
    last broadcast, each with the client that last changed it (None: expiry, eviction)."""

    __slots__ = ("clients", "keys")

    def __init__(self) -> None:
        self.clients: dict[Client, None] = {}
        self.keys: dict[bytes, Client | None] = {}


class Tracking(_DeclaredTracking):
    """The server's tracking state, made by the first CLIENT TRACKING ON (`Server.tracking`)."""

    __slots__ = ("server", "table", "items", "prefixes", "clients", "current", "pending", "broadcast_due",
                 "over_limit_runs")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.table: dict[bytes, dict[int, None]] = {}  # key -> ids of clients that may cache it
        self.items = 0  # ids across the table (INFO tracking_total_items)
        self.prefixes: dict[bytes, _Prefix] = {}
        self.clients = 0  # clients with tracking on (INFO tracking_clients)
        # The tracking client whose command is executing (Redis's current_client with
        # CLIENT_EXECUTING_COMMAND): set by Client.call(), so not while execute() evicts keys or
        # cuts the table down before a command.
        self.current: Client | None = None
        self.pending: list[bytes | None] = []  # what `current` is owed after its reply
        self.broadcast_due = False
        self.over_limit_runs = 0  # limit_table runs that ended still over the limit


def state(srv: Server) -> Tracking:
    tr = cast("Tracking | None", srv.tracking)  # the server's is this module's Tracking
    if tr is None:
        tr = srv.tracking = Tracking(srv)
        for db in srv.dbs:
            db.signals = True
        # A lowered limit applies once the CONFIG SET is over, as Redis's serverCron applies it
        # to an idle server: no command is running, so NOLOOP spares no one.
        srv.config.on_change.setdefault("tracking-table-max-keys", []).append(
            lambda _v: srv.call_soon(lambda: limit_table(srv)))
    return tr


# ---- CLIENT TRACKING ON / OFF ------------------------------------------------------------------

def check_enable(c: Client, bcast: bool, optin: bool, optout: bool, prefixes: list[bytes]) -> str | bytes | None:
    """The error CLIENT TRACKING ON answers for these options, in Redis's order, or None."""
    ct = cast("ClientTracking | None", c.tracking)  # a client's is this module's ClientTracking
    if prefixes and not bcast:
        return "ERR PREFIX option requires BCAST mode to be enabled"
    if ct is not None and ct.bcast != bcast:
        return ("ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                "and then re-enabling it with a different mode.")
    if bcast and (optin or optout):
        return "ERR OPTIN and OPTOUT are not compatible with BCAST"
    if optin and optout:
        return "ERR You can't specify both OPTIN mode and OPTOUT mode"
    if ct is not None and ((optin and ct.optout) or (optout and ct.optin)):
        return ("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
                "and then re-enabling it with a different mode.")
    if bcast:
        return _prefix_collision(ct, prefixes)
    return None


def _overlap(a: bytes, b: bytes) -> bool:
    """stringCheckPrefix: one is a prefix of the other (equal prefixes overlap too)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _prefix_collision(ct: ClientTracking | None, prefixes: list[bytes]) -> bytes | None:
    existing = sorted(ct.prefixes) if ct is not None else []
    for i, p in enumerate(prefixes):
        for q in existing:
            if _overlap(q, p):
                return _collision(p, b"an existing", q)
        for q in prefixes[i + 1:]:
            if _overlap(p, q):
                return _collision(p, b"another provided", q)
    return None


def _collision(p: bytes, which: bytes, q: bytes) -> bytes:
    # The prefixes are printed with %s: raw bytes, cut at a NUL.
    return (b"ERR Prefix '%s' overlaps with %s prefix '%s'. Prefixes for a single client must not overlap."
            % (c_str(p), which, c_str(q)))


def enable(c: Client, redirect: int, bcast: bool, optin: bool, optout: bool, noloop: bool,
           prefixes: list[bytes]) -> None:
    """enableTracking: options already checked by `check_enable`."""
    tr = state(c.server)
    ct = c.tracking
    if ct is None:
        ct = c.tracking = ClientTracking()
        tr.clients += 1
        c.update_plain()
    # Every ON sets the mode afresh; only a pending CLIENT CACHING survives (as Redis's flags).
    ct.redirect = redirect
    ct.broken = False
    ct.bcast = bcast
    ct.optin, ct.optout, ct.noloop = optin, optout, noloop
    if bcast:
        for p in prefixes or [b""]:
            bs = tr.prefixes.get(p)
            if bs is None:
                bs = tr.prefixes[p] = _Prefix()
            if c not in bs.clients:
                bs.clients[c] = None
                ct.prefixes[p] = None


def disable(c: Client) -> None:
    """disableTracking (CLIENT TRACKING OFF, RESET, disconnect).  The client's keys stay in the
    table, to be dropped when they change, as Redis drops them."""
    ct = c.tracking
    if ct is None:
        return
    tr = c.server.tracking
    assert tr is not None
    for p in ct.prefixes:
        bs = tr.prefixes[p]
        bs.clients.pop(c, None)
        if not bs.clients:
            del tr.prefixes[p]
    c.tracking = None
    tr.clients -= 1
    c.update_plain()


# ---- remembering reads -------------------------------------------------------------------------

def remember_read(c: Client, cmd: Command, argv: list[bytes]) -> None:
    """After a read-only command of tracking client `c` (call()'s part)."""
    if cmd.fullname not in _SCRIPT_RO:
        remember(c, cmd, argv)


def remember(c: Client, cmd: Command, argv: list[bytes]) -> None:
    """trackingRememberKeys: remember the keys `argv` names for `c`, as its mode says."""
    ct = c.tracking
    if ct is None or ct.bcast:
        return
    if (ct.optin and not ct.caching) or (ct.optout and ct.caching):
        return
    tr = c.server.tracking
    assert tr is not None
    table = tr.table
    cid = c.id
    for pos in key_positions(cmd, argv):
        key = argv[pos]
        ids = table.get(key)
        if ids is None:
            ids = table[key] = {}
        if cid not in ids:
            ids[cid] = None
            tr.items += 1


def remember_script_read(caller: Client, argv: list[bytes]) -> None:
    """A script of `caller`, started by `argv` (EVAL, FCALL, ...), ran a read-only command: the
    caller may now cache what the script's declared keys hold."""
    cmd = caller.server.table.lookup(argv)
    if cmd is not None:
        remember(caller, cmd, argv)


# ---- invalidating ------------------------------------------------------------------------------

def invalidate(tr: Tracking, c: Client | None, key: bytes, bcast: bool = True) -> None:
    """trackingInvalidateKey: `key` changed (by `c`'s command; None for expiry and eviction).
    `bcast` false: the key is only being forgotten (the table's size limit), not changed."""
    if bcast and tr.prefixes:
        due = False
        for p, bs in tr.prefixes.items():
            if key.startswith(p):
                bs.keys[key] = c
                due = True
        if due and not tr.broadcast_due:
            tr.broadcast_due = True
            tr.server.call_soon(lambda: broadcast(tr))
    ids = tr.table.pop(key, None)
    if ids is None:
        return
    tr.items -= len(ids)
    clients = tr.server.clients
    frame = None
    for cid in ids:
        target = clients.get(cid)
        if target is None:
            continue
        ct = target.tracking
        # A client that switched to BCAST since it read the key is not told of it.  NOLOOP spares
        # the client whose command is executing (Redis's current_client): the caller of a script
        # that writes, and the reader whose command reclaims an expired key.
        if ct is None or ct.bcast or (ct.noloop and target is tr.current):
            continue
        if target is tr.current:
            tr.pending.append(key)
        else:
            if frame is None:
                frame = _keys_frame([key])
            send(target, frame)


def flushed(srv: Server) -> None:
    """FLUSHDB / FLUSHALL (trackingInvalidateKeysOnFlush): every tracking client is told that
    every key changed (a null), and the table starts empty."""
    tr = srv.tracking
    if tr is None:
        return
    if tr.clients:
        for c in list(srv.clients.values()):
            if c.tracking is not None:
                if c is tr.current:
                    tr.pending.append(_FLUSHED)
                else:
                    send(c, _NULL[c.resp])
    tr.table = {}
    tr.items = 0


def send(c: Client, frame: bytes) -> None:
    """sendTrackingMessage: `frame` (an array of keys, or a null) to `c` or where it redirects."""
    ct = c.tracking
    target = c
    redirected = False
    if ct is not None and ct.redirect:
        target = c.server.clients.get(ct.redirect)  # type: ignore[assignment]
        if target is None or target.closed:
            ct.broken = True
            if c.resp == 3:
                c.write(b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % ct.redirect)
            return
        redirected = True
    if target.resp == 3:
        target.write(_PUSH + frame)
    elif redirected and client_class(target) == "pubsub":
        target.write(_MESSAGE + frame)
    # else: a RESP2 connection cannot take a push in the middle of its replies; nothing is sent


def _keys_frame(keys: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)


def broadcast(tr: Tracking) -> None:
    """trackingBroadcastInvalidationMessages, once per event-loop iteration with changes: each
    prefix's changed keys to each client registered for it."""
    tr.broadcast_due = False
    if not tr.clients:
        return
    for p in sorted(tr.prefixes):
        bs = tr.prefixes[p]
        if bs.keys:
            keys = sorted(bs.keys)
            common = None
            for c in list(bs.clients):
                ct = c.tracking
                if ct is not None and ct.noloop:
                    own = [k for k in keys if bs.keys[k] is not c]
                    if own:
                        send(c, _keys_frame(own))
                else:
                    if common is None:
                        common = _keys_frame(keys)
                    send(c, common)
            bs.keys = {}


# ---- around a tracking client's command --------------------------------------------------------

def limit_table(srv: Server) -> None:
    """trackingLimitUsedSlots: forget keys (telling their clients, as if the keys changed) until
    the table is within tracking-table-max-keys, with an effort that grows while it stays over.
    Redis runs it before every command; the table only grows in a tracking client's command, so
    raxdb runs it after those (and just after a CONFIG SET lowers the limit, as serverCron would),
    which sends the same messages in the same order among each client's replies, without a step on
    the fast loop."""
    tr = cast("Tracking | None", srv.tracking)  # the server's is this module's Tracking
    limit = int(srv.config.values.get("tracking-table-max-keys", "0"))
    if tr is None or not 0 < limit < len(tr.table):
        return
    effort = 100 * (tr.over_limit_runs + 1)
    table = tr.table
    for key in list(islice(table, min(effort, len(table) - limit))):
        invalidate(tr, None, key, bcast=False)
    tr.over_limit_runs = tr.over_limit_runs + 1 if len(table) > limit else 0


def _send_owed(c: Client, pending: list[bytes | None]) -> None:
    """What `c`'s command (or its serving) changed among its keys, now that its reply is out: a
    key's invalidation each, a null for a flush."""
    for key in pending:
        send(c, _NULL[c.resp] if key is _FLUSHED else _keys_frame([key]))


def serve_begin(srv: Server, c: Client) -> Any:
    """A blocked client is about to be served (handleClientsBlockedOnKeys makes it the current
    client): what its serving owes it waits for its reply.  Returns what serve_end restores."""
    tr = srv.tracking
    if tr is None:
        return None
    saved = (tr.current, tr.pending)
    tr.current, tr.pending = c, []
    return saved


def serve_end(srv: Server, c: Client, saved: Any) -> None:
    """After the served client's reply (afterCommand(receiver)): send what it is owed, then give
    the command that woke it back its own state."""
    tr = srv.tracking
    if tr is None or saved is None:
        return
    pending = tr.pending
    tr.current, tr.pending = saved
    _send_owed(c, pending)


def after_command(c: Client, cmd: Command | None) -> None:
    """afterCommand and resetClient's part: what `c` is owed goes out after its reply, and a
    CLIENT CACHING answer expires unless the command was a CLIENT subcommand or queued in MULTI."""
    tr = c.server.tracking
    assert tr is not None
    if tr.pending:
        # After the reply: `c` is running, so its writes land in its batch's output, in order.
        pending, tr.pending = tr.pending, []
        _send_owed(c, pending)
    ct = c.tracking
    if ct is not None and ct.caching and c.multi is None and (cmd is None or (cmd.parent or cmd).name != "client"):
        ct.caching = False
    limit_table(c.server)


def info_stats(srv: Server) -> tuple[int, int, int]:
    """INFO stats: tracking_total_keys, tracking_total_items, tracking_total_prefixes."""
    tr = srv.tracking
    if tr is None:
        return 0, 0, 0
    return len(tr.table), tr.items, len(tr.prefixes)


def tracking_info(c: Client) -> Any:
    """CLIENT TRACKINGINFO's reply."""
    ct = c.tracking
    enc = c.enc
    flags = [b"on" if ct is not None else b"off"]
    if ct is not None:
        flags += [name for on, name in ((ct.bcast, b"bcast"), (ct.optin, b"optin"),
                                        (ct.optin and ct.caching, b"caching-yes"), (ct.optout, b"optout"),
                                        (ct.optout and ct.caching, b"caching-no"), (ct.noloop, b"noloop"),
                                        (ct.broken, b"broken_redirect")) if on]
    prefixes = sorted(ct.prefixes) if ct is not None else []
    return enc.map([R.bulk(b"flags"), enc.set([R.bulk(f) for f in flags]),
                    R.bulk(b"redirect"), R.integer(ct.redirect if ct is not None else -1),
                    R.bulk(b"prefixes"), R.array([R.bulk(p) for p in prefixes])])


# A disconnect turns tracking off (registered here rather than by CLIENT's family, commands/
# t_client.py, which so loads on first use: tracking is on only once CLIENT TRACKING ran).
lifecycle.DISCONNECT_HOOKS.append(disable)
