"""Regenerate server/table/commands/<gen>/{info,docs}/*.json, the entries later Redis generations
changed, from Redis's own command descriptions (src/commands/*.json) at its release tags.

For each generation (7.2: Redis 7.2.4, 7.4: 7.4.1) every command or subcommand raxdb's table has
(commands/docs/) is rendered as COMMAND DOCS renders it (gen_newer_commands.py's renderer) from
the previous generation's JSON (7.0.15, 7.2.4) and from the generation's own; where the two differ
(an argument renamed, retyped or added, a summary reworded, a history entry, doc_flags, ...), the
generation's rendering becomes the command's entry in commands/<gen>/docs/.  metadata.changes
reads a generation's changed commands from its info/ folder, so each such command gets an info
entry there too: the one that folder (or an earlier generation's) already had (ZRANK's arity -3),
else 7.0's, with the generation's command tips where those changed (metadata for cluster clients,
no behaviour).  Other changes of COMMAND INFO's fields (arity, flags, key specs) are listed on
stderr, not written: each needs a behaviour to go with it.
Usage: python tools/gen_generation_docs.py path/to/redis/git-dir   (a clone with the tags)
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

from gen_newer_commands import OUT, _docs, _write

BASE = "7.0.15"
GENERATIONS = {"7.2": "7.2.4", "7.4": "7.4.1"}  # as server/table/metadata.py's GENERATIONS
# Arguments a generation added that raxdb does not serve yet: the command keeps the previous
# generation's entry there (COMMAND DOCS describes what raxdb serves), until they are built.
NOT_SERVED = {"7.4": {"hscan": "NOVALUES", "client|kill": "MAXAGE"}}
_INFO_FIELDS = ("arity", "command_flags", "acl_categories", "key_specs", "command_tips")


def _commands(git_dir: str, tag: str) -> dict[str, dict]:
    """Every src/commands/*.json of a tag, by raxdb's name ("get", "client|kill")."""
    blob = subprocess.run(["git", "-C", git_dir, "archive", tag, "src/commands"], check=True,
                          capture_output=True).stdout
    out: dict[str, dict] = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith(".json"):
                f = tar.extractfile(m)
                assert f is not None
                for upper, d in json.load(f).items():
                    name = upper.lower()
                    out[f"{d['container'].lower()}|{name}" if "container" in d else name] = d
    return out


def _render(cmds: dict[str, dict], name: str) -> list:
    containers = {n.partition("|")[0] for n in cmds if "|" in n}
    return _docs(cmds[name], container=name in containers)


def _read(folder: str) -> dict[str, list]:
    trees: dict[str, list] = {}
    path = OUT / folder
    if path.is_dir():
        for f in sorted(path.glob("*.json")):
            trees.update(json.loads(f.read_text()))
    return trees


def main(git_dir: str) -> None:
    ours = _read("docs")  # the commands raxdb's table has
    infos = _read("info")
    prev_tag, prev = BASE, _commands(git_dir, BASE)
    for gen, tag in GENERATIONS.items():
        cmds = _commands(git_dir, tag)
        known_info = _read(f"{gen}/info")
        docs_out: dict[str, dict[str, list]] = {}
        info_out: dict[str, dict[str, list]] = {}
        for name in sorted(ours):
            if name not in cmds or name not in prev:
                continue  # newer than the previous generation: its line in commands/ is the newest's
            if name in NOT_SERVED.get(gen, {}):
                print(f"{gen}: {name}: kept {prev_tag}'s entry ({NOT_SERVED[gen][name]} not served)", file=sys.stderr)
                continue
            d = cmds[name]
            info = known_info.get(name) or infos[name]
            changed = [k for k in _INFO_FIELDS if prev[name].get(k) != d.get(k)]
            if changed == ["command_tips"]:  # metadata alone (cluster clients read it): taken over
                fields = info[1]
                tips = ["~", [t.lower() for t in d.get("command_tips", [])]]
                info = ["*", [*fields[:7], tips, *fields[8:]]]
            elif changed and name not in known_info:
                print(f"{gen}: {name}: COMMAND INFO's {', '.join(changed)} changed since {prev_tag} (not written:"
                      " a behaviour goes with it)", file=sys.stderr)
            new = _render(cmds, name)
            if new == _render(prev, name) and info == (known_info.get(name) or infos[name]):
                continue
            group = d["group"].replace("_", "-")  # as COMMAND DOCS and commands/docs/ name it
            docs_out.setdefault(group, {})[name] = new
            info_out.setdefault(group, {})[name] = info
        for folder in ("docs", "info"):
            path = OUT / gen / folder
            path.mkdir(parents=True, exist_ok=True)
            for f in path.glob("*.json"):
                f.unlink()
            for group, entries in (docs_out if folder == "docs" else info_out).items():
                (path / f"{group}.json").write_text("{\n}\n")
                _write(path / f"{group}.json", entries)
        print(f"{gen}: {sum(map(len, docs_out.values()))} commands changed since {prev_tag}", file=sys.stderr)
        infos.update({n: t for g in info_out.values() for n, t in g.items()})
        prev_tag, prev = tag, cmds


if __name__ == "__main__":
    main(sys.argv[1])
