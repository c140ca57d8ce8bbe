"""Fuzz target: the AOF manifest (server/persistence/aofmanifest.py's parse).

Properties: only ManifestError; a manifest that parses formats to text that parses to the same
manifest (what the server writes back after loading it; one of comments only lists nothing, as
in Redis, and is never written).
"""

from __future__ import annotations

NAME = "manifest"
INSTRUMENT = ("raxdb.server.persistence.aofmanifest",)  # the modules whose coverage guides the fuzzer


def setup() -> None:
    from raxdb.server.persistence import aofmanifest  # noqa: F401


def one_input(data: bytes) -> None:
    from raxdb.server.persistence import aofmanifest

    try:
        m = aofmanifest.parse(data)
    except aofmanifest.ManifestError:
        return
    text = m.format()
    if not text:  # comments only: Redis reads it as no files, and never writes such a manifest
        return
    if "'" in text:
        # a name with a single quote is written bare (sdsneedsrepr does not count it) and does not
        # read back: redis-server 7.0.15 does the same (`--appendfilename "o'x"`: its next start
        # stops at "Invalid AOF manifest file format"), so raxdb does too
        return
    again = aofmanifest.parse(text.encode(errors="surrogateescape"))
    assert again.format() == text, (text, again.format())
