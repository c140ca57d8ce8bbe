"""ACL SETUSER / GETUSER / DELUSER / LIST / USERS / WHOAMI / CAT / GENPASS / DRYRUN / LOG / LOAD / SAVE / HELP.

The model, checks and log live in server/security/acl.py; these are Redis 7.0's aclCommand replies over
it, error texts word for word.
"""

from __future__ import annotations

import os

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError, c_str, subcommand_syntax
from raxdb.server.commands.t_config import help_reply
from raxdb.server.security import acl as A
from raxdb.server.table.args import maybe_int
from raxdb.server.table.registry import command


@command("acl|setuser")
def acl_setuser(c, argv):
    name = argv[2]
    if A.has_spaces(name):
        raise CommandError("ERR Usernames can't contain spaces or null characters")
    err = c.server.acl.set_user(name, argv[3:])
    if err is not None:
        raise CommandError("ERR " + err)
    return R.OK


@command("acl|deluser")
def acl_deluser(c, argv):
    if any(name == b"default" for name in argv[2:]):
        raise CommandError("ERR The 'default' user cannot be removed")
    return R.integer(c.server.acl.delete_users(argv[2:], c))


def _selector_fields(s: A.Selector) -> list[bytes]:
    keys = b"~*" if s.flags & A.ALLKEYS else b" ".join(s.key_patterns_text())
    channels = b"&*" if s.flags & A.ALLCHANNELS else b" ".join(b"&" + ch for ch in s.channels)
    return [R.bulk(b"commands"), R.bulk(s.describe_commands()), R.bulk(b"keys"), R.bulk(keys),
            R.bulk(b"channels"), R.bulk(channels)]


@command("acl|getuser")
def acl_getuser(c, argv):
    u = c.server.acl.users.get(argv[2])
    enc = c.enc
    if u is None:
        return enc.null
    flags = [R.bulk(name) for name, flag in A.USER_FLAGS if u.flags & flag]
    fields = [R.bulk(b"flags"), enc.set(flags), R.bulk(b"passwords"), R.bulk_array(u.passwords),
              *_selector_fields(u.root), R.bulk(b"selectors"),
              R.array([enc.map(_selector_fields(s)) for s in u.selectors[1:]])]
    return enc.map(fields)


@command("acl|list")
def acl_list(c, argv):
    return R.bulk_array([b"user " + u.name + b" " + u.describe() for u in c.server.acl.sorted_users()])


@command("acl|users")
def acl_users(c, argv):
    return R.bulk_array([u.name for u in c.server.acl.sorted_users()])


@command("acl|whoami")
def acl_whoami(c, argv):
    return R.bulk(c.user.name)


def _aclfile(c) -> str:
    name = c.server.config.values.get("aclfile", "")
    if not name:
        raise CommandError("ERR This Redis instance is not configured to use an ACL file. You may want to specify "
                           "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
                           "Redis configuration file set) in order to store users in the Redis configuration.")
    return name


@command("acl|load")
def acl_load(c, argv):
    err = c.server.acl.load_file(_aclfile(c), c)
    if err is not None:
        raise CommandError("ERR " + err)
    return R.OK


@command("acl|save")
def acl_save(c, argv):
    if not c.server.acl.save_file(_aclfile(c)):
        raise CommandError("ERR There was an error trying to save the ACLs. Please check the server logs for more "
                           "information")
    return R.OK


@command("acl|cat")
def acl_cat(c, argv):
    if len(argv) == 2:
        return R.bulk_array([cat.encode() for cat in A.CATEGORIES])
    if len(argv) != 3:
        raise subcommand_syntax(argv)
    cat = c_str(argv[2]).lower().decode(errors="replace")
    if cat not in A.CATEGORIES:
        raise CommandError(b"ERR Unknown category '%s'" % c_str(argv[2], 128))
    u = A.universe()
    return R.bulk_array([ac.fullname.encode() for ac in u.by_name.values() if cat in ac.cats and not ac.extra])


@command("acl|genpass")
def acl_genpass(c, argv):
    bits = 256
    if len(argv) == 3:
        n = maybe_int(argv[2])
        if n is None:
            raise CommandError("ERR value is not an integer or out of range")
        bits = n
    elif len(argv) > 3:
        raise subcommand_syntax(argv)
    if bits <= 0 or bits > 4096:
        raise CommandError("ERR ACL GENPASS argument must be the number of bits for the output password, a "
                           "positive number up to 4096")
    chars = (bits + 3) // 4
    return R.bulk(os.urandom((chars + 1) // 2).hex()[:chars].encode())


@command("acl|log")
def acl_log(c, argv):
    if len(argv) > 3:
        raise subcommand_syntax(argv)
    log = c.server.acl.log
    count = 10
    if len(argv) == 3:
        if c_str(argv[2]).lower() == b"reset":
            log.clear()
            return R.OK
        n = maybe_int(argv[2])
        if n is None:
            raise CommandError("ERR value is not an integer or out of range")
        count = max(n, 0)
    now = c.server.now_ms
    newer = c.server.config.compat_version >= (7, 2)
    return R.array([A.log_entry_reply(e, c.enc, now, newer) for e in log[:count]])


@command("acl|dryrun")
def acl_dryrun(c, argv):
    srv = c.server
    u = srv.acl.users.get(argv[2])
    if u is None:
        raise CommandError(b"ERR User '%s' not found" % c_str(argv[2]))
    args = argv[3:]
    cmd = srv.table.lookup(args)
    if cmd is None:
        raise CommandError(b"ERR Command '%s' not found" % c_str(argv[3]))
    if not cmd.arity_ok(len(args)):
        raise CommandError(f"ERR wrong number of arguments for '{cmd.fullname}' command")
    ret, pos = u.check(cmd, args)
    if ret == A.DENIED_CMD:
        return R.bulk(b"This user has no permissions to run the '%s' command" % cmd.fullname.encode())
    if ret == A.DENIED_KEY:
        return R.bulk(b"This user has no permissions to access the '%s' key" % c_str(args[pos]))
    if ret == A.DENIED_CHANNEL:
        return R.bulk(b"This user has no permissions to access the '%s' channel" % c_str(args[pos]))
    return R.OK


_HELP = [
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
]


@command("acl|help")
def acl_help(c, argv):
    return help_reply("ACL", _HELP)
