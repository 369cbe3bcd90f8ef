"""Evidence by reference (issue 36, SPEC 7): events carry where their line
is, and the texts a report cites are read back whole when it is written:
from a plain file, a compressed one, the files of an -ff set (also when
they are merged in rounds through spill files), under --jobs; an input
read once (stdin) keeps the text, also whole."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocrtrace import _engine

ROOT = Path(__file__).resolve().parent.parent
# longer than any cut the core ever made (300 code points)
LONG_PATH = "/tmp/" + "d" * 3000 + "/x.bin"
OPEN = f'100 1700000000.000100 openat(AT_FDCWD, "{LONG_PATH}", O_RDONLY) = 3 <0.000010>'
LINES = [
    OPEN,
    "100 1700000000.000200 close(3) = 0 <0.000001>",
    "100 1700000000.000300 close(3) = -1 EBADF (Bad file descriptor) <0.000001>",
    "100 1700000000.000400 exit_group(0) = ?",
    "100 1700000000.000500 +++ exited with 0 +++",
]
DATA = ("\n".join(LINES) + "\n").encode()


def run(*args, stdin: bytes | None = None) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", *map(str, args), "--format", "json"],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def calls(doc: dict) -> dict[str, str]:
    (f,) = [f for f in doc["findings"] if f["rule"] == "fd-double-close"]
    return {e["role"]: e["call"] for e in f["evidence"]}


def zstd(data: bytes) -> bytes:
    if not shutil.which("zstd"):
        pytest.skip("no zstd command")
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout


@pytest.mark.parametrize(
    "name,pack",
    [
        ("t.log", bytes),
        ("t.log.gz", gzip.compress),
        ("t.log.bz2", bz2.compress),
        ("t.log.xz", lzma.compress),
        ("t.log.zst", zstd),
    ],
)
def test_evidence_is_read_back_whole(tmp_path, name, pack):
    p = tmp_path / name
    p.write_bytes(pack(DATA))
    got = calls(run(p))
    assert got["originally created by"] == OPEN
    assert got["this close"] == LINES[2]


def test_stdin_keeps_the_text_whole():
    assert calls(run("-", stdin=DATA))["originally created by"] == OPEN


def test_jobs_workers_refer_to_the_lines_too(tmp_path):
    p = tmp_path / "t.log"
    p.write_bytes(DATA)
    (rep,) = _engine.analyze([str(p)], jobs=2, chunking=(1, 0))
    assert rep["chunks"] > 0
    (f,) = [f for f in rep["findings"] if f.rule == "fd-double-close"]
    assert [e.event.text for e in f.evidence] == [OPEN, LINES[1], LINES[2]]


def ff_set(d: Path, tids: int) -> dict[tuple[str, int], str]:
    """An -ff set: thread 100 makes threads 101.. (sharing files); each
    new thread opens a file by a long path and closes it, then 100 closes
    the first fd again.  {(file, line): text} of every line."""
    lines = {
        100: [
            f"1.{t:06d} clone3({{flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, "
            f"exit_signal=0}} => {{parent_tid=[{t}]}}, 88) = {t} <0.000001>"
            for t in range(101, 100 + tids)
        ]
    }
    for i, t in enumerate(range(101, 100 + tids)):
        lines[t] = [
            f'1.{500 + 10 * i:06d} openat(AT_FDCWD, "{LONG_PATH}{t}", O_RDONLY) = {3 + i} <0.000001>',
            f"1.{501 + 10 * i:06d} close({3 + i}) = 0 <0.000001>",
        ]
    lines[100].append("2.000000 close(3) = -1 EBADF (Bad file descriptor) <0.000001>")
    out = {}
    for t, ls in lines.items():
        f = d / f"tr.{t}"
        f.write_text("\n".join(ls) + "\n")
        out.update({(str(f), n): text for n, text in enumerate(ls, 1)})
    return out


def test_ff_files_read_back_from_each_file(tmp_path):
    lines = ff_set(tmp_path, 3)
    doc = run(tmp_path)
    (f,) = [f for f in doc["findings"] if f["rule"] == "fd-double-close"]
    got = {(e["file"], e["line"]): e["call"] for e in f["evidence"]}
    assert any(LONG_PATH in c for c in got.values())
    assert got == {k: lines[k] for k in got}


@pytest.mark.parametrize("max_open", [2, 64])
def test_ff_merge_in_rounds_keeps_every_reference(tmp_path, max_open):
    """More files than max_open: merged in rounds through spill files, the
    events still say where their lines are."""
    lines = ff_set(tmp_path, 6)
    evs, _ = _engine.trace_events(str(tmp_path), max_open=max_open)
    assert len(evs) == len(lines)
    for e in evs:
        assert e.text == lines[(e.file, e.line)], (e.file, e.line)


def test_show_reads_its_rows_back_whole(tmp_path):
    p = tmp_path / "t.log.gz"
    p.write_bytes(gzip.compress(DATA))
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "show", str(p), "--fd", "3", "--format", "json"],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert OPEN in [row["call"] for row in json.loads(r.stdout)["events"]]


def test_a_quoted_paste_reads_back_without_its_quoting(tmp_path):
    p = tmp_path / "t.log"
    p.write_text("".join(f"> {ln}\n" for ln in LINES))
    assert calls(run(p))["originally created by"] == OPEN


def test_a_file_changed_before_the_report_gives_a_note(tmp_path):
    """The input changes while the run reads it (the progress callback runs
    between the parse and the report): the evidence is a note saying so,
    never the text of another line."""
    p = tmp_path / "t.log"
    # enough events for the progress callback (every 2^16 events)
    filler = "100 1700000000.000150 getpid() = 100 <0.000001>\n" * 70000
    p.write_text(LINES[0] + "\n" + filler + "\n".join(LINES[1:]) + "\n")

    class Bar:
        def advance(self, *a):
            with open(p, "a") as fh:
                fh.write("# appended\n")

    (rep,) = _engine.analyze([str(p)], progress=Bar())
    (f,) = [f for f in rep["findings"] if f.rule == "fd-double-close"]
    for e in f.evidence:
        assert e.event.text == (f"[line {e.event.line} of {p} cannot be read back: it changed since it was read]")
    assert os.path.getsize(p) > len(DATA)
