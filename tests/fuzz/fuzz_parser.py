"""atheris harness: bytes → the core's reader and every parser (strace,
preload, tinygrad), as a file with each format forced and detected, and as
lines fed to each parser directly.  A ReadError (one line, exit 2 in the
CLI) is an answer; any other exception, a Rust panic included, is a crash:
the parsers count what they cannot read instead of raising."""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["rocrtrace"]):
    from rocrtrace import _engine

_DIR = tempfile.mkdtemp(prefix="rocrtrace-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
_PATH = os.path.join(_DIR, "trace.log")


def TestOneInput(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    for fmt in (None, "strace", "preload", "tinygrad"):
        try:
            _engine.read_input(_PATH, fmt, 4096)
            _engine.trace_events(_PATH, fmt, 4096, 64)
        except _engine.ReadError as e:
            assert "\n" not in str(e)
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    for fmt in ("strace", "preload"):
        evs, info = _engine.parse_lines(fmt, "fuzz", lines)
        assert info["lines"] == len(lines) and info["events"] == len(evs)
    evs, info = _engine.parse_tinygrad_lines("fuzz", [ln.encode("utf-8", "replace").decode() for ln in lines])
    assert info.lines == len(lines) and info.events == len(evs)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
