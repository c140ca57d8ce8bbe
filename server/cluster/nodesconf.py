"""nodes.conf, the cluster configuration file, in Redis 7.0's format (clusterSaveConfig /
clusterLoadConfig).

What it is.  One line per known node, as CLUSTER NODES shows it (nodes still in handshake left
out), then `vars currentEpoch <n> lastVoteEpoch <n>`.  `render` writes the text, `parse` reads it
back into a ClusterState, `save` writes it.  A save the caller wants fsynced (clusterSaveConfig's
do_fsync: epochs, votes, a reset) replaces the file atomically (a temporary file, fsynced, renamed
over the old one).  Any other save is written in place, as Redis 7.0 writes every save: one write
over the old bytes (padded with newlines, which parse skips, when the old file was longer), then
truncated to the text's length.  Replacing the file or truncating it to nothing makes ext4 flush
its data at once (auto_da_alloc), which took 1-5 ms per save on a busy disk; the saves that may
be lost on a power failure (Redis does not fsync them either) need not pay that.

Rule: no sockets and no replies; errors in a file are ConfigFileError with Redis's wording, which
start-up turns into its fatal log line.

Invariants: parse(render(st)) gives the same nodes, flags, epochs, slots and open slots; a file
without a `myself` line is refused, as Redis refuses it.
"""

from __future__ import annotations

import os

from raxdb.server.cluster.state import (
    FLAG_WORDS,
    HANDSHAKE,
    MEET,
    MYSELF,
    ClusterState,
    Node,
    describe,
    now_ms,
    valid_name,
)
from raxdb.storage.slots import SLOTS

_FLAG_BITS = {w: bit for bit, w in FLAG_WORDS}
_FLAG_BITS["noflags"] = 0


class ConfigFileError(Exception):
    pass


def render(st: ClusterState) -> str:
    lines = [describe(st, n) for n in st.nodes.values() if not n.flags & HANDSHAKE]
    lines.append(f"vars currentEpoch {st.current_epoch} lastVoteEpoch {st.last_vote_epoch}")
    return "\n".join(lines) + "\n"


def save(st: ClusterState, path: str, fsync: bool = True) -> bool:
    """nodes.conf written (OSError if it cannot be); True when it was replaced by a new file
    (fsync), which the lock must follow (conflock.py)."""
    data = render(st).encode()
    if fsync:
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return True
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        padded = data + b"\n" * (size - len(data)) if size > len(data) else data
        view = memoryview(padded)
        while view:
            view = view[os.write(fd, view):]
        if len(padded) != len(data):
            os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    return False


def _address(node: Node, field: str) -> None:
    """ip:port@cport[,hostname] (a 6.x line without @cport takes port + 10000)."""
    addr, _, hostname = field.partition(",")
    node.hostname = hostname
    hostport, at, cport = addr.partition("@")
    ip, colon, port = hostport.rpartition(":")
    if not colon:
        raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
    try:
        node.port = int(port)
        node.cport = int(cport) if at else node.port + 10000
    except ValueError:
        raise ConfigFileError("Unrecoverable error: corrupted cluster config file.") from None
    node.ip = ip


def parse(text: str) -> ClusterState:
    """A ClusterState from nodes.conf's text (which must name myself)."""
    nodes: dict[str, Node] = {}
    lines: list[list[str]] = []
    current = last_vote = 0
    myself: Node | None = None

    def get(name: str) -> Node:
        if not valid_name(name):
            raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
        if name not in nodes:
            nodes[name] = Node(name, 0)
        return nodes[name]

    for raw in text.splitlines():
        argv = raw.split()
        if not argv:
            continue
        if argv[0] == "vars":
            if len(argv) % 2 != 1:
                raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
            for i in range(1, len(argv), 2):
                try:
                    value = int(argv[i + 1])
                except ValueError:
                    raise ConfigFileError("Unrecoverable error: corrupted cluster config file.") from None
                if argv[i] == "currentEpoch":
                    current = value
                elif argv[i] == "lastVoteEpoch":
                    last_vote = value
                else:
                    raise ConfigFileError(f"Skipping unknown cluster config variable '{argv[i]}'")
            continue
        if len(argv) < 8:
            raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
        node = get(argv[0])
        _address(node, argv[1])
        flags = 0
        for word in argv[2].split(","):
            if word not in _FLAG_BITS and word != "fail?":
                raise ConfigFileError(f"Unknown flag in redis cluster config file: {word}")
            flags |= _FLAG_BITS.get(word, 0)
        # ORed in, as Redis does: a node named on two lines keeps the flags of both (myself among them)
        node.flags |= flags & ~(HANDSHAKE | MEET)
        if flags & MYSELF:
            if myself is not None:
                raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
            myself = node
        if argv[3] != "-":
            master = get(argv[3])
            node.slaveof = master
            if node not in master.replicas:  # a replica named twice is listed once (clusterNodeAddSlave)
                master.replicas.append(node)
        try:
            node.ping_sent = now_ms() if int(argv[4]) else 0
            node.pong_received = now_ms() if int(argv[5]) else 0
            node.config_epoch = int(argv[6])
        except ValueError:
            raise ConfigFileError("Unrecoverable error: corrupted cluster config file.") from None
        lines.append(argv)
    if myself is None:
        raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
    st = ClusterState(myself)
    st.nodes = nodes
    st.current_epoch = current
    st.last_vote_epoch = last_vote
    for argv in lines:
        node = nodes[argv[0]]
        for item in argv[8:]:
            if item.startswith("["):
                # an open slot, saved for myself only: [slot->-node] or [slot-<-node]
                body = item[1:-1]
                for arrow, open_slot in (("->-", st.set_migrating), ("-<-", st.set_importing)):
                    if arrow in body:
                        s, _, other = body.partition(arrow)
                        open_slot(_slot(s), get(other))
                        break
                else:
                    raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
                continue
            first, dash, last = item.partition("-")
            a = _slot(first)
            b = _slot(last) if dash else a
            for slot in range(a, b + 1):
                st.add_slot(node, slot)
    return st


def _slot(text: str) -> int:
    try:
        s = int(text)
    except ValueError:
        raise ConfigFileError("Unrecoverable error: corrupted cluster config file.") from None
    if not 0 <= s < SLOTS:
        raise ConfigFileError("Unrecoverable error: corrupted cluster config file.")
    return s
