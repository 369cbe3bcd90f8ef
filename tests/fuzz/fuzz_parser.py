"""atheris harness: bytes → every line reader and parser (strace, preload,
tinygrad).  Any exception is a crash: the parsers count what they cannot
read instead of raising."""
from __future__ import annotations

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["rocrtrace"]):
    from rocrtrace.events import InputInfo
    from rocrtrace.inputs import clean_lines, read_lines, layout_of
    from rocrtrace.parse import tinygrad
    from rocrtrace.parse.strace import Parser


class _Bytes:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def TestOneInput(data: bytes) -> None:
    for parser_cls in (Parser, tinygrad.Parser):
        info = InputInfo(file="fuzz")
        lay = layout_of(data[:1 << 16], "fuzz")
        p = parser_cls("fuzz", info)
        for lineno, line in clean_lines(read_lines(_Bytes(data), info, max_line=4096), info, lay):
            if line is None:
                info.lines += 1
                continue
            for ev in p.feed(lineno, line):
                ev.end       # noqa: B018 - every event answers its window
        p.finish()


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
