"""BullMQ's captured command stream replayed into a `Client` in process: the figure
bench/bullmq_instr.sh counts instructions per job with.

    .venv/bin/python bench/bullmq_hot.py COMMANDS.json ROUNDS

COMMANDS.json is what `bench/bullmq_replay.py --save` wrote.  Each round starts with FLUSHALL and
feeds the commands 50 to a batch (the replay's pipeline depth) into one client with a stub
transport, as bench/hotpath.py does; one round runs first, uncounted, so that the scripts are
loaded and the code is warm.  The slow log and the latency monitor are off (hotpath's `quiet`), as
under instr.sh, and saving is off (FLUSHALL would otherwise write an RDB file).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HOTPATH_LIGHT", "1")  # no 100k-key set-up: the scripts' keys are their own
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import hotpath  # noqa: E402
from tests.support.diff import encode_command  # noqa: E402

DEPTH = 50


def main() -> None:
    cmds = [[a.encode("latin-1") for a in argv] for argv in json.loads(Path(sys.argv[1]).read_text())]
    rounds = int(sys.argv[2])
    jobs = sum(1 for argv in cmds if argv[0].upper() == b"EVALSHA") // 2  # an add and a process each
    c = hotpath.make_client(setup_commands=100, counting=True)
    c.data_received(encode_command([b"CONFIG", b"SET", b"save", b""]))
    batches = [b"".join(encode_command(a) for a in cmds[i:i + DEPTH]) for i in range(0, len(cmds), DEPTH)]
    flush = encode_command([b"FLUSHALL"])

    def one_round() -> None:
        c.data_received(flush)
        for b in batches:
            c.data_received(b)

    one_round()
    t = time.process_time()
    for _ in range(rounds):
        one_round()
    dt = time.process_time() - t
    print(f"{jobs} jobs a round, {rounds} rounds: {dt / max(rounds, 1) / jobs * 1e6:.1f} us of CPU per job")


if __name__ == "__main__":
    main()
