"""A private network of hosts for the partition tests (#58): each host a network namespace with one
veth to a bridge that lives in a namespace of its own (the switch), addresses 10.77.0.N/24 that
exist only inside these namespaces; links cut, healed and slowed per host with nft and tc.

Rules: nothing is created in the host's own namespace (the veths and the bridge are made inside the
switch's and hosts' namespaces), every name carries this process's ID and a counter (parallel pytest
workers and other runs never meet), and `Network.close()` deletes every namespace it made, on
failure too (the fixtures call it in `finally`, atexit covers an interrupted run).  The test process
stays in its own namespace: its sockets to the servers are opened inside the client host's namespace
(setns(2) in the calling thread only, for the duration of the connect), so the test talks to both
sides of any partition through a link that is never cut.

A cut is a symmetric drop of packets between two sets of hosts (nft input and output rules in each
host of both sets): connections between them stay open and silent, as a partition of a real network
leaves them.  `lossy` drops a share of a host's packets at random (nft numgen), `slow` limits its
egress rate (tc tbf; this kernel has no netem).
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

CLONE_NEWNET = 0x40000000
SUBNET = "10.77.0"
_counter = itertools.count()
_open: set[Network] = set()


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None (the tests skip with this reason)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN); the partition tests run as root in CI"
    for tool in ("ip", "tc", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (`make test` installs nftables)"
    probe = f"rxp{os.getpid()}probe{next(_counter)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    try:
        nft = subprocess.run(["ip", "netns", "exec", probe, "nft", "list", "ruleset"], capture_output=True, text=True)
        if nft.returncode:
            return f"nft cannot reach the kernel's nf_tables: {nft.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*argv: str) -> None:
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip()}")


_libc = ctypes.CDLL(None, use_errno=True)


@contextmanager
def entered(netns: str) -> Iterator[None]:
    """The calling thread in namespace `netns` for the block (sockets made there stay there)."""
    with open("/proc/thread-self/ns/net") as home, open(f"/run/netns/{netns}") as there:
        if _libc.setns(there.fileno(), CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), f"setns into {netns}")
        try:
            yield
        finally:
            if _libc.setns(home.fileno(), CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns back home")


@dataclass(eq=False)
class Host:
    name: str
    netns: str
    ip: str
    blocked: set[str] = field(default_factory=set)
    loss_pct: int = 0

    def exec_prefix(self) -> list[str]:
        """What runs a command on this host."""
        return ["ip", "netns", "exec", self.netns]


class Network:
    def __init__(self) -> None:
        self.tag = f"rxp{os.getpid()}n{next(_counter)}"
        self.switch = f"{self.tag}-sw"
        self.hosts: dict[str, Host] = {}
        self._lock = threading.Lock()
        _open.add(self)
        try:
            _run("ip", "netns", "add", self.switch)
            _run("ip", "-n", self.switch, "link", "add", "name", "br0", "type", "bridge")
            _run("ip", "-n", self.switch, "link", "set", "dev", "br0", "up")
        except BaseException:
            self.close()
            raise

    def add_host(self, name: str) -> Host:
        n = len(self.hosts) + 1
        host = Host(name, f"{self.tag}-{name}", f"{SUBNET}.{n}")
        self.hosts[name] = host
        port = f"p{n}"
        _run("ip", "netns", "add", host.netns)
        _run("ip", "-n", self.switch, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0",
             "netns", host.netns)
        _run("ip", "-n", self.switch, "link", "set", "dev", port, "master", "br0")
        _run("ip", "-n", self.switch, "link", "set", "dev", port, "up")
        _run("ip", "-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        _run("ip", "-n", host.netns, "link", "set", "dev", "eth0", "up")
        _run("ip", "-n", host.netns, "link", "set", "dev", "lo", "up")
        return host

    # ---- faults ---------------------------------------------------------------------------------
    def cut(self, side_a: list[Host], side_b: list[Host]) -> None:
        """No packet between any host of `side_a` and any of `side_b`, either way (others untouched)."""
        with self._lock:
            for a in side_a:
                a.blocked |= {b.ip for b in side_b}
            for b in side_b:
                b.blocked |= {a.ip for a in side_a}
            for h in {*side_a, *side_b}:
                self._apply(h)

    def lossy(self, host: Host, pct: int) -> None:
        """Drop `pct` percent of this host's packets at random, both ways."""
        with self._lock:
            host.loss_pct = pct
            self._apply(host)

    def slow(self, host: Host, rate: str = "256kbit") -> None:
        """This host's egress limited to `rate` (a queue that delays what exceeds it)."""
        _run("tc", "-n", host.netns, "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate,
             "burst", "16kbit", "latency", "500ms")

    def heal(self) -> None:
        """Every link whole again."""
        with self._lock:
            for h in self.hosts.values():
                h.blocked.clear()
                h.loss_pct = 0
                self._apply(h)
                subprocess.run(["tc", "-n", h.netns, "qdisc", "del", "dev", "eth0", "root"], capture_output=True)

    def _apply(self, host: Host) -> None:
        drops_out, drops_in = [], []
        if host.blocked:
            ips = ", ".join(sorted(host.blocked))
            drops_out.append(f"ip daddr {{ {ips} }} drop")
            drops_in.append(f"ip saddr {{ {ips} }} drop")
        if host.loss_pct:
            drops_out.append(f"numgen random mod 100 < {host.loss_pct} drop")
            drops_in.append(f"numgen random mod 100 < {host.loss_pct} drop")
        ruleset = "flush ruleset\n"
        if drops_out:
            ruleset += ("table inet part {\n"
                        "  chain out {\n    type filter hook output priority 0; policy accept;\n"
                        + "".join(f"    {r}\n" for r in drops_out) + "  }\n"
                        "  chain in {\n    type filter hook input priority 0; policy accept;\n"
                        + "".join(f"    {r}\n" for r in drops_in) + "  }\n}\n")
        out = subprocess.run([*host.exec_prefix(), "nft", "-f", "-"], input=ruleset, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"nft on {host.name}: {out.stderr.strip()}")

    # ---- clients --------------------------------------------------------------------------------
    def client(self, via: Host, ip: str, port: int, **kwargs: object) -> redis.Redis:
        """A redis-py client whose every connection is opened on host `via` (so it reaches `ip`)."""
        netns = via.netns

        class HostConnection(redis.Connection):
            def _connect(self):  # type: ignore[no-untyped-def]
                with entered(netns):
                    return super()._connect()

        kwargs.setdefault("decode_responses", True)
        pool = redis.ConnectionPool(connection_class=HostConnection, host=ip, port=port, **kwargs)
        return redis.Redis(connection_pool=pool)

    def close(self) -> None:
        """Every namespace this network made, deleted (their processes must be stopped first)."""
        for netns in [*(h.netns for h in self.hosts.values()), self.switch]:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        self.hosts.clear()
        _open.discard(self)


@atexit.register
def _close_all() -> None:
    for net in list(_open):
        net.close()
