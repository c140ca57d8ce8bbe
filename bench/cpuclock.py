"""A server process's CPU time for the benches: user + system, every thread's (those gone too).

The process's CPU-time clock (clock_getcpuclockid's id for a pid, MAKE_PROCESS_CPUCLOCK of
CPUCLOCK_SCHED) counts nanoseconds.  /proc/PID/stat's utime and stime count 10 ms ticks: a bench
row of 20,000 requests at 3 us each is 6 ticks a round, so one tick more or less moved its CPU
ratio by 15-20% (docs/speed-log.md, 2026-11-29, h-regress).  /proc's ticks where the clock is
refused.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
