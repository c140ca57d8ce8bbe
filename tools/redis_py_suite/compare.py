"""Compare two pytest JUnit XML reports of the same redis-py test run, one against redis-server and
one against raxdb, test id by test id.

    python compare.py REDIS.xml RAXDB.xml [LABEL]

Prints each report's totals, then every difference: a test that passed against redis-server and did
not pass against raxdb (failed, errored, or is missing from raxdb's report: a crash or a timeout
ends a run early), with the first line of raxdb's failure message.  Tests that pass against raxdb
and fail against redis-server are listed apart ("reverse"): raxdb answers unlike Redis there too,
though such a test was often written for a newer server (or depends on timing).  Exit status 1 if
there is a difference.

The outcome of a test is read from its <testcase>: a <failure> or <error> child is a failure (an
error in set-up or tear-down is as much a difference as a failed assertion), <skipped> is a skip,
none is a pass.  A test id is "classname::name", which is unique per parametrised test.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter

Outcome = tuple[str, str]  # ("passed" | "failed" | "skipped", first line of the message)


def outcomes(path: str) -> dict[str, Outcome]:
    result: dict[str, Outcome] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        state, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                state, message = "failed", (child.get("message") or "").strip()
                break
            if child.tag == "skipped":
                state = "skipped"
        # a test failing in its call and again in its tear-down has two entries: a failure wins
        if result.get(test_id, ("",))[0] != "failed":
            result[test_id] = (state, message.splitlines()[0][:160] if message else "")
    return result


def totals(report: dict[str, Outcome]) -> str:
    counts = Counter(state for state, _ in report.values())
    return f"passed={counts['passed']} failed={counts['failed']} skipped={counts['skipped']}"


def main(argv: list[str]) -> int:
    redis_xml, raxdb_xml = argv[1], argv[2]
    label = argv[3] if len(argv) > 3 else ""
    redis, raxdb = outcomes(redis_xml), outcomes(raxdb_xml)
    print(f"{label} redis-server: {totals(redis)}")
    print(f"{label} raxdb:        {totals(raxdb)}")
    differences = [(test_id, raxdb.get(test_id, ("missing", "not in raxdb's report"))[1])
                   for test_id, (state, _) in redis.items()
                   if state == "passed" and raxdb.get(test_id, ("missing",))[0] not in ("passed", "skipped")]
    # skipped against raxdb but passed against redis-server: a version or capability check differs
    differences += [(test_id, "skipped against raxdb") for test_id, (state, _) in redis.items()
                    if state == "passed" and raxdb.get(test_id, ("",))[0] == "skipped"]
    print(f"{label} differences: {len(differences)}")
    for test_id, message in differences:
        print(f"  DIFF {test_id}: {message}")
    # a test redis-server 7.0.15 fails and raxdb passes is a difference too (raxdb answers unlike
    # Redis), though often one of a test written for a newer server: listed, not counted
    reverse = [test_id for test_id, (state, _) in raxdb.items()
               if state == "passed" and redis.get(test_id, ("",))[0] == "failed"]
    print(f"{label} reverse (fails against redis-server, passes against raxdb): {len(reverse)}")
    for test_id in reverse:
        print(f"  REVERSE {test_id}: {redis[test_id][1]}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
