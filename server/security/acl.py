"""ACL users as Redis 7.0 has them (its acl.c): the model, the permission check and the ACL log.

Model.  A `User` has flags (on/off, nopass, sanitize-payload), SHA-256 password hashes and a list
of `Selector`s, the first of which is the root selector (the rules written outside parentheses);
7.0's "(...)" rules add more.  A selector holds a command bitmap (a Python int over the command
ids of Redis 7.0's whole command table, as `server.orig_commands`; bit `FUTURE` is set only by
+@all / allcommands, which is how Redis tells "+@all -x" from "-@all +y"), first-args allowed for
otherwise denied commands (+select|0), key patterns each with read/write permissions, and channel
patterns.  Rules apply in order, as ACLSetUser does, to a copy of the user: an error leaves the
user as it was.  `describe()` is ACLDescribeUser: flags, passwords, then per selector keys,
channels and the command rules found by Redis's best-fit over the categories followed by single
commands.  One deliberate difference: Redis emits single-command rules in its command dict's
order, which is seeded at random per process; raxdb emits them in command-table order.

The command universe is the metadata table (table/metadata.py), not the implemented commands,
so category counts, and therefore the rules ACL LIST shows, are Redis's.  Commands newer than
7.0 that raxdb accepts (CLIENT SETINFO) take their bits from categories like the rest but are
left out of counting and description, which Redis 7.0 could not show.

Checking.  A command passes if any selector passes it (ACLCheckAllUserCommandPerm): the command
bit (or an allowed first argument), every key the key specs find with the permissions its spec
flags ask for (access: read; insert, delete, update: write), and every channel of
(P|S)SUBSCRIBE / (S)PUBLISH.  When none does, the reason reported is the worst one seen (channel
over key over command), the last argument position breaking ties, as Redis picks it.

Zero cost when unused.  `User.free` is true while some selector allows every command, key and
channel; a client whose user is not free is never `plain` (Client.update_plain), so only such
clients reach the check in Client.execute().  Changing a user refreshes its clients' `plain`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from raxdb.protocol import reply as R
from raxdb.protocol.request import split_inline_args
from raxdb.server.base.errors import c_str
from raxdb.server.base.fields import UserFields
from raxdb.server.base.log import LOG
from raxdb.server.conn.clientinfo import client_info_line
from raxdb.server.table.getkeys import key_refs
from raxdb.server.table.registry import TABLE, Command, newer
from raxdb.storage.glob import glob_match

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server
    from raxdb.server.table.metadata import CommandMeta

CATEGORIES = ("keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
              "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
              "connection", "transaction", "scripting")

OK, DENIED_CMD, DENIED_KEY, DENIED_AUTH, DENIED_CHANNEL = 0, 1, 2, 3, 4
CTX_TOPLEVEL, CTX_LUA, CTX_MULTI = 0, 1, 2
_CTX_NAMES = {CTX_TOPLEVEL: b"toplevel", CTX_LUA: b"lua", CTX_MULTI: b"multi"}
_REASON_NAMES = {DENIED_CMD: b"command", DENIED_KEY: b"key", DENIED_CHANNEL: b"channel", DENIED_AUTH: b"auth"}

ENABLED, DISABLED, NOPASS, SANITIZE, SKIP_SANITIZE = 1, 2, 4, 8, 16
USER_FLAGS = ((b"on", ENABLED), (b"off", DISABLED), (b"nopass", NOPASS),
               (b"skip-sanitize-payload", SKIP_SANITIZE), (b"sanitize-payload", SANITIZE))
ROOT, ALLKEYS, ALLCOMMANDS, ALLCHANNELS = 1, 2, 4, 8
READ, WRITE = 1, 2
ALL_PERM = READ | WRITE
FUTURE = 1023  # USER_COMMAND_BITS_COUNT - 1: never a command's id
ALL_BITS = (1 << 1024) - 1
_LOG_GROUP_MS = 60000

# Reasons of ACLSetUserStringError, by the errno ACLSetUser would set.
ENOENT = "Unknown command or category name in ACL"
EINVAL = "Syntax error"
EEXIST = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any "
          "effect. Try 'resetkeys' to start with an empty list of patterns")
EISDIR = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any "
          "effect. Try 'resetchannels' to start with an empty list of channels")
ENODEV = "The password you are trying to remove from the user does not exist"
EBADMSG = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
EALREADY = "Duplicate user found. A user can only be defined once in config files"
ECHILD = "Allowing first-arg of a subcommand is not supported"

# (P|S)SUBSCRIBE and (S)PUBLISH: the channels ACLs check, (first position, count or -1, is pattern)
_CHANNEL_ARGS = {"subscribe": (1, -1, False), "ssubscribe": (1, -1, False), "psubscribe": (1, -1, True),
                 "publish": (1, 1, False), "spublish": (1, 1, False)}
_WRITE_SPEC_FLAGS = ("insert", "delete", "update")


class RuleError(Exception):
    """A rule ACLSetUser refuses; the text is ACLSetUserStringError's."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def has_spaces(s: bytes) -> bool:
    """ACLStringHasSpaces: C isspace or NUL."""
    return any(ch in b" \t\n\v\f\r\0" for ch in s)


def hash_password(password: bytes) -> bytes:
    # hashlib imported by the first password, hmac by the first check (~5.6 M instructions start-up skips)
    import hashlib
    return hashlib.sha256(password).hexdigest().encode()


def _rule_hash(op: bytes) -> bytes:
    """The hash a password rule names: of the clear text after > or <, or given after # or !."""
    if op[:1] in (b">", b"<"):
        return hash_password(op[1:])
    h = op[1:]
    if len(h) != 64 or not all(48 <= ch <= 57 or 97 <= ch <= 102 for ch in h):
        raise RuleError(EBADMSG)
    return h


# ---- the command universe ----------------------------------------------------------------------
class AclCommand:
    """ACL's view of one command or subcommand of Redis 7.0's table."""

    __slots__ = ("id", "fullname", "parent", "subs", "cats", "no_auth", "mask", "extra")

    def __init__(self, cid: int, meta: CommandMeta, parent: AclCommand | None, extra: bool) -> None:
        self.id = cid
        self.fullname = meta.name
        self.parent = parent
        self.subs: dict[str, AclCommand] = {}
        self.cats = frozenset(cat[1:] for cat in meta.acl_categories)
        self.no_auth = "no_auth" in meta.flags
        self.mask = 1 << cid  # its bit and its subcommands' (ACLChangeSelectorPerm's reach)
        self.extra = extra


class Universe:
    def __init__(self) -> None:
        self.top: dict[str, AclCommand] = {}
        self.by_name: dict[str, AclCommand] = {}
        nid = 0
        for name, meta in TABLE.meta.items():
            top = AclCommand(nid, meta, None, newer(name, (7, 0)))
            nid += 1
            self.top[name] = self.by_name[name] = top
            for full, sub_meta in meta.subcommands.items():
                sub = AclCommand(nid, sub_meta, top, newer(full, (7, 0)))
                nid += 1
                top.subs[full.split("|", 1)[1]] = sub
                self.by_name[full] = sub
                top.mask |= sub.mask
        every = list(self.by_name.values())
        # What +@cat / -@cat changes (each member with its subcommands), and what counting sees.
        self.cat_mask = {cat: 0 for cat in CATEGORIES}
        self.cat_count = {cat: 0 for cat in CATEGORIES}
        for ac in every:
            for cat in ac.cats:
                if cat in self.cat_mask:
                    self.cat_mask[cat] |= ac.mask
                    if not ac.extra:
                        self.cat_count[cat] |= 1 << ac.id
        self.cat_size = {cat: m.bit_count() for cat, m in self.cat_count.items()}

    def lookup(self, name: bytes) -> AclCommand | None:
        """lookupCommandBySdsLogic over the original table: "cmd" or "container|sub"."""
        parts = c_str(name).lower().split(b"|")
        if len(parts) > 2 or not parts[0]:
            return None
        top = self.top.get(parts[0].decode(errors="replace"))
        if top is None or len(parts) == 1:
            return top
        if not top.subs:
            return None
        return top.subs.get(parts[1].decode(errors="replace"))

    def of(self, cmd: Command) -> AclCommand:
        return self.by_name[cmd.fullname]


_UNIVERSE: Universe | None = None


def universe() -> Universe:
    global _UNIVERSE
    if _UNIVERSE is None:
        _UNIVERSE = Universe()
    return _UNIVERSE


# ---- selectors ---------------------------------------------------------------------------------
class Selector:
    __slots__ = ("flags", "allowed", "firstargs", "patterns", "channels")

    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.allowed = 0
        self.firstargs: dict[int, list[bytes]] = {}
        self.patterns: list[list[Any]] = []  # [pattern, READ|WRITE]
        self.channels: list[bytes] = []

    def copy(self) -> Selector:
        s = Selector(self.flags)
        s.allowed = self.allowed
        s.firstargs = {k: list(v) for k, v in self.firstargs.items()}
        s.patterns = [list(p) for p in self.patterns]
        s.channels = list(self.channels)
        return s

    def _change(self, ac: AclCommand, allow: bool) -> None:
        """ACLChangeSelectorPerm: the command with its subcommands."""
        if allow:
            self.allowed |= ac.mask
        else:
            self.allowed &= ~ac.mask
            self.flags &= ~ALLCOMMANDS
        self.firstargs.pop(ac.id, None)

    def _category(self, name: bytes, allow: bool) -> None:
        cat = name.lower().decode(errors="replace")
        u = universe()
        mask = u.cat_mask.get(cat)
        if mask is None:
            raise RuleError(ENOENT)
        if allow:
            self.allowed |= mask
        else:
            self.allowed &= ~mask
            if mask:
                self.flags &= ~ALLCOMMANDS
        for ac in u.top.values():
            if cat in ac.cats:
                self.firstargs.pop(ac.id, None)

    def apply(self, op: bytes) -> None:
        """ACLSetSelector: one rule on this selector (RuleError when refused)."""
        word = c_str(op).lower()
        if word in (b"allkeys", b"~*"):
            self.flags |= ALLKEYS
            self.patterns.clear()
        elif word == b"resetkeys":
            self.flags &= ~ALLKEYS
            self.patterns.clear()
        elif word in (b"allchannels", b"&*"):
            self.flags |= ALLCHANNELS
            self.channels.clear()
        elif word == b"resetchannels":
            self.flags &= ~ALLCHANNELS
            self.channels.clear()
        elif word in (b"allcommands", b"+@all"):
            self.allowed = ALL_BITS
            self.flags |= ALLCOMMANDS
            self.firstargs.clear()
        elif word in (b"nocommands", b"-@all"):
            self.allowed = 0
            self.flags &= ~ALLCOMMANDS
            self.firstargs.clear()
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.flags & ALLCHANNELS:
                raise RuleError(EISDIR)
            pat = op[1:]
            if has_spaces(pat):
                raise RuleError(EINVAL)
            if pat not in self.channels:
                self.channels.append(pat)
            self.flags &= ~ALLCHANNELS
        elif op[:1] == b"+" and op[1:2] != b"@":
            self._allow_command(op[1:])
        elif op[:1] == b"-" and op[1:2] != b"@":
            ac = universe().lookup(op[1:])
            if ac is None:
                raise RuleError(ENOENT)
            self._change(ac, False)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            self._category(c_str(op[2:]), op[:1] == b"+")
        else:
            raise RuleError(EINVAL)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.flags & ALLKEYS:
            raise RuleError(EEXIST)
        perm = 0
        offset = 1
        if op[:1] == b"%":
            while offset < len(op):
                ch = op[offset]
                if ch in (82, 114) and not perm & READ:  # R
                    perm |= READ
                elif ch in (87, 119) and not perm & WRITE:  # W
                    perm |= WRITE
                elif ch == 126:  # ~
                    offset += 1
                    break
                else:
                    raise RuleError(EINVAL)
                offset += 1
            if not perm:  # Redis would record a pattern it cannot describe (and abort on ACL LIST)
                raise RuleError(EINVAL)
        else:
            perm = ALL_PERM
        pat = op[offset:]
        if has_spaces(pat):
            raise RuleError(EINVAL)
        for p in self.patterns:
            if p[0] == pat:
                p[1] |= perm
                break
        else:
            self.patterns.append([pat, perm])
        self.flags &= ~ALLKEYS

    def _allow_command(self, name: bytes) -> None:
        u = universe()
        cname = c_str(name)
        if b"|" not in cname:
            ac = u.lookup(cname)
            if ac is None:
                raise RuleError(ENOENT)
            self._change(ac, True)
            return
        base, _, sub = cname.rpartition(b"|")
        ac = u.lookup(base)
        if ac is None:
            raise RuleError(ENOENT)
        if ac.parent is not None:
            raise RuleError(ECHILD)
        if not sub:
            raise RuleError(EINVAL)
        if ac.subs:
            full = u.lookup(cname)
            if full is None:
                raise RuleError(ENOENT)
            self._change(full, True)
            return
        LOG.warning("Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of "
                    f"ACL and may get disabled in the future (offender: +{cname.decode(errors='replace')})")
        allowed = self.firstargs.setdefault(ac.id, [])
        if all(a.lower() != sub.lower() for a in allowed):
            allowed.append(sub)

    # ---- description ---------------------------------------------------------------------------
    def describe_commands(self) -> bytes:
        """ACLDescribeSelectorCommandRules: +@all or -@all, the best-fitting categories, then the
        single commands (and first-args) that still differ."""
        u = universe()
        additive = not (self.allowed >> FUTURE) & 1
        rules = [b"-@all" if additive else b"+@all"]
        fake = 0 if additive else ALL_BITS
        temp = self.allowed
        applied: set[str] = set()
        while True:
            best = None
            mindiff, maxsame = 1 << 62, 0
            for cat in CATEGORIES:
                if cat in applied:
                    continue
                on = (temp & u.cat_count[cat]).bit_count()
                off = u.cat_size[cat] - on
                diff, same = (off, on) if additive else (on, off)
                if same > diff and (diff < mindiff or (diff == mindiff and same > maxsame)):
                    best, mindiff, maxsame = cat, diff, same
            if best is None:
                break
            mask = u.cat_mask[best]
            if additive:
                fake |= mask
                temp &= ~mask
            else:
                fake &= ~mask
                temp |= mask
            rules.append(("+@" if additive else "-@").encode() + best.encode())
            applied.add(best)
        mine = self.allowed
        for top in u.top.values():
            if top.extra:
                continue
            for ac in (top, *top.subs.values()):
                if ac.extra:
                    continue
                bit = (mine >> ac.id) & 1
                if bit != (fake >> ac.id) & 1:
                    rules.append((b"+" if bit else b"-") + ac.fullname.encode())
                    fake = fake | ac.mask if bit else fake & ~ac.mask
            if not (mine >> top.id) & 1:
                for arg in self.firstargs.get(top.id, ()):
                    rules.append(b"+" + top.fullname.encode() + b"|" + arg)
        return b" ".join(rules)

    def key_patterns_text(self) -> list[bytes]:
        out = []
        for pat, perm in self.patterns:
            prefix = b"~" if perm == ALL_PERM else b"%R~" if perm == READ else b"%W~"
            out.append(prefix + pat)
        return out

    def describe(self) -> bytes:
        parts: list[bytes] = []
        if self.flags & ALLKEYS:
            parts.append(b"~*")
        else:
            parts.extend(self.key_patterns_text())
        if self.flags & ALLCHANNELS:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts.extend(b"&" + ch for ch in self.channels)
        parts.append(self.describe_commands())
        return b" ".join(parts)

    # ---- checking ------------------------------------------------------------------------------
    def check(self, ac: AclCommand, cmd: Command, argv: list[bytes], keys: list[Any]) -> tuple[int, int]:
        """ACLSelectorCheckCmd: (OK or the denial, the argument position of a denied key or channel).
        `keys` caches the command's key references between selectors (filled on first need)."""
        if not self.flags & ALLCOMMANDS and not ac.no_auth and not (self.allowed >> ac.id) & 1:
            allowed = self.firstargs.get(ac.id)
            if len(argv) < 2 or not allowed:
                return DENIED_CMD, 0
            arg = c_str(argv[2 if ac.parent is not None else 1]).lower()
            if all(c_str(a).lower() != arg for a in allowed):
                return DENIED_CMD, 0
        if not self.flags & ALLKEYS:
            if not keys:
                keys.append(_key_refs(cmd, argv))
            for pos, flags in keys[0]:
                if not self._key_allowed(argv[pos], flags):
                    return DENIED_KEY, pos
        if not self.flags & ALLCHANNELS:
            spec = _CHANNEL_ARGS.get(ac.fullname)
            if spec is not None:
                start, count, is_pattern = spec
                stop = len(argv) if count < 0 else min(len(argv), start + count)
                for pos in range(start, stop):
                    if not channel_allowed(self.channels, argv[pos], is_pattern):
                        return DENIED_CHANNEL, pos
        return OK, 0

    def _key_allowed(self, key: bytes, spec_flags: tuple[str, ...]) -> bool:
        need = 0
        if "access" in spec_flags:
            need |= READ
        if any(f in spec_flags for f in _WRITE_SPEC_FLAGS):
            need |= WRITE
        for pat, perm in self.patterns:
            if perm & need == need and glob_match(pat, key):
                return True
        return False

    def is_free(self) -> bool:
        return self.flags & (ALLKEYS | ALLCHANNELS | ALLCOMMANDS) == ALLKEYS | ALLCHANNELS | ALLCOMMANDS

    def reads_every_key(self) -> bool:
        """ACLSelectorHasUnrestrictedKeyAccess for read access: allkeys, or a readable '*'."""
        return bool(self.flags & ALLKEYS) or any(pat == b"*" and perm & READ for pat, perm in self.patterns)


def channel_allowed(patterns: list[bytes], channel: bytes, is_pattern: bool) -> bool:
    """ACLCheckChannelAgainstList: a PSUBSCRIBE pattern must equal an ACL pattern literally."""
    for pat in patterns:
        if (is_pattern and c_str(pat) == c_str(channel)) or (not is_pattern and glob_match(pat, channel)):
            return True
    return False


def _key_refs(cmd: Command, argv: list[bytes]) -> list[Any]:
    try:
        refs = key_refs(cmd, argv)
    except Exception:  # arguments the command itself will refuse
        return []
    return [(pos, flags) for pos, flags in refs if "not_key" not in flags]


# ---- users -------------------------------------------------------------------------------------
class User(UserFields):  # `free` is UserFields' (server/base/fields.py)
    __slots__ = ("name", "flags", "passwords", "selectors", "_descr")

    def __init__(self, name: bytes, pubsub_default: int = 0) -> None:
        self.name = name
        self.flags = DISABLED
        self.passwords: list[bytes] = []
        self.selectors = [Selector(ROOT | pubsub_default)]
        self.free = False
        self._descr: bytes | None = None

    def copy_from(self, other: User) -> None:
        self.flags = other.flags
        self.passwords = list(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]
        self._descr = other._descr
        self.free = other.free

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    def apply(self, op: bytes, pubsub_default: int = 0) -> None:
        """ACLSetUser: one rule (RuleError when refused; the caller works on a copy)."""
        self._descr = None
        try:
            self._apply(op, pubsub_default)
        finally:
            self.free = any(s.is_free() for s in self.selectors)

    def _apply(self, op: bytes, pubsub_default: int) -> None:
        if not op:
            return
        word = c_str(op).lower()
        if word == b"on":
            self.flags = (self.flags | ENABLED) & ~DISABLED
        elif word == b"off":
            self.flags = (self.flags | DISABLED) & ~ENABLED
        elif word == b"skip-sanitize-payload":
            self.flags = (self.flags | SKIP_SANITIZE) & ~SANITIZE
        elif word == b"sanitize-payload":
            self.flags = (self.flags | SANITIZE) & ~SKIP_SANITIZE
        elif word == b"nopass":
            self.flags |= NOPASS
            self.passwords.clear()
        elif word == b"resetpass":
            self.flags &= ~NOPASS
            self.passwords.clear()
        elif op[:1] in (b">", b"#"):
            h = _rule_hash(op)
            if h not in self.passwords:
                self.passwords.append(h)
            self.flags &= ~NOPASS
        elif op[:1] in (b"<", b"!"):
            h = _rule_hash(op)
            if h not in self.passwords:
                raise RuleError(ENODEV)
            self.passwords.remove(h)
        elif op[:1] == b"(" and op[-1:] == b")":
            s = Selector(pubsub_default)
            for rule in split_inline_args(op[1:-1]) or []:
                s.apply(rule)
            self.selectors.append(s)
        elif word == b"clearselectors":
            del self.selectors[1:]
        elif word == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels"):
                self._apply(rule, pubsub_default)
            if pubsub_default & ALLCHANNELS:
                self._apply(b"allchannels", pubsub_default)
            for rule in (b"off", b"sanitize-payload", b"clearselectors", b"-@all"):
                self._apply(rule, pubsub_default)
        else:
            self.root.apply(op)

    def describe(self) -> bytes:
        """ACLDescribeUser, cached until the next change."""
        if self._descr is None:
            parts = [name for name, flag in USER_FLAGS if self.flags & flag]
            parts.extend(b"#" + h for h in self.passwords)
            parts.append(self.root.describe())
            text = b" ".join(parts)
            for s in self.selectors[1:]:
                text += b" (" + s.describe() + b")"
            self._descr = text
        return self._descr

    def check_password(self, password: bytes) -> bool:
        if self.flags & DISABLED:
            return False
        if self.flags & NOPASS:
            return True
        import hmac
        h = hash_password(password)
        return any(hmac.compare_digest(h, p) for p in self.passwords)

    def check(self, cmd: Command, argv: list[bytes]) -> tuple[int, int]:
        """ACLCheckAllUserCommandPerm: (OK, 0) or (the denial to report, its argument position)."""
        ac = universe().of(cmd)
        keys: list[Any] = []
        worst, where = DENIED_CMD, 0
        for s in self.selectors:
            ret, pos = s.check(ac, cmd, argv, keys)
            if ret == OK:
                return OK, 0
            if ret > worst or (ret == worst and pos > where):
                worst, where = ret, pos
        return worst, where


    def reads_every_key(self, cmd: Command, argv: list[bytes]) -> bool:
        """ACLUserCheckCmdWithUnrestrictedKeyAccess(..., CMD_KEY_ACCESS): may some selector that
        allows this call read any key?  (SORT's BY and GET name keys its key specs do not.)"""
        ac = universe().of(cmd)
        keys: list[Any] = []
        return any(s.check(ac, cmd, argv, keys)[0] == OK and s.reads_every_key() for s in self.selectors)


def merge_selector_args(rules: list[bytes]) -> tuple[list[bytes] | None, int]:
    """ACLMergeSelectorArguments: a "(...)" spread over several arguments becomes one; (None, the
    index of the unmatched opening) when one is not closed."""
    out: list[bytes] = []
    current: bytes | None = None
    start = -1
    for i, op in enumerate(rules):
        if current is None and op[:1] == b"(" and op[-1:] != b")":
            current, start = op, i
            continue
        if current is not None:
            current += b" " + op
            if op[-1:] == b")":
                out.append(current)
                current = None
            continue
        out.append(op)
    if current is not None:
        return None, start
    return out, -1


# ---- the ACL log ---------------------------------------------------------------------------------
class LogEntry:
    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "cinfo", "entry_id", "created")

    def __init__(self, reason: int, context: int, obj: bytes, username: bytes, ctime: int, cinfo: bytes,
                 entry_id: int = 0) -> None:
        self.count = 1
        self.entry_id = entry_id  # 7.2's entry-id: the server's count of entries made before it
        self.created = ctime  # 7.2's timestamp-created (ctime is the last update)
        self.reason = reason
        self.context = context
        self.object = obj
        self.username = username
        self.ctime = ctime
        self.cinfo = cinfo


# ---- the registry ------------------------------------------------------------------------------
class Acl:
    """The users of one server (Redis's Users rax, DefaultUser and ACLLog)."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.users: dict[bytes, User] = {}
        self.log: list[LogEntry] = []  # newest first
        self.log_entries = 0  # entries ever made (ACLLogEntryCount: ACL LOG RESET keeps it)
        self.default = self._create_default()
        self.users[b"default"] = self.default

    def pubsub_default(self) -> int:
        return ALLCHANNELS if self.srv.config.values.get("acl-pubsub-default") == "allchannels" else 0

    def _create_default(self) -> User:
        u = User(b"default", self.pubsub_default())
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            u.apply(rule)
        return u

    def new_user(self, name: bytes) -> User:
        return User(name, self.pubsub_default())

    def sorted_users(self) -> list[User]:
        return [self.users[k] for k in sorted(self.users)]

    # ---- clients ---------------------------------------------------------------------------------
    def default_open(self) -> bool:
        """Does the default user let a connection in without AUTH (clientSetDefaultAuth)?"""
        f = self.default.flags
        return bool(f & NOPASS) and not f & DISABLED

    def set_default_auth(self, c: Client) -> None:
        c.user = self.default
        c.authenticated = self.default_open()

    def authenticate(self, c: Client, username: bytes, password: bytes, argv: list[bytes]) -> bool:
        """ACLAuthenticateUser (`argv` is the AUTH or HELLO running): log the client in, or log
        the failure in the ACL log."""
        u = self.users.get(username)
        if u is None or not u.check_password(password):
            ctx = CTX_MULTI if c.multi is not None or c.in_exec else CTX_TOPLEVEL  # EXEC runs in MULTI's context
            # the fast path sets last_argv after its batch: the entry's client-info must show this
            # command (cmd=, argv-mem=) as Redis's does, not the one before it
            c.last_argv = argv
            self.add_log(c, DENIED_AUTH, ctx, argv[0], username)
            return False
        c.user = u
        c.authenticated = True
        c.update_plain()
        return True

    def user_changed(self, u: User) -> None:
        """Its clients may have become restricted, or free again; the default user decides
        whether new connections need AUTH."""
        opened = u is self.default and self.default_open()
        for c in list(self.srv.clients.values()):
            if opened and not c.authenticated:  # authRequired() is false for them now
                c.authenticated = True
            if c.user is u or opened:
                c.update_plain()

    def kill_clients_of(self, u: User, current: Client | None) -> None:
        """ACLFreeUserAndKillClients: its connections go (the current one after its reply)."""
        for c in list(self.srv.clients.values()):
            if c.user is u:
                c.user = self.default
                c.authenticated = False
                if c is current:
                    c.close_after_replies()
                else:
                    c.kill_reason = "killed"
                    c.close()

    def _kill_pubsub_clients(self, new: User, old: User) -> None:
        """ACLKillPubsubClientsIfNeeded: subscribers of `old` that `new`'s channels no longer allow."""
        if any(s.flags & ALLCHANNELS for s in new.selectors):
            return
        upcoming = [ch for s in new.selectors for ch in s.channels]
        if all(not s.flags & ALLCHANNELS and all(ch in upcoming for ch in s.channels) for s in old.selectors):
            return
        for c in list(self.srv.clients.values()):
            if c.user is not old or not (c.channels or c.patterns or c.shard_channels):
                continue
            if (any(not channel_allowed(upcoming, p, True) for p in c.patterns)
                    or any(not channel_allowed(upcoming, ch, False) for ch in c.channels)
                    or any(not channel_allowed(upcoming, ch, False) for ch in c.shard_channels)):
                c.kill_reason = "killed"
                c.close()

    # ---- SETUSER ---------------------------------------------------------------------------------
    def set_user(self, name: bytes, rules: list[bytes]) -> str | None:
        """ACLStringSetUser: apply every rule to a copy, then to the user (created if new); the
        error text when a rule is refused (and nothing changes)."""
        merged, bad = merge_selector_args(rules)
        if merged is None:
            return "Unmatched parenthesis in acl selector starting at '%s'." % c_str(rules[bad]).decode(
                errors="surrogateescape")
        u = self.users.get(name)
        temp = self.new_user(name)
        if u is not None:
            temp.copy_from(u)
        pd = self.pubsub_default()
        for op in merged:
            try:
                temp.apply(op, pd)
            except RuleError as e:
                return "Error in ACL SETUSER modifier '%s': %s" % (c_str(op).decode(errors="surrogateescape"),
                                                                    e.reason)
        if u is not None:
            self._kill_pubsub_clients(temp, u)
        else:
            u = self.users[name] = self.new_user(name)
        u.copy_from(temp)
        self.user_changed(u)
        return None

    def delete_users(self, names: list[bytes], current: Client) -> int:
        deleted = 0
        for name in names:
            u = self.users.pop(name, None)
            if u is not None:
                self.kill_clients_of(u, current)
                deleted += 1
        return deleted

    def update_default_password(self, password: str) -> None:
        """requirepass: ACLUpdateDefaultUserPassword."""
        self.default.apply(b"resetpass")
        if password:
            self.default.apply(b">" + password.encode(errors="surrogateescape"))
        else:
            self.default.apply(b"nopass")

    # ---- checks ----------------------------------------------------------------------------------
    def check(self, c: Client, cmd: Command, argv: list[bytes], context: int,
              user: User | None = None) -> int:
        """Check a command for the client's user (or `user`); a denial is logged and returned."""
        u = user or c.user
        ret, pos = u.check(cmd, argv)
        if ret != OK:
            obj = cmd.fullname.encode() if ret == DENIED_CMD else argv[pos]
            self.add_log(c, ret, context, obj, u.name)
        return ret

    def add_log(self, c: Client, reason: int, context: int, obj: bytes, username: bytes) -> None:
        """addACLLogEntry: a recent similar entry (among the ten newest) is bumped instead."""
        now = self.srv.now_ms
        cinfo = client_info_line(c, c).encode(errors="surrogateescape")
        log = self.log
        for i, e in enumerate(log[:10]):
            if (e.reason == reason and e.context == context and abs(e.ctime - now) <= _LOG_GROUP_MS
                    and e.object == obj and e.username == username):
                del log[i]
                log.insert(0, e)
                e.cinfo, e.ctime = cinfo, now
                e.count += 1
                return
        log.insert(0, LogEntry(reason, context, obj, username, now, cinfo, self.log_entries))
        self.log_entries += 1
        limit = int(self.srv.config.values["acllog-max-len"])
        del log[limit:]

    # ---- files -----------------------------------------------------------------------------------
    def load_file(self, filename: str, current: Client | None = None) -> str | None:
        """ACLLoadFromFile: all or nothing; the errors as one line, or None."""
        try:
            with open(filename, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            return f"Error loading ACLs, opening file '{filename}': {exc.strerror}"
        errors: list[str] = []
        users: dict[bytes, User] = {}
        pd = self.pubsub_default()
        for linenum, raw in enumerate(data.split(b"\n"), 1):
            line = raw.strip(b" \t\r\n")
            if not line:
                continue
            argv = line.split(b" ")
            if argv[0] != b"user" or len(argv) < 2:
                errors.append(f"{filename}:{linenum} should start with user keyword followed by the username. ")
                continue
            name = argv[1]
            if has_spaces(name):
                errors.append(f"'{filename}:{linenum}: username '{_s(name)}' contains invalid characters. ")
                continue
            if name in users:
                errors.append(f"WARNING: Duplicate user '{_s(name)}' found on line {linenum}. ")
                continue
            u = users[name] = User(name, pd)
            merged, _ = merge_selector_args(argv[2:])
            if merged is None:
                errors.append(f"{filename}:{linenum}: Unmatched parenthesis in selector definition.")
                continue
            syntax_error = False
            for op in merged:
                op = op.strip(b"\t\r\n")
                try:
                    u.apply(op, pd)
                except RuleError as e:
                    if e.reason == ENOENT:
                        errors.append(f"{filename}:{linenum}: Error in applying operation '{_s(op)}': {e.reason}. ")
                    elif not syntax_error:
                        errors.append(f"{filename}:{linenum}: {e.reason}. ")
                        syntax_error = True
        if errors:
            return "".join(errors) + ("WARNING: ACL errors detected, no change to the previously active ACL "
                                      "rules was performed")
        new_default = users.pop(b"default", None) or self._create_default()
        old = self.users
        self.default.copy_from(new_default)
        users[b"default"] = self.default
        self.users = users
        for name, u in old.items():
            if name != b"default":
                self.kill_clients_of(u, current)
        self.user_changed(self.default)
        return None

    def config_lines(self) -> list[str]:
        """CONFIG REWRITE's `user` lines: every user, none when an aclfile holds them."""
        if self.srv.config.values.get("aclfile"):
            return []
        return ["user " + _s(u.name) + " " + u.describe().decode(errors="surrogateescape")
                for u in self.sorted_users()]

    def save_file(self, filename: str) -> bool:
        text = b"".join(b"user " + u.name + b" " + u.describe() + b"\n" for u in self.sorted_users())
        tmp = f"{filename}.tmp-{os.getpid()}-{self.srv.now_ms}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(text)
            os.replace(tmp, filename)
        except OSError as exc:
            LOG.warning(f"Writing ACL file for ACL SAVE: {exc.strerror}")
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        return True

    # ---- start-up --------------------------------------------------------------------------------
    def load_at_startup(self) -> None:
        """ACLLoadUsersAtStartup: `user` directives or the aclfile (not both); SystemExit(1) on errors."""
        cfg = self.srv.config
        aclfile = cfg.values.get("aclfile", "")
        configured: list[list[bytes]] = getattr(cfg, "acl_users", [])
        if aclfile and configured:
            LOG.warning("Configuring Redis with users defined in redis.conf and at the same setting an ACL file "
                        "path is invalid. This setup is very likely to lead to configuration errors and security "
                        "holes, please define either an ACL file or declare users directly in your redis.conf, "
                        "but not both.")
            raise SystemExit(1)
        pd = self.pubsub_default()
        for rules in configured:
            name = rules[0]
            if has_spaces(name):
                LOG.warning("Spaces not allowed in ACL usernames")
                LOG.warning("Critical error while loading ACLs. Exiting.")
                raise SystemExit(1)
            u = self.users.get(name)
            if u is None:
                u = self.users[name] = self.new_user(name)
            else:
                u.apply(b"reset", pd)
            for op in rules[1:]:
                try:
                    u.apply(op, pd)
                except RuleError as e:
                    LOG.warning(f"Error loading ACL rule '{_s(op)}' for the user named '{_s(name)}': {e.reason}")
                    LOG.warning("Critical error while loading ACLs. Exiting.")
                    raise SystemExit(1) from None
            if u.flags & DISABLED:
                LOG.notice(f"The user '{_s(name)}' is disabled (there is no 'on' modifier in the user description). "
                           "Make sure this is not a configuration error.")
        if aclfile:
            err = self.load_file(aclfile)
            if err is not None:
                LOG.warning(f"Aborting Redis startup because of ACL errors: {err}")
                raise SystemExit(1)


def _s(b: bytes) -> str:
    return c_str(b).decode(errors="surrogateescape")


def validate_user_directive(args: list[bytes], queued: list[list[bytes]]) -> str | None:
    """ACLAppendUserForLoading for a `user` config line: the error text, or None once queued.
    Unknown commands pass here (Redis reports them when loading, after modules)."""
    if any(q[0] == args[1] for q in queued):
        return "Error in user declaration '%s': %s" % (_s(args[1]), EALREADY)
    merged, bad = merge_selector_args(args[2:])
    if merged is None:
        return "Error in user declaration '%s': %s" % (_s(args[bad]), EINVAL)
    fake = User(b"__fakeuser:0__")
    for j, op in enumerate(merged):
        try:
            fake.apply(op)
        except RuleError as e:
            if e.reason != ENOENT:
                # Redis indexes the whole line with the rule's index among the rules
                return "Error in user declaration '%s': %s" % (_s(args[j]), e.reason)
    queued.append([args[1], *merged])
    return None


def attach(srv: Server) -> Acl:
    acl = srv.acl = Acl(srv)
    if srv.config.requirepass:
        acl.update_default_password(srv.config.requirepass)
    srv.config.on_change.setdefault("requirepass", []).append(_on_requirepass(srv))
    srv.config.user_lines = acl.config_lines
    return acl


def _on_requirepass(srv: Server) -> Any:
    def hook(value: str) -> None:
        srv.acl.update_default_password(value)
        srv.acl.user_changed(srv.acl.default)

    return hook


def denied_text(ret: int, cmd: Command) -> bytes:
    """processCommand's NOPERM replies."""
    if ret == DENIED_CMD:
        return b"NOPERM this user has no permissions to run the '%s' command" % cmd.fullname.encode()
    if ret == DENIED_KEY:
        return b"NOPERM this user has no permissions to access one of the keys used as arguments"
    return b"NOPERM this user has no permissions to access one of the channels used as arguments"


def exec_denied_text(ret: int) -> bytes:
    """EXEC's reply for a queued command the rules no longer allow."""
    reason = {DENIED_CMD: b"no permission to execute the command or subcommand",
              DENIED_KEY: b"no permission to touch the specified keys",
              DENIED_CHANNEL: b"no permission to access one of the channels used as arguments"}[ret]
    return (b"NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. "
            b"This command is no longer allowed for the following reason: " + reason)


def script_denied_text(ret: int) -> bytes:
    """getAclErrorMessage, as a script's redis.call sees it."""
    reason = {DENIED_CMD: b"can't run this command or subcommand",
              DENIED_KEY: b"can't access at least one of the keys mentioned in the command arguments",
              DENIED_CHANNEL: b"can't publish to the channel mentioned in the command"}[ret]
    return b"The user executing the script " + reason


def log_entry_reply(e: LogEntry, enc: Any, now: int, newer: bool = False) -> bytes:
    """One ACL LOG entry; `newer` (compat-version 7.2+): with 7.2's entry-id and timestamps."""
    fields = [
        R.bulk(b"count"), R.integer(e.count),
        R.bulk(b"reason"), R.bulk(_REASON_NAMES.get(e.reason, b"unknown")),
        R.bulk(b"context"), R.bulk(_CTX_NAMES.get(e.context, b"unknown")),
        R.bulk(b"object"), R.bulk(e.object),
        R.bulk(b"username"), R.bulk(e.username),
        R.bulk(b"age-seconds"), enc.double((now - e.ctime) / 1000),
        R.bulk(b"client-info"), R.bulk(e.cinfo),
    ]
    if newer:
        fields += [R.bulk(b"entry-id"), R.integer(e.entry_id), R.bulk(b"timestamp-created"), R.integer(e.created),
                   R.bulk(b"timestamp-last-updated"), R.integer(e.ctime)]
    return enc.map(fields)
