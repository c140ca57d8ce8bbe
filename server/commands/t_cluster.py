"""CLUSTER and its subcommands, ASKING, READONLY and READWRITE (Redis's cluster.c commands), and
what a server without modules answers for MODULE.

With cluster-enabled no, every one of them answers "This instance has cluster support disabled"
after the usual arity, unknown-subcommand and script checks, as a standalone redis-server 7.0
does.  In cluster mode (server/cluster/) the subcommands of a single node and a static cluster
run here with Redis's replies and error texts: INFO, MYID, NODES, SLOTS, SHARDS, MEET, FORGET,
ADDSLOTS(RANGE), DELSLOTS(RANGE), FLUSHSLOTS, SETSLOT, KEYSLOT, COUNTKEYSINSLOT,
GETKEYSINSLOT, SAVECONFIG, SET-CONFIG-EPOCH, BUMPEPOCH, RESET, COUNT-FAILURE-REPORTS, LINKS,
REPLICATE, REPLICAS/SLAVES and FAILOVER (their work is cluster/replicas.py's and
cluster/failover.py's).

MODULE LIST is empty, so tools that probe for modules see a standalone server rather than
unknown commands.  Loading a module fails as a missing library does in Redis (the log line is
admin/modules.py's, which start-up's loadmodule logs too); MODULE LOAD, LOADEX and UNLOAD are
guarded by enable-module-command first, as there.
"""

from __future__ import annotations

import ipaddress
from operator import itemgetter

from raxdb.protocol import reply as R
from raxdb.server.admin.modules import log_load_failure
from raxdb.server.base.errors import SYNTAX, CommandError, wrong_arity
from raxdb.server.base.log import LOG
from raxdb.server.cluster import replicas
from raxdb.server.cluster.routing import ASKING, READONLY, endpoint, use_pport
from raxdb.server.cluster.state import FAIL, HANDSHAKE, MEET, PFAIL, Node, describe, valid_name
from raxdb.server.commands.t_config import help_reply
from raxdb.server.persistence.emptydata import empty_data
from raxdb.server.security.protected import protected_allowed, protected_denied
from raxdb.server.table.args import to_int
from raxdb.server.table.registry import TABLE, command
from raxdb.storage.slots import SLOTS, key_hash_slot

_DISABLED = "ERR This instance has cluster support disabled"


_CLUSTER_HELP = [
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
]


def _cl(c):
    """The server's Cluster, or the error of a server without cluster mode."""
    cl = c.server.cluster
    if cl is None:
        raise CommandError(_DISABLED)
    return cl


def _slot(arg: bytes) -> int:
    """getSlotOrReply."""
    try:
        s = to_int(arg)
    except CommandError:
        s = -1
    if not 0 <= s < SLOTS:
        raise CommandError("ERR Invalid or out of range slot")
    return s


def _syntax(argv: list[bytes]) -> CommandError:
    """addReplySubcommandSyntaxError: the subcommand as the client spelled it."""
    return CommandError(f"ERR unknown subcommand or wrong number of arguments for "
                        f"'{argv[1][:128].decode(errors='replace')}'. Try CLUSTER HELP.")


def _node(cl, arg: bytes, unknown: str = "ERR Unknown node %s") -> Node:
    name = arg.decode("latin-1")
    n = cl.st.lookup(name) if valid_name(name) else None
    if n is None:
        raise CommandError(unknown % name)
    return n


def _master(cl, arg: bytes, unknown: str = "ERR Unknown node %s") -> Node:
    n = _node(cl, arg, unknown)
    if n.is_replica():
        raise CommandError("ERR Target node is not a master")
    return n


# ---- the cluster's state -----------------------------------------------------------------------
def info_text(cl) -> str:
    """CLUSTER INFO's text (clusterGenClusterInfo)."""
    st = cl.st
    lines = [f"cluster_state:{'ok' if st.state == 0 else 'fail'}",
             f"cluster_slots_assigned:{st.assigned()}",
             f"cluster_slots_ok:{st.assigned() - st.slots_in_state(PFAIL | FAIL)}",
             f"cluster_slots_pfail:{st.slots_in_state(PFAIL)}",
             f"cluster_slots_fail:{st.slots_in_state(FAIL)}",
             f"cluster_known_nodes:{len(st.nodes)}",
             f"cluster_size:{st.size}",
             f"cluster_current_epoch:{st.current_epoch}",
             f"cluster_my_epoch:{st.myself.epoch()}"]
    names = ("ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart", "module",
             "publishshard")
    for counts, word in ((st.sent, "sent"), (st.received, "received")):
        for t, n in enumerate(counts):
            if n:
                lines.append(f"cluster_stats_messages_{names[t]}_{word}:{n}")
        lines.append(f"cluster_stats_messages_{word}:{sum(counts)}")
    lines.append(f"total_cluster_links_buffer_limit_exceeded:{st.links_limit_exceeded}")
    return "\r\n".join(lines) + "\r\n"


@command("cluster|info")
def cluster_info(c, argv):
    return c.enc.verbatim(info_text(_cl(c)).encode())


@command("cluster|myid")
def cluster_myid(c, argv):
    return R.bulk(_cl(c).st.myself.name.encode())


@command("cluster|nodes")
def cluster_nodes(c, argv):
    cl = _cl(c)
    st = cl.st
    pport = use_pport(cl, c)
    text = "".join(describe(st, n, n.pport if pport and n.pport else None) + "\n" for n in st.nodes.values())
    return c.enc.verbatim(text.encode())


def _node_reply(c, cl, n: Node) -> bytes:
    """addNodeToNodeReply: endpoint, port, id, then the other known address fields as a map."""
    kind = cl.values()["cluster-preferred-endpoint-type"]
    first = c.enc.null if kind == "unknown-endpoint" else R.bulk(endpoint(cl, n).encode())
    extra: list[bytes] = []
    if kind != "ip":
        extra += [R.bulk(b"ip"), R.bulk(n.ip.encode())]
    if kind != "hostname" and n.hostname:
        extra += [R.bulk(b"hostname"), R.bulk(n.hostname.encode())]
    port = n.pport if use_pport(cl, c) and n.pport else n.port
    return R.array([first, R.integer(port), R.bulk(n.name.encode()), c.enc.map(extra)])


def _replica_available(cl, n: Node) -> bool:
    """isReplicaAvailable: not failing, and it has applied some of its master's stream."""
    if n.flags & FAIL:
        return False
    return (replicas.slave_offset(cl) if n is cl.st.myself else n.repl_offset) != 0


@command("cluster|slots")
def cluster_slots(c, argv):
    """clusterReplyMultiBulkSlots: runs of slots with one owner, in slot order.  The runs are each
    owner's (Node.slot_ranges, from its bitmap: the same runs as a walk of the slot table, since
    a slot is in its owner's bitmap and no other's); an owner's entries are made once per call."""
    cl = _cl(c)
    runs = [(a, b, n) for n in cl.st.nodes.values() if n.numslots for a, b in n.slot_ranges()]
    runs.sort(key=itemgetter(0))
    entries: dict[str, list[bytes]] = {}
    out = []
    for a, b, n in runs:
        nodes = entries.get(n.name)
        if nodes is None:
            nodes = [_node_reply(c, cl, n)] + [_node_reply(c, cl, r) for r in n.replicas if _replica_available(cl, r)]
            entries[n.name] = nodes
        out.append(R.array([R.integer(a), R.integer(b), *nodes]))
    return R.array(out)


def _shard_node(c, cl, n: Node) -> bytes:
    st = cl.st
    offset = replicas.my_offset(cl) if n is st.myself else n.repl_offset
    if n.flags & FAIL:
        health = b"fail"
    elif n.is_replica() and offset == 0:
        health = b"loading"
    else:
        health = b"online"
    tls = cl.values()["tls-cluster"] == "yes"  # the announced port is the TLS one
    plain, tls_port = (n.pport, n.port) if tls else (n.port, 0)
    pairs = [R.bulk(b"id"), R.bulk(n.name.encode())]
    if plain:
        pairs += [R.bulk(b"port"), R.integer(plain)]
    if tls_port:
        pairs += [R.bulk(b"tls-port"), R.integer(tls_port)]
    pairs += [R.bulk(b"ip"), R.bulk(n.ip.encode()), R.bulk(b"endpoint"), R.bulk(endpoint(cl, n).encode())]
    if n.hostname:
        pairs += [R.bulk(b"hostname"), R.bulk(n.hostname.encode())]
    pairs += [R.bulk(b"role"), R.bulk(b"master" if n.is_master() else b"replica"),
              R.bulk(b"replication-offset"), R.integer(offset), R.bulk(b"health"), R.bulk(health)]
    return c.enc.map(pairs)


@command("cluster|shards")
def cluster_shards(c, argv):
    cl = _cl(c)
    out = []
    for n in cl.st.nodes.values():
        if not n.is_master():
            continue
        slots = [R.integer(x) for a, b in n.slot_ranges() for x in (a, b)]
        nodes = [_shard_node(c, cl, m) for m in (n, *n.replicas)]
        out.append(c.enc.map([R.bulk(b"slots"), R.array(slots), R.bulk(b"nodes"), R.array(nodes)]))
    return R.array(out)


@command("cluster|links")
def cluster_links(c, argv):
    cl = _cl(c)
    out = []
    for n in cl.st.nodes.values():
        for link, direction in ((n.link, b"to"), (n.inbound_link, b"from")):
            if link is None:
                continue
            out.append(c.enc.map([R.bulk(b"direction"), R.bulk(direction), R.bulk(b"node"), R.bulk(n.name.encode()),
                                  R.bulk(b"create-time"), R.integer(link.ctime), R.bulk(b"events"),
                                  R.bulk(b"rw" if link.transport is not None else b"w"),
                                  R.bulk(b"send-buffer-allocated"), R.integer(0),
                                  R.bulk(b"send-buffer-used"), R.integer(0)]))
    return R.array(out)


@command("cluster|count-failure-reports")
def cluster_count_failure_reports(c, argv):
    cl = _cl(c)
    return R.integer(len(_node(cl, argv[2]).fail_reports))


# ---- keys --------------------------------------------------------------------------------------
@command("cluster|keyslot")
def cluster_keyslot(c, argv):
    _cl(c)
    return R.integer(key_hash_slot(argv[2]))


@command("cluster|countkeysinslot")
def cluster_countkeysinslot(c, argv):
    cl = _cl(c)
    s = to_int(argv[2])
    if not 0 <= s < SLOTS:
        raise CommandError("ERR Invalid slot")
    return R.integer(cl.count_keys(s))


@command("cluster|getkeysinslot")
def cluster_getkeysinslot(c, argv):
    cl = _cl(c)
    s = to_int(argv[2])
    limit = to_int(argv[3])
    if not 0 <= s < SLOTS or limit < 0:
        raise CommandError("ERR Invalid slot or number of keys")
    return R.bulk_array(cl.keys_in_slot(s, limit))


# ---- slots -------------------------------------------------------------------------------------
def _update_slots(c, argv, ranges: list[tuple[int, int]], delete: bool) -> bytes:
    """checkSlotAssignmentsOrReply, then clusterUpdateSlots."""
    cl = _cl(c)
    st = cl.st
    seen: set[int] = set()
    for a, b in ranges:
        for s in range(a, b + 1):
            if delete and st.slots[s] is None:
                raise CommandError(f"ERR Slot {s} is already unassigned")
            if not delete and st.slots[s] is not None:
                raise CommandError(f"ERR Slot {s} is already busy")
            if s in seen:
                raise CommandError(f"ERR Slot {s} specified multiple times")
            seen.add(s)
    for s in sorted(seen):
        if delete:
            st.del_slot(s)
        else:
            st.set_importing(s, None)
            st.add_slot(st.myself, s)
    cl.changed()
    return R.OK


@command("cluster|addslots")
def cluster_addslots(c, argv):
    _cl(c)
    return _update_slots(c, argv, [(s, s) for s in map(_slot, argv[2:])], False)


@command("cluster|delslots")
def cluster_delslots(c, argv):
    _cl(c)
    return _update_slots(c, argv, [(s, s) for s in map(_slot, argv[2:])], True)


def _ranges(c, argv) -> list[tuple[int, int]]:
    _cl(c)
    if len(argv) % 2 == 1:
        raise wrong_arity(f"cluster|{argv[1].decode(errors='replace').lower()}")
    out = []
    for i in range(2, len(argv), 2):
        a, b = _slot(argv[i]), _slot(argv[i + 1])
        if a > b:
            raise CommandError(f"ERR start slot number {a} is greater than end slot number {b}")
        out.append((a, b))
    return out


@command("cluster|addslotsrange")
def cluster_addslotsrange(c, argv):
    return _update_slots(c, argv, _ranges(c, argv), False)


@command("cluster|delslotsrange")
def cluster_delslotsrange(c, argv):
    return _update_slots(c, argv, _ranges(c, argv), True)


@command("cluster|flushslots")
def cluster_flushslots(c, argv):
    cl = _cl(c)
    if len(c.server.dbs[0]):
        raise CommandError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
    cl.st.del_node_slots(cl.st.myself)
    cl.changed()
    return R.OK


@command("cluster|setslot")
def cluster_setslot(c, argv):
    cl = _cl(c)
    st = cl.st
    me = st.myself
    if me.is_replica():
        raise CommandError("ERR Please use SETSLOT only with masters.")
    s = _slot(argv[2])
    action = argv[3].lower()
    n = len(argv)
    if action == b"migrating" and n == 5:
        if st.slots[s] is not me:
            raise CommandError(f"ERR I'm not the owner of hash slot {s}")
        st.set_migrating(s, _master(cl, argv[4], "ERR I don't know about node %s"))
    elif action == b"importing" and n == 5:
        if st.slots[s] is me:
            raise CommandError(f"ERR I'm already the owner of hash slot {s}")
        st.set_importing(s, _master(cl, argv[4], "ERR I don't know about node %s"))
    elif action == b"stable" and n == 4:
        st.set_importing(s, None)
        st.set_migrating(s, None)
    elif action == b"node" and n == 5:
        target = _master(cl, argv[4])
        keys = cl.count_keys(s)
        if st.slots[s] is me and target is not me and keys:
            raise CommandError(f"ERR Can't assign hashslot {s} to a different node while I still hold keys "
                               "for this hash slot.")
        if not keys:
            st.set_migrating(s, None)
        was_mine = st.slots[s] is me
        st.del_slot(s)
        st.add_slot(target, s)
        if was_mine:
            replicas.gave_last_slot(cl, target)
        if target is me and s in st.importing:
            bumped = st.bump_epoch()
            if bumped:
                LOG.warning(f"configEpoch updated after importing slot {s}")
            st.set_importing(s, None)
            if bumped:  # saved, fsynced, before the PONGs tell it (Redis's are sent after beforeSleep)
                cl.save_or_die()
            if cl.bus is not None:
                cl.bus.broadcast_pong()
    else:
        raise CommandError("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    cl.changed()
    return R.OK


# ---- nodes and epochs --------------------------------------------------------------------------
@command("cluster|meet")
def cluster_meet(c, argv):
    cl = _cl(c)
    if len(argv) > 5:
        raise _syntax(argv)
    try:
        port = to_int(argv[3])
    except CommandError:
        raise CommandError(f"ERR Invalid TCP base port specified: {argv[3].decode(errors='replace')}") from None
    if len(argv) == 5:
        try:
            cport = to_int(argv[4])
        except CommandError:
            raise CommandError(f"ERR Invalid TCP bus port specified: {argv[4].decode(errors='replace')}") from None
    else:
        cport = port + 10000
    host = argv[2].decode(errors="replace")
    try:
        ip = str(ipaddress.ip_address(host))
    except ValueError:
        ip = ""
    if not ip or not 0 < port <= 65535 or not 0 < cport <= 65535:
        raise CommandError(f"ERR Invalid node address specified: {host}:{argv[3].decode(errors='replace')}")
    st = cl.st
    # clusterHandshakeInProgress: one handshake per address at a time
    if not any(n.flags & HANDSHAKE and n.ip == ip and n.port == port and n.cport == cport
               for n in st.nodes.values()):
        node = Node(None, HANDSHAKE | MEET)
        node.ip, node.port, node.cport = ip, port, cport
        st.add_node(node)
    return R.OK


@command("cluster|forget")
def cluster_forget(c, argv):
    cl = _cl(c)
    st = cl.st
    n = _node(cl, argv[2])
    if n is st.myself:
        raise CommandError("ERR I tried hard but I can't forget myself...")
    if st.myself.is_replica() and st.myself.slaveof is n:
        raise CommandError("ERR Can't forget my master!")
    st.blacklist[n.name] = int(c.server.now_ms // 1000) + 60
    st.del_node(n)
    cl.changed()
    return R.OK


@command("cluster|saveconfig")
def cluster_saveconfig(c, argv):
    err = _cl(c).save(fsync=True)
    if err is not None:
        raise CommandError(f"ERR error saving the cluster node config: {err}")
    return R.OK


@command("cluster|set-config-epoch")
def cluster_set_config_epoch(c, argv):
    cl = _cl(c)
    st = cl.st
    epoch = to_int(argv[2])
    if epoch < 0:
        raise CommandError(f"ERR Invalid config epoch specified: {epoch}")
    if len(st.nodes) > 1:
        raise CommandError("ERR The user can assign a config epoch only when the node does not know any other node.")
    if st.myself.config_epoch != 0:
        raise CommandError("ERR Node config epoch is already non-zero")
    st.myself.config_epoch = epoch
    LOG.warning(f"configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH")
    st.current_epoch = max(st.current_epoch, epoch)
    cl.changed()
    return R.OK


@command("cluster|bumpepoch")
def cluster_bumpepoch(c, argv):
    cl = _cl(c)
    bumped = cl.st.bump_epoch()
    if bumped:
        cl.changed(state=False, fsync=True)
    return R.status(b"%s %d" % (b"BUMPED" if bumped else b"STILL", cl.st.myself.config_epoch))


@command("cluster|reset")
def cluster_reset(c, argv):
    cl = _cl(c)
    hard = False
    if len(argv) == 3:
        mode = argv[2].lower()
        if mode not in (b"hard", b"soft"):
            raise CommandError(SYNTAX)
        hard = mode == b"hard"
    elif len(argv) > 3:
        raise _syntax(argv)
    st = cl.st
    if st.myself.is_master() and len(c.server.dbs[0]):
        raise CommandError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    if st.myself.is_replica():  # a replica turns master, and forgets its master's data
        replicas.become_master(cl)
        empty_data(c.server, False, with_functions=True)
    cl.failover.reset_manual()
    st.close_slots()
    st.del_node_slots(st.myself)
    for n in list(st.nodes.values()):
        if n is not st.myself:
            st.del_node(n)
    if hard:
        st.current_epoch = st.last_vote_epoch = 0
        st.myself.config_epoch = 0
        old = st.myself.name
        st.rename(st.myself, Node(None, 0).name)
        LOG.notice(f"Node hard reset, now I'm {st.myself.name} (was {old})")
    cl.changed(fsync=True)
    return R.OK


@command("cluster|replicate")
def cluster_replicate(c, argv):
    cl = _cl(c)
    name = argv[2].decode("latin-1")
    replicas.replicate(cl, cl.st.lookup(name) if valid_name(name) else None, name)
    return R.OK


@command("cluster|replicas")
@command("cluster|slaves")
def cluster_replicas(c, argv):
    cl = _cl(c)
    n = _node(cl, argv[2])
    if n.is_replica():
        raise CommandError("ERR The specified node is not a master")
    return R.bulk_array([describe(cl.st, r).encode() for r in n.replicas])


@command("cluster|failover")
def cluster_failover(c, argv):
    cl = _cl(c)
    if len(argv) > 3:
        raise _syntax(argv)
    cl.failover.manual(argv)
    return R.OK


@command("cluster|help")
def cluster_help(c, argv):
    _cl(c)
    return help_reply("CLUSTER", _CLUSTER_HELP)


# ---- client flags ------------------------------------------------------------------------------
@command("asking")
def asking(c, argv):
    _cl(c)
    c.cluster_flags |= ASKING
    return R.OK


@command("readonly")
def readonly(c, argv):
    _cl(c)
    c.cluster_flags |= READONLY
    return R.OK


@command("readwrite")
def readwrite(c, argv):
    _cl(c)
    c.cluster_flags &= ~READONLY
    return R.OK


def _cluster_disabled(c, argv):
    raise CommandError(_DISABLED)


for _sub in TABLE.meta["cluster"].subcommands:
    _rec = TABLE.lookup_name(_sub.encode())
    if _rec is None or _rec.proc is None:
        command(_sub)(_cluster_disabled)



_MODULE_HELP = [
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
]


@command("module|help")
def module_help(c, argv):
    return help_reply("MODULE", _MODULE_HELP)


@command("module|list")
def module_list(c, argv):
    return R.EMPTY_ARRAY


def _guard(c) -> None:
    if not protected_allowed(c, "enable-module-command"):
        raise protected_denied("MODULE", "enable-module-command")


@command("module|load")
def module_load(c, argv):
    _guard(c)
    log_load_failure(argv[2].decode(errors="replace"))
    raise CommandError("ERR Error loading the extension. Please check the server logs.")


command("module|loadex")(module_load)


@command("module|unload")
def module_unload(c, argv):
    _guard(c)
    raise CommandError("ERR Error unloading module: no such module with that name")
