"""atheris harness: bytes as a trace file → the engine (detection, preamble,
layout) → replay against every model → a text and a JSON report.  An
InputError (exit 2, one line) is an answer; any other exception is a crash."""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["rocrtrace"]):
    from rocrtrace.engine import analyze
    from rocrtrace.paths import InputError
    from rocrtrace.report import render

_DIR = tempfile.mkdtemp(prefix="rocrtrace-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
_PATH = os.path.join(_DIR, "trace.log")


def TestOneInput(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    try:
        result = analyze([_PATH])
    except InputError as e:
        assert "\n" not in str(e)
        return
    render(result, "text")
    render(result, "json")


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
