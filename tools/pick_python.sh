#!/bin/sh
# Which interpreter `make` builds .venv with (override: make PYTHON=/path/to/python3).
#
# The hot path is interpreter-bound, so the interpreter's build matters as much as a week of
# micro-optimisation: distributions (Debian's /usr/bin/python3, the python:3.x Docker images)
# build CPython with profile-guided optimisation and link the interpreter statically, while a
# default pyenv or source build has neither and links against a shared libpython.  Measured here
# with bench/hotpath.py at -P 16: Debian's 3.11.2 spends 12-18% less CPU per command than pyenv's
# 3.11.7 (SET 1.04 against 1.21 us, HSET 1.37 against 1.69, XADD 3.37 against 3.92).
#
# So the system interpreter comes first, if it is 3.11 or newer and can make a venv (Debian
# splits ensurepip into python3-venv); otherwise the first python3 on PATH.
for p in /usr/bin/python3 /usr/local/bin/python3 python3; do
    if "$p" -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        command -v "$p"
        exit 0
    fi
done
echo python3
