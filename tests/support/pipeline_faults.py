"""`raxdb_faulty`: the raxdb sink with injected task failures, for the delivery-guarantee tests.

Imported by Spark's Python workers (PYTHONPATH includes the checkout), so it imports nothing from
pytest.  Faults are switched on by a Redis key, which lets a test turn them off before restarting
a query, and every injected failure INCRs `<fault.key>:count` so a test can prove they happened.

Options on top of the sink's:
- fault.key: the switch (faults only while this key exists)
- fault.when: "after-commit" (raise after the partition's transaction committed: a retry must
  write nothing) or "mid-partition" (raise after the rows were queued in MULTI, before EXEC:
  nothing may be applied) or "mixed" (even partitions after-commit, odd ones mid-partition)
- fault.attempts: fail attempts numbered below this (default 1: the first attempt only)
- fault.batch: only in this streaming micro-batch

`fault.when=restart` does not fail the task: once (the first task to DEL the switch), the task asks
the test to restart the server (RPUSH `<fault.key>:restart`, which the test's restarter BLPOPs) and
goes on only once the server is gone (its own BLPOP breaks off), so the read or write it was in
meets the restart.  A reader injects it after its first Arrow batch (the next page is in flight),
a writer before EXEC (rows queued inside MULTI).  Any task attempt after the first INCRs
`<fault.key>:retried`: surviving the restart must not need Spark to retry the task.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis
from pyspark import TaskContext
from redis.backoff import NoBackoff
from redis.retry import Retry

from raxdb.spark.options import ConnectionOptions, Options, ReadOptions
from raxdb.spark.sink import BATCH_ID, BatchWriter, StreamWriter
from raxdb.spark.source import RaxdbDataSource, StreamReader


class InjectedFailure(RuntimeError):
    pass


class Faults:
    def __init__(self, raw) -> None:
        opts = Options(raw)
        self.connection = ConnectionOptions.parse(opts)
        self.key = opts.get("fault.key")
        self.when = opts.get("fault.when", "after-commit")
        self.attempts = opts.int("fault.attempts", 1)
        self.batch = opts.get("fault.batch")

    def armed(self, when: str) -> bool:
        context = TaskContext.get()
        mode = self.when
        if mode == "mixed":  # even partitions fail after commit, odd ones before EXEC
            mode = "after-commit" if context.partitionId() % 2 == 0 else "mid-partition"
        if self.key is None or mode != when or context.attemptNumber() >= self.attempts:
            return False
        if self.batch is not None and context.getLocalProperty(BATCH_ID) != self.batch:
            return False
        client = redis.Redis(host=self.connection.host, port=self.connection.port, protocol=2)
        try:
            if not client.exists(self.key):
                return False
            client.incr(self.key + ":count")
            return True
        finally:
            client.close()

    def restart(self) -> None:
        """The server restart described in the module docstring, when armed."""
        if self.key is None or self.when != "restart":
            return
        context = TaskContext.get()
        # No socket timeout and no retry (redis-py's default would reconnect to the restarted
        # server and block again): BLPOP below returns only when the server goes away.
        client = redis.Redis(host=self.connection.host, port=self.connection.port, protocol=2,
                             socket_timeout=None, retry=Retry(NoBackoff(), 0))
        try:
            if context.attemptNumber() > 0:
                client.incr(self.key + ":retried")
                return
            if self.batch is not None and context.getLocalProperty(BATCH_ID) != self.batch:
                return
            if client.delete(self.key) != 1:
                return
            try:
                client.rpush(self.key + ":restart", 1)
                client.blpop([self.key + ":never"], timeout=120)
            except redis.ConnectionError:
                # the server went away: back to the read or write.  It may go before RPUSH's own
                # reply is read: the test restarts it as soon as it sees the push.
                return
            raise InjectedFailure("the test did not restart the server")
        finally:
            client.close()

    def wrap(self, iterator: Iterator) -> Iterator:
        # Fails when the sink asks for more rows after the last batch: by then every full chunk
        # (batchSize commands) has been queued inside MULTI, but EXEC has not been sent.
        yield from iterator
        self.restart()
        if self.armed("mid-partition"):
            raise InjectedFailure("injected failure while the partition was being written")

    def after(self) -> None:
        if self.armed("after-commit"):
            raise InjectedFailure("injected failure after the partition's transaction committed")


class FaultyBatchWriter(BatchWriter):
    def __init__(self, options, schema, overwrite) -> None:
        super().__init__(options, schema, overwrite)
        self.faults = Faults(options)

    def write(self, iterator):
        result = super().write(self.faults.wrap(iterator))
        self.faults.after()
        return result


class FaultyStreamWriter(StreamWriter):
    def __init__(self, options, schema, overwrite) -> None:
        super().__init__(options, schema, overwrite)
        self.faults = Faults(options)

    def write(self, iterator):
        result = super().write(self.faults.wrap(iterator))
        self.faults.after()
        return result


class FaultyStreamReader(StreamReader):
    def __init__(self, options: ReadOptions, schema, raw) -> None:
        super().__init__(options, schema)
        self.faults = Faults(raw)

    def read(self, partition):
        first = True
        for batch in super().read(partition):
            yield batch
            if first:
                self.faults.restart()
                first = False


class FaultySource(RaxdbDataSource):
    @classmethod
    def name(cls) -> str:
        return "raxdb_faulty"

    def streamReader(self, schema):
        return FaultyStreamReader(super().streamReader(schema).options, schema, self.options)

    def writer(self, schema, overwrite):
        return FaultyBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema, overwrite):
        return FaultyStreamWriter(self.options, schema, overwrite)


def register(spark) -> None:
    spark.dataSource.register(FaultySource)
