"""Bad input never crashes: it is an InputError naming the file, or parsed
with the bad lines counted."""
from __future__ import annotations

import gzip
import lzma
import os
import random
import resource
import tracemalloc

import pytest

from rocrtrace.inputs import InputError, open_trace, read_lines
from rocrtrace.events import InputInfo

GOOD = (b"100   1795973828.954411 openat(AT_FDCWD, \"/dev/null\", O_RDWR) = 3 <0.000010>\n"
        b"100   1795973828.954511 close(3) = 0 <0.000003>\n")


def _one_line_error(path, match):
    with pytest.raises(InputError) as ei:
        open_trace(str(path))
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("rocrtrace: ") and match in msg
    return msg


def test_missing_empty_and_dirs(tmp_path):
    _one_line_error(tmp_path / "nope.log", "nope.log")
    (tmp_path / "zero.log").write_bytes(b"")
    _one_line_error(tmp_path / "zero.log", "empty")
    (tmp_path / "d").mkdir()
    _one_line_error(tmp_path / "d", "empty directory")


def test_random_and_binary_junk(tmp_path):
    rnd = random.Random(7)
    p = tmp_path / "rand.bin"
    p.write_bytes(bytes(rnd.randrange(256) for _ in range(20000)))
    _one_line_error(p, "not an strace, preload or tinygrad log")
    p2 = tmp_path / "text.txt"
    p2.write_text("hello world\nthis is not a trace\n" * 20)
    _one_line_error(p2, "text.txt")


def test_junk_inside_real_log(tmp_path):
    p = tmp_path / "mixed.log"
    p.write_bytes(GOOD + b"\xff\xfe\x00garbage\x00\n" + b"caf\xc3 invalid utf8\n" + GOOD
                  + b"100   close(4")          # truncated last line, no newline
    t = open_trace(str(p))
    evs = list(t.events())
    info = t.infos[0]
    assert [e.name for e in evs] == ["openat", "close", "openat", "close"]
    assert info.unparsed == 3 and info.ends_mid_line
    assert [ln for ln, _ in info.unparsed_samples] == [3, 4, 7]


def test_compressed(tmp_path):
    for name, data in (("t.log.gz", gzip.compress(GOOD)), ("t.log.xz", lzma.compress(GOOD))):
        p = tmp_path / name
        p.write_bytes(data)
        evs = list(open_trace(str(p)).events())
        assert [e.name for e in evs] == ["openat", "close"]


def test_ff_glob_merges(tmp_path):
    (tmp_path / "tr.100").write_bytes(
        b"1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0} => "
        b"{parent_tid=[101]}, 88) = 101 <0.000500>\n1.002000 close(3) = 0 <0.000001>\n")
    (tmp_path / "tr.101").write_bytes(b"1.000100 close(4) = 0 <0.000001>\n")
    t = open_trace(str(tmp_path / "tr.*"))
    evs = list(t.events())
    assert [(e.name, e.tid, e.pid) for e in evs] == [
        ("close", 101, 100), ("clone3", 100, 100), ("close", 100, 100)]
    assert [e.seq for e in evs] == [0, 1, 2] and len(t.infos) == 2


class _Huge:
    """A stream of one 1 GiB line with no newline, made on the fly."""

    def __init__(self, size):
        self.left = size
        self.block = b"x" * (1 << 20)

    def read(self, n):
        if self.left <= 0:
            return b""
        k = min(n, self.left, len(self.block))
        self.left -= k
        return self.block[:k]


def test_gigabyte_line_bounded_memory():
    info = InputInfo(file="huge")
    tracemalloc.start()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = list(read_lines(_Huge(1 << 30), info, max_line=1 << 20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert out == [(1, None)]
    assert info.too_long == 1 and info.unparsed == 1 and info.ends_mid_line
    assert peak < 100 << 20
    assert (rss1 - rss0) * 1024 < 100 << 20


def test_long_line_in_file_is_skipped(tmp_path):
    p = tmp_path / "long.log"
    p.write_bytes(GOOD + b"100   write(1, \"" + b"a" * 5000 + b"\", 5000) = 5000\n" + GOOD)
    t = open_trace(str(p), max_line=1000)
    evs = list(t.events())
    assert len(evs) == 4 and t.infos[0].too_long == 1 and t.infos[0].unparsed == 1
