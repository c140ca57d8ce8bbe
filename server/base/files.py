"""Durable files: the temp-file dance every file the server writes whole takes (the RDB, the AOF
base and manifest, a rewritten config), and the quiet removal of temp and history files.

Rule: the standard library only; no server state.  Invariant: a crash at any point leaves the old
file whole (write the temp file, flush, fsync, rename over the destination).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO


class WriteFailed(Exception):
    """`write_atomically` failed at `stage` ("open", "write", "fsync" or "rename"); each caller
    logs Redis's message for its file and stage."""

    def __init__(self, stage: str, exc: OSError) -> None:
        super().__init__(exc.strerror)
        self.stage = stage
        self.strerror = exc.strerror or str(exc)


def remove_quietly(path: str) -> None:
    """Remove a temp or history file that may not be there (bg_unlink's failures go unreported)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomically(tmp: str, dest: str, fill: Callable[[BinaryIO], object]) -> None:
    """The temp-file dance every durable file here takes (the RDB, the AOF base, the AOF manifest):
    write `tmp`, flush, fsync, rename it over `dest`, so a crash leaves the old `dest` whole.  The
    temp file is removed when anything fails (WriteFailed names the stage)."""
    try:
        f = open(tmp, "wb")  # noqa: SIM115 - closed below on every path
    except OSError as exc:
        raise WriteFailed("open", exc) from None
    stage = "write"
    try:
        with f:
            fill(f)
            f.flush()
            stage = "fsync"
            os.fsync(f.fileno())
        stage = "rename"
        os.replace(tmp, dest)
    except OSError as exc:
        remove_quietly(tmp)
        raise WriteFailed(stage, exc) from None
