"""The house's map cannot go stale unnoticed: every folder under server/ has its floor in the
layers contract (pyproject.toml), its line in server/__init__.py's map and its paragraph in
docs/layout.md; every module of a folder whose __init__ keeps a module map is named there."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests.support.servers import ROOT

SERVER = ROOT / "server"
FOLDERS = sorted(p.name for p in SERVER.iterdir() if (p / "__init__.py").exists())
# folders whose __init__ docstring maps their modules, one `name.py` (or .pyx) a line
MAPPED = ["scripting"]


def _layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c.get("type") == "layers" and c["containers"] == ["raxdb.server"]]
    assert layers.get("exhaustive") is True  # a new folder fails the lint, not only this test
    return layers["layers"]


def test_there_are_folders_to_check():
    assert {"base", "net", "cluster", "commands"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_server_folder_is_placed_and_described(folder):
    assert folder in _layers(), f"server/{folder}/ has no floor in pyproject.toml's layers contract"
    server_map = (SERVER / "__init__.py").read_text()
    assert re.search(rf"^\s+{folder}/\s", server_map, re.M), f"server/__init__.py's map omits {folder}/"
    layout = (ROOT / "docs" / "layout.md").read_text()
    assert f"**`{folder}/`" in layout, f"docs/layout.md has no paragraph for server/{folder}/"


@pytest.mark.parametrize("folder", MAPPED)
def test_module_maps_name_every_module(folder):
    doc = (SERVER / folder / "__init__.py").read_text()
    for path in sorted((SERVER / folder).iterdir()):
        if path.suffix in (".py", ".pyx") and path.name != "__init__.py":
            stem = re.escape(path.stem)
            pattern = rf"^{stem}\.(py|pyx)\s" if not path.stem.startswith("lib_") else r"^lib_\*\.py\s"
            assert re.search(pattern, doc, re.M), f"server/{folder}/__init__.py's map omits {path.name}"


def test_storage_writes_no_resp():
    """RESP is protocol/'s (issue #57): storage/ walks its structures and hands the pieces (an
    element's bytes, an integer, a stream ID's parts) to protocol/reply.py's writers, so no frame's
    CRLF is spelled in storage/'s sources."""
    found = [f"{p.name}:{i}" for p in sorted((ROOT / "storage").glob("*.p[yx]*"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if "\\r\\n" in line]
    assert found == []
