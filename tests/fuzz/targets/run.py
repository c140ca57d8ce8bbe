"""Run one fuzz target under atheris: `python -m tests.fuzz.targets.run NAME [--seconds N | --runs N]
[libFuzzer flags ...]` (`make fuzz` runs every target for FUZZ_SECONDS).

New inputs go to build/fuzz/<NAME>/ (the committed corpus in tests/fuzz/corpus/<NAME>/ is read,
never written); a crash, hang or allocation past the cap is written to build/fuzz/artifacts/.
libFuzzer's last line, "Done N runs in S second(s)", is the count of executions.

Rule: the one place that calls atheris.Setup/Fuzz; what a target checks is in its module.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent))

from tests.fuzz.targets import common  # noqa: E402

# Per input: a decoder that takes longer than this is a hang (libFuzzer's -timeout, wall-clock time:
# generous, for a shared machine at low priority, where a 10 ms input has been seen to wait 12 s).
TIMEOUT_S = 60


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", choices=common.TARGETS)
    ap.add_argument("--seconds", type=int, default=0, help="stop after this many seconds")
    ap.add_argument("--runs", type=int, default=0, help="stop after this many executions")
    ap.add_argument("--compiled", action="store_true", help="fuzz the compiled modules (no coverage of them)")
    ap.add_argument("--work", default=str(common.ROOT / "build" / "fuzz"), help="new inputs and artifacts")
    args, libfuzzer = ap.parse_known_args(argv)

    import atheris

    target_name = args.target
    mod_compiled = args.compiled or target_name in common.COMPILED_TARGETS
    if not mod_compiled:
        common.prefer_source()
    common.cbridge_from_env()
    mod = common.load(target_name)
    mod.setup()  # imports what the target calls: its INSTRUMENT modules are among them
    common.instrument((*mod.INSTRUMENT, mod.__name__), getattr(mod, "UNINSTRUMENTED", ()))
    if "asan" not in os.environ.get("LD_PRELOAD", ""):  # ASan maps terabytes of shadow memory
        common.cap_memory()  # (under it, libFuzzer's -rss_limit_mb is the cap)

    work = Path(args.work)
    new = work / target_name
    artifacts = work / "artifacts"
    new.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    flags = [f"-timeout={TIMEOUT_S}", f"-artifact_prefix={artifacts}/{target_name}-",
             "-rss_limit_mb=3072", "-max_len=65536", "-print_final_stats=1"]
    if args.seconds:
        flags.append(f"-max_total_time={args.seconds}")
    if args.runs:
        flags.append(f"-runs={args.runs}")
    dirs = [str(new)]
    seeds = common.CORPUS / target_name
    if seeds.is_dir():
        dirs.append(str(seeds))
    atheris.Setup([sys.argv[0], *flags, *libfuzzer, *dirs], mod.one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
