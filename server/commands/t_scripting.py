"""Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT *, FCALL, FCALL_RO, FUNCTION *.

The machinery is in server/scripting/: the EVAL script cache and its Lua state (scripts.py), the
FUNCTION libraries and theirs (functions.py), both built on engine.py.  Handlers here parse
arguments in Redis's order (so the first error reported is Redis's) and format replies.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError, busy_error, subcommand_syntax
from raxdb.server.conn import lifecycle
from raxdb.server.scripting import functions, ldb, runner, scripts
from raxdb.server.table.registry import command
from raxdb.storage.glob import compile_glob


def _check_numkeys(argv: list[bytes]) -> int:
    return runner.numkeys(argv, "ERR value is not an integer or out of range")


def _feed_monitors(c, argv: list[bytes]) -> None:
    """EVAL*, EVALSHA* and FCALL* show in MONITOR before the commands their script calls, even when
    they then fail (evalCommand feeds first; their skip_monitor flag keeps the dispatcher from
    feeding them again)."""
    if c.server.monitors:
        lifecycle.feed_monitors(c, argv, None)


def _eval(c, argv, ro: bool) -> bytes:
    _feed_monitors(c, argv)
    if c.lua_debug:  # SCRIPT DEBUG: the EVAL runs under the debugger (the child's, when forked)
        return ldb.eval_debugging(c, scripts.cache(c.server).engine, argv[1], lambda: _run_eval(c, argv, ro))
    return _run_eval(c, argv, ro)


def _run_eval(c, argv, ro: bool) -> bytes:
    numkeys = _check_numkeys(argv)
    sc = scripts.cache(c.server)
    sha, script = sc.load(argv[1])
    return sc.run(c, sha, script, argv, numkeys, ro)


def _evalsha(c, argv, ro: bool) -> bytes:
    srv = c.server
    if srv.monitors:
        _feed_monitors(c, argv)
    sha = argv[1]
    if len(sha) != 40:  # evalShaCommand's first test, before the debugger's and numkeys
        raise CommandError(scripts.NOSCRIPT)
    if c.lua_debug:
        raise CommandError("ERR Please use EVAL instead of EVALSHA for debugging")
    numkeys = _check_numkeys(argv)
    sc = scripts.cache(srv)
    script = sc.find(sha)  # the cache's keys are lower case, as clients mostly send them
    if script is None:
        sha = sha.lower()
        script = sc.find(sha)
        if script is None:
            raise CommandError(scripts.NOSCRIPT)
    return sc.run(c, sha, script, argv, numkeys, ro)


def eval_(c, argv):
    return _eval(c, argv, False)


command("eval")(eval_)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def eval_ro(c, argv):
    return _eval(c, argv, True)


command("eval_ro")(eval_ro)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def evalsha(c, argv):
    return _evalsha(c, argv, False)


command("evalsha")(evalsha)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def evalsha_ro(c, argv):
    return _evalsha(c, argv, True)


command("evalsha_ro")(evalsha_ro)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


# ---- SCRIPT -------------------------------------------------------------------------------------

def script_load(c, argv):
    sha, _ = scripts.cache(c.server).load(argv[2])
    return R.bulk(sha)


command("script|load")(script_load)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def script_exists(c, argv):
    known = scripts.cache(c.server).scripts
    return R.array([R.ONE if a.lower() in known else R.ZERO for a in argv[2:]])


command("script|exists")(script_exists)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def _flush_mode(argv: list[bytes], err: str) -> None:
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        raise CommandError(err)


def script_flush(c, argv):
    _flush_mode(argv, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    scripts.cache(c.server).flush()
    return R.OK


command("script|flush")(script_flush)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def _kill(c, want_function: bool) -> bytes:
    run = c.server.busy_script
    if run is None:
        raise CommandError("NOTBUSY No scripts in execution right now.")
    if run.is_function != want_function:
        raise CommandError(busy_error(run.is_function))
    if run.wrote:
        raise CommandError("UNKILLABLE Sorry the script already executed write commands against the dataset. "
                           "You can either wait the script termination or kill the server in a hard way using "
                           "the SHUTDOWN NOSAVE command.")
    run.killed = True
    return R.OK


def script_kill(c, argv):
    return _kill(c, False)


command("script|kill")(script_kill)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def script_debug(c, argv):
    """The debugger for this client's next EVAL (server/scripting/ldb.py); refused while replies
    are pending: unsent ones, earlier replies of the same read, EXEC's (its array has begun)."""
    if c.running or c.output_size() or c.exec_queue is not None:
        raise CommandError("ERR SCRIPT DEBUG must be called outside a pipeline")
    mode = argv[2].lower()
    if mode == b"no":
        c.lua_debug = 0
    elif mode == b"yes":
        c.lua_debug = ldb.YES
    elif mode == b"sync":
        c.lua_debug = ldb.SYNC
    else:
        raise CommandError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    return R.OK


command("script|debug")(script_debug)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


_SCRIPT_HELP = R.array([R.status(s) for s in [
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
]])


def script_help(c, argv):
    return _SCRIPT_HELP


command("script|help")(script_help)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


# ---- FCALL / FUNCTION ----------------------------------------------------------------------------

def _fcall(c, argv, ro: bool) -> bytes:
    srv = c.server
    if srv.monitors:  # compiled, a C size check of the typed server's list (t_scripting.pxd)
        _feed_monitors(c, argv)
    return functions.registry(srv).call(c, argv, ro)


def fcall(c, argv):
    return _fcall(c, argv, False)


command("fcall")(fcall)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def fcall_ro(c, argv):
    return _fcall(c, argv, True)


command("fcall_ro")(fcall_ro)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_load(c, argv):
    replace = False
    for opt in argv[2:-1]:
        if opt.lower() == b"replace":
            replace = True
        else:
            raise CommandError(b"ERR Unknown option given: " + opt)
    name = functions.registry(c.server).load(argv[-1], replace)
    c.server.dirty += 1  # a change to the dataset: counted, and propagated as it came
    return R.bulk(name)


command("function|load")(function_load)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_delete(c, argv):
    functions.registry(c.server).delete(argv[2])
    c.server.dirty += 1
    return R.OK


command("function|delete")(function_delete)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_flush(c, argv):
    if len(argv) > 3:
        raise subcommand_syntax(argv)
    _flush_mode(argv, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    functions.registry(c.server).flush()
    c.server.dirty += 1  # even when there was nothing to flush
    return R.OK


command("function|flush")(function_flush)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_kill(c, argv):
    return _kill(c, True)


command("function|kill")(function_kill)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_list(c, argv):
    pattern = None
    with_code = False
    i = 2
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"withcode" and not with_code:  # each option once: a repeat is an unknown argument
            with_code = True
        elif opt == b"libraryname" and pattern is None:
            if i + 1 >= len(argv):
                raise CommandError("ERR library name argument was not given")
            pattern = argv[i + 1]
            i += 1
        else:
            raise CommandError(b"ERR Unknown argument " + argv[i])
        i += 1
    enc = c.enc
    match = compile_glob(pattern) if pattern is not None else None
    out = []
    for lib in functions.registry(c.server).libraries.values():
        if match is not None and not match(lib.name):
            continue
        fns = []
        for fn in lib.functions.values():
            fns.append(enc.map([
                R.bulk(b"name"), R.bulk(fn.name),
                R.bulk(b"description"), enc.null if fn.description is None else R.bulk(fn.description),
                R.bulk(b"flags"), enc.set([R.status(f) for f in fn.flag_names()]),
            ]))
        fields = [R.bulk(b"library_name"), R.bulk(lib.name), R.bulk(b"engine"), R.bulk(b"LUA"),
                  R.bulk(b"functions"), R.array(fns)]
        if with_code:
            fields += [R.bulk(b"library_code"), R.bulk(lib.code)]
        out.append(enc.map(fields))
    return R.array(out)


command("function|list")(function_list)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_stats(c, argv):
    enc = c.enc
    fe = functions.registry(c.server)
    run = c.server.busy_script
    if run is None:
        running = enc.null
    else:
        import time

        running = enc.map([R.bulk(b"name"), R.bulk(run.name), R.bulk(b"command"), R.bulk_array(run.argv),
                           R.bulk(b"duration_ms"), R.integer(int((time.monotonic() - run.start) * 1000))])
    engines = enc.map([R.bulk(b"LUA"), enc.map([
        R.bulk(b"libraries_count"), R.integer(len(fe.libraries)),
        R.bulk(b"functions_count"), R.integer(len(fe.functions)),
    ])])
    return enc.map([R.bulk(b"running_script"), running, R.bulk(b"engines"), engines])


command("function|stats")(function_stats)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_dump(c, argv):
    return R.bulk(functions.registry(c.server).dump(c.server.config.values["rdbcompression"] == "yes"))


command("function|dump")(function_dump)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


def function_restore(c, argv):
    policy = b"append"
    if len(argv) > 4:
        raise subcommand_syntax(argv)
    if len(argv) == 4:
        policy = argv[3].lower()
        if policy not in (b"flush", b"append", b"replace"):
            raise CommandError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    functions.registry(c.server).restore(argv[2], policy)
    c.server.dirty += 1
    return R.OK


command("function|restore")(function_restore)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)


_FUNCTION_HELP = R.array([R.status(s) for s in [
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION "
    "RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
]])


def function_help(c, argv):
    return _FUNCTION_HELP


command("function|help")(function_help)  # not a decorator: compiled, a cpdef function (t_scripting.pxd)
