"""Cluster clients that write keys until told to stop, then read them back, for the failover tests
(test_cluster_failover_clients.py): redis-py's RedisCluster sync (in a thread) and asyncio (a
thread running its own loop, several commands in flight), and the Node clients (ioredis Cluster,
node-redis createCluster: cluster_failover_clients.mjs, a process driven over stdin/stdout).

Each writer SETs TAG:i = TAG-value-i for i = 0, 1, 2, ... (keys over every slot).  `status()`
gives (acknowledged, acknowledged at or after the mark); `mark()` draws the line: SETs issued from
then on are "after" (the test marks once the cluster is ok again); `stop()` ends the writing once
at least `keys` SETs were acknowledged, then every acknowledged key is read back, and `report()`
returns the Report.
Rule: a writer records what its client did and judges nothing (the test does); `acked` keeps the
order of acknowledgement, so "the first N acknowledged" means what it says.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio.cluster as acluster
from redis.cluster import ClusterNode, RedisCluster

from tests.libraries.test_node_clients import HERE, _ensure_packages

PY_CLIENTS = ["redis-py-resp2", "redis-py-resp3", "redis-py-asyncio-resp2", "redis-py-asyncio-resp3"]
NODE_CLIENTS = ["ioredis", "node-redis-resp2", "node-redis-resp3"]
IN_FLIGHT = {"asyncio": 10, "node": 10}
EXAMPLES = 50  # errors kept verbatim (each list), beyond the counts


@dataclass
class Report:
    acked: list[int] = field(default_factory=list)  # in the order acknowledged
    mark: int = -1  # the first i issued after the mark
    set_errors: list[tuple[int, bool, str]] = field(default_factory=list)  # (i, after the mark, message)
    n_set_errors: int = 0
    n_set_errors_after: int = 0
    last_set_error: int = -1  # the largest i whose SET failed
    missing: list[int] = field(default_factory=list)  # acknowledged, read back as nil
    wrong: list[tuple[int, str]] = field(default_factory=list)
    n_wrong: int = 0
    get_errors: list[tuple[int, str]] = field(default_factory=list)
    n_get_errors: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # error message, digits as N: count
    write_seconds: float = 0.0
    read_seconds: float = 0.0


def key(tag: str, i: int) -> str:
    return f"{tag}:{i}"


def value(tag: str, i: int) -> str:
    return f"{tag}-value-{i}"


class Tally:
    """The state a Python writer shares between its client's thread and the test's."""

    def __init__(self, tag: str, keys: int) -> None:
        self.tag, self.keys = tag, keys
        self.r = Report()
        self.r.mark = 1 << 62
        self.issued = self.acked_after = 0
        self.stopping = threading.Event()

    def writing(self) -> bool:
        return not (self.stopping.is_set() and len(self.r.acked) >= self.keys)

    def next(self) -> int:
        self.issued += 1
        return self.issued - 1

    def set_done(self, i: int, reply: Any) -> None:
        if reply is True:
            self.r.acked.append(i)
            self.acked_after += i >= self.r.mark
        else:
            self.set_failed(i, ValueError(f"reply {reply!r}"))

    def set_failed(self, i: int, e: BaseException) -> None:
        after = i >= self.r.mark
        self.r.n_set_errors += 1
        self.r.n_set_errors_after += after
        self.r.last_set_error = max(self.r.last_set_error, i)
        if len(self.r.set_errors) < EXAMPLES or (after and self.r.n_set_errors_after <= EXAMPLES):
            self.r.set_errors.append((i, after, _message(e)))
        self._kind(_message(e))

    def got(self, i: int, reply: Any) -> None:
        if reply is None:
            self.r.missing.append(i)
        elif reply != value(self.tag, i):
            self.r.n_wrong += 1
            if len(self.r.wrong) < EXAMPLES:
                self.r.wrong.append((i, reply))

    def get_failed(self, i: int, e: BaseException) -> None:
        self.r.n_get_errors += 1
        if len(self.r.get_errors) < EXAMPLES:
            self.r.get_errors.append((i, _message(e)))
        self._kind(_message(e))

    def _kind(self, message: str) -> None:
        k = re.sub(r"\d+", "N", message)
        self.r.kinds[k] = self.r.kinds.get(k, 0) + 1


def _message(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class PyWriter(threading.Thread):
    """redis-py's RedisCluster, sync (one command at a time) or asyncio (IN_FLIGHT["asyncio"]
    commands in flight, one lane each)."""

    def __init__(self, name: str, ports: list[int], keys: int) -> None:
        super().__init__(daemon=True, name=name)
        self.ports, self.asyncio = ports, "asyncio" in name
        self.protocol = 3 if name.endswith("resp3") else 2
        self.t = Tally(name, keys)
        self.failure: BaseException | None = None
        self.start()

    def status(self) -> tuple[int, int]:
        if self.failure is not None:
            raise AssertionError(f"{self.name} stopped: {self.failure!r}") from self.failure
        return len(self.t.r.acked), self.t.acked_after

    def mark(self) -> None:
        self.t.r.mark = self.t.issued

    def stop(self) -> None:
        self.t.stopping.set()

    def report(self, timeout: float) -> Report:
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not finish in {timeout:.0f} s"
        if self.failure is not None:
            raise AssertionError(f"{self.name} stopped: {self.failure!r}") from self.failure
        return self.t.r

    def close(self) -> None:
        self.t.stopping.set()

    def run(self) -> None:
        try:
            if self.asyncio:
                asyncio.run(self._async())
            else:
                self._sync()
        except BaseException as e:  # reported by status() and stop()
            self.failure = e

    def _sync(self) -> None:
        t, tag = self.t, self.t.tag
        rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in self.ports], protocol=self.protocol,
                          decode_responses=True)
        try:
            start = time.monotonic()
            while t.writing():
                i = t.next()
                try:
                    t.set_done(i, rc.set(key(tag, i), value(tag, i)))
                except Exception as e:  # recorded; the test judges
                    t.set_failed(i, e)
            t.r.write_seconds = time.monotonic() - start
            start = time.monotonic()
            for i in list(t.r.acked):
                try:
                    t.got(i, rc.get(key(tag, i)))
                except Exception as e:
                    t.get_failed(i, e)
            t.r.read_seconds = time.monotonic() - start
        finally:
            rc.close()

    async def _async(self) -> None:
        t, tag = self.t, self.t.tag
        # reinitialize_steps=0: on MOVED, patch the slot map instead of closing every connection
        # (redis-py 8.1's periodic re-initialization closes connections other tasks are using,
        # against a redis-server cluster as well; see test_cluster_clients.py)
        rc = acluster.RedisCluster(startup_nodes=[acluster.ClusterNode("127.0.0.1", p) for p in self.ports],
                                   protocol=self.protocol, decode_responses=True, reinitialize_steps=0)

        async def write_lane() -> None:
            while t.writing():
                i = t.next()
                try:
                    t.set_done(i, await rc.set(key(tag, i), value(tag, i)))
                except Exception as e:
                    t.set_failed(i, e)

        async def read_lane(todo: list[int]) -> None:
            while todo:
                i = todo.pop()
                try:
                    t.got(i, await rc.get(key(tag, i)))
                except Exception as e:
                    t.get_failed(i, e)

        try:
            await rc.initialize()
            start = time.monotonic()
            await asyncio.gather(*(write_lane() for _ in range(IN_FLIGHT["asyncio"])))
            t.r.write_seconds = time.monotonic() - start
            start = time.monotonic()
            todo = list(reversed(t.r.acked))
            await asyncio.gather(*(read_lane(todo) for _ in range(IN_FLIGHT["asyncio"])))
            t.r.read_seconds = time.monotonic() - start
        finally:
            await rc.aclose()


class NodeWriter:
    """ioredis or node-redis in cluster_failover_clients.mjs (IN_FLIGHT["node"] lanes)."""

    def __init__(self, name: str, ports: list[int], keys: int) -> None:
        _ensure_packages()
        self.name = name
        self.proc = subprocess.Popen(
            ["node", "cluster_failover_clients.mjs", name, ",".join(map(str, ports)), str(keys), name,
             str(IN_FLIGHT["node"])], cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.mark_at = -1
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []  # read as it comes, so that the pipe never fills
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr or ()), daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def _ask(self, command: str, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.name}: no answer to {command} in {timeout:.0f} s") from None
        if not line:
            self.proc.wait(10)
            raise AssertionError(f"{self.name} exited ({self.proc.returncode}): {''.join(self.stderr)}")
        return json.loads(line)

    def status(self) -> tuple[int, int]:
        r = self._ask("status")
        return r["acked"], r["ackedAfter"]

    def mark(self) -> None:
        self.mark_at = self._ask("mark")["mark"]

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()

    def report(self, timeout: float) -> Report:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.name}: no report in {timeout:.0f} s") from None
        assert line, f"{self.name} exited: {''.join(self.stderr)}"
        r = json.loads(line)
        self.proc.wait(30)
        assert self.proc.returncode == 0, "".join(self.stderr)
        return Report(acked=r["acked"], mark=self.mark_at, set_errors=[tuple(e) for e in r["setErrors"]],
                      n_set_errors=r["nSetErrors"], n_set_errors_after=r["nSetErrorsAfter"],
                      last_set_error=r["lastSetError"], missing=r["missing"],
                      wrong=[tuple(w) for w in r["wrong"]], n_wrong=r["nWrong"],
                      get_errors=[tuple(e) for e in r["getErrors"]], n_get_errors=r["nGetErrors"],
                      kinds=r["kinds"], write_seconds=r["writeSeconds"], read_seconds=r["readSeconds"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_writer(name: str, ports: list[int], keys: int) -> PyWriter | NodeWriter:
    return PyWriter(name, ports, keys) if name in PY_CLIENTS else NodeWriter(name, ports, keys)
