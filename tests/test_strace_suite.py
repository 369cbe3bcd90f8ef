"""benchmarks/strace_suite.py and strace_suite_wrap.py (issue 33): the
measurement of strace's own test suite.  The wrapper keeps every -o file of
every strace run (real strace here), the collector counts the lines and the
unparsed lines of each log and names the logs rocrtrace rejects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(ROOT, "benchmarks", "strace_suite.py")
WRAP = os.path.join(ROOT, "benchmarks", "strace_suite_wrap.py")


def _collect(build, *more):
    out = os.path.join(build, "result.json")
    r = subprocess.run(
        [sys.executable, SUITE, str(build), "--rocrtrace", f"{sys.executable} -m rocrtrace", "--json", out, *more],
        capture_output=True,
        text=True,
        timeout=120,
    )
    with open(out) as f:
        return r, json.load(f)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_counts_lines_unparsed_and_rejected_logs(tmp_path):
    t = tmp_path / "tests"
    # the files the last run of each test left: log, and -ff log.PID
    _write(str(t / "close.dir" / "log"), "close(3) = 0\n+++ exited with 0 +++\n")
    _write(str(t / "ff.dir" / "log.101"), "101 getpid() = 101\n")
    _write(str(t / "ff.dir" / "log.102"), "102 getpid() = 102\nnot a call at all\n")
    _write(str(t / "ff.dir" / "exp"), "not strace's output\n")
    _write(str(t / "garbage.dir" / "log"), "garbage\nmore garbage\n")
    _write(str(t / "none.dir" / "log"), "")
    r, doc = _collect(tmp_path)
    assert r.returncode == 1, r.stderr  # a rejected log fails the measurement
    files = doc["files"]
    assert sorted(os.path.relpath(f, t) for f in files) == ["close.dir/log", "ff.dir/log.101", "ff.dir/log.102"]
    assert doc["lines"] == 5 and doc["unparsed"] == 1
    assert files[str(t / "ff.dir" / "log.102")]["unparsed"] == 1
    assert list(doc["rejected"]) == [str(t / "garbage.dir" / "log")]
    assert doc["empty"] == [str(t / "none.dir" / "log")]
    assert "lines: 5, unparsed: 1 (20.0000%)" in r.stdout
    # the unparsed line is listed by shape, with where it is
    assert "ff.dir/log.102:2: not a call at all" in r.stdout


def test_the_archive_is_read_when_there_is_one(tmp_path):
    t = tmp_path / "tests"
    _write(str(t / "a.dir" / "log"), "close(3) = 0\n")  # the last run: ignored
    _write(str(t / "strace-logs" / "a.dir" / "1" / "log"), "close(4) = 0\n")
    _write(str(t / "strace-logs" / "a.dir" / "2" / "log"), "close(5) = 0\nclose(6) = 0\n")
    # strace's stderr the test's shell put beside the -o file: not read
    _write(str(t / "strace-logs" / "a.dir" / "2" / "log.err"), "junk\n")
    # -ff alone: every NAME.PID
    _write(str(t / "strace-logs" / "b.dir" / "3" / "log.7"), "7 close(7) = 0\n")
    _write(str(t / "strace-logs" / "b.dir" / "3" / "log.8"), "8 close(8) = 0\n")
    # strace-V.test: `run_strace --version > "$LOG"`
    _write(str(t / "strace-logs" / "V.dir" / "4" / "log"), "strace -- version 7.2\n")
    r, doc = _collect(tmp_path)
    assert r.returncode == 0, r.stderr
    assert doc["lines"] == 5 and doc["logs"] == 4 and doc["unparsed"] == 0
    assert list(doc["no_trace"]) == [str(t / "strace-logs" / "V.dir" / "4" / "log")]


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_the_wrapper_keeps_every_run_and_its_ff_files(tmp_path):
    test_dir = tmp_path / "x.dir"
    test_dir.mkdir()
    archive = tmp_path / "strace-logs"
    env = dict(os.environ, STRACE_REAL=shutil.which("strace"), STRACE_SUITE_ARCHIVE=str(archive))
    for trace in ("getpid", "getppid"):
        r = subprocess.run(
            [
                sys.executable,
                WRAP,
                "-o",
                "log",
                "-e",
                f"trace={trace}",
                sys.executable,
                "-c",
                "import os; os.getpid(); os.getppid()",
            ],
            cwd=test_dir,
            env=env,
            timeout=60,
        )
        assert r.returncode == 0
    (test_dir / "log.err").write_text("the test's own redirect of strace's stderr\n")
    r = subprocess.run(
        [sys.executable, WRAP, "-ff", "-o", "log", "-e", "trace=none", "sh", "-c", "echo x > log.err; true & wait"],
        cwd=test_dir,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0
    # the exit status is strace's
    bad = subprocess.run(
        [sys.executable, WRAP, "-o", "log", "/nonexistent/program"],
        cwd=test_dir,
        env=env,
        timeout=60,
        stderr=subprocess.DEVNULL,
    )
    assert bad.returncode == 1
    # the watcher copies once strace exited: wait for the copies
    runs = []
    for _ in range(100):
        runs = sorted(os.listdir(archive / "x.dir")) if (archive / "x.dir").exists() else []
        if len(runs) >= 4:
            break
        subprocess.run(["sleep", "0.1"])
    assert len(runs) == 4
    first, second, ff, _ = [sorted(os.listdir(archive / "x.dir" / r)) for r in runs]
    assert first == second == ["log"]
    assert len(ff) == 2 and all(f.startswith("log.") and f[4:].isdigit() for f in ff)
    texts = [(archive / "x.dir" / r / "log").read_text() for r in runs[:2]]
    assert "getpid()" in texts[0] and "getppid" not in texts[0]
    assert "getppid()" in texts[1]
