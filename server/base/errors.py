"""Error replies shared by all commands, word for word as Redis 7.0 sends them.

A handler raises `CommandError(text)`; the dispatcher turns it into `-text\\r\\n`, counts it in
errorstats under its first word, and in failed_calls of the command.  Keeping the texts here means
one spelling for every caller.
"""


class CommandError(Exception):
    """An error reply.  `counted`: errorstats already have it (a script passing on the error of a
    command it called, which was counted when that command failed: ERR_REPLY_FLAG_NO_STATS_UPDATE)."""

    __slots__ = ("msg", "counted")

    def __init__(self, msg: str | bytes, counted: bool = False) -> None:
        msg = msg if isinstance(msg, bytes) else msg.encode()
        if 13 in msg or 10 in msg:  # a client's bytes in the text: Redis's addReplyErrorFormat
            msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")  # keeps the reply one line
        self.msg = msg
        self.counted = counted

    def __str__(self) -> str:
        return self.msg.decode(errors="replace")


WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
OVERFLOW = "ERR increment or decrement would overflow"
NO_SUCH_KEY = "ERR no such key"
OUT_OF_RANGE = "ERR index out of range"
DB_INDEX = "ERR DB index is out of range"
INVALID_EXPIRE = "ERR invalid expire time in '%s' command"
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOT_POSITIVE = "ERR value is out of range, must be positive"
TIMEOUT_NEGATIVE = "ERR timeout is negative"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
# a replica's refusals (replication/replica.py), which scripts meet too
READONLY = b"READONLY You can't write against a read only replica."
MASTERDOWN = b"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
# a multi-key command on a slot being migrated or imported (cluster/routing.py)
TRYAGAIN = b"TRYAGAIN Multiple keys request during rehashing of slot"
# a script past busy-reply-threshold (scripting/busy.py): what every other command gets
BUSY_SCRIPT = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."


def busy_error(is_function: bool) -> str:
    """The BUSY reply while a script (or a function) runs past busy-reply-threshold."""
    return BUSY_FUNCTION if is_function else BUSY_SCRIPT


def wrongtype() -> CommandError:
    return CommandError(WRONGTYPE)


def syntax() -> CommandError:
    return CommandError(SYNTAX)


def wrong_arity(fullname: str) -> CommandError:
    return CommandError(f"ERR wrong number of arguments for '{fullname}' command")


def c_str(arg: bytes, limit: int = -1) -> bytes:
    """What C's "%s" (or "%.<limit>s") prints of an argument: its bytes up to the first NUL.
    Redis formats client arguments into error texts that way, raw bytes and all."""
    s = arg.partition(b"\0")[0]
    return s if limit < 0 else s[:limit]


def unknown_subcommand(sub: bytes, container: str) -> CommandError:
    return CommandError(b"ERR unknown subcommand '%s'. Try %s HELP." % (c_str(sub, 128), container.upper().encode()))


def subcommand_syntax(argv: list[bytes]) -> CommandError:
    """addReplySubcommandSyntaxError: the subcommand as typed, the container in capitals."""
    return CommandError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
                        % (c_str(argv[1], 128), c_str(argv[0]).upper()))
