"""Issue 37: outputs that cannot be turned against the user, and no exit 3
on a user's bad input.

* output paths (-o, --format FMT:FILE, perfetto:FILE, --write-baseline,
  $GITHUB_STEP_SUMMARY): never replace what is not a regular file, never
  follow a symlink, refuse a FIFO with exit 2 at once;
* every string from a trace, a baseline or a file name is escaped in every
  output, stderr included (C0/C1 controls, bidi overrides);
* a bad baseline (deep nesting, a 5,000-digit number, /dev/zero), a full
  disk: exit 2, one line;
* Ctrl-C while the core runs: exit 130 at once, no report.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocrtrace.report import BINARY_FORMATS, FORMATS
from test_cli import DOUBLE_CLOSE  # one strace double close for both files

ROOT = Path(__file__).resolve().parent.parent


def run(*args, env=None, timeout=60):
    e = dict(os.environ)
    e.pop("GITHUB_STEP_SUMMARY", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *map(str, args)], cwd=ROOT, capture_output=True, env=e, timeout=timeout
    )


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "bad.log"
    p.write_text(DOUBLE_CLOSE)
    return p


# --- output paths ------------------------------------------------------------


def _args(opt: str, path) -> list:
    if opt.endswith(":"):
        flag, fmt = opt.split()
        return [flag, f"{fmt}{path}"]
    return [opt, path]


@pytest.mark.parametrize("opt", ["-o", "--format json:", "--format perfetto:", "--write-baseline"])
def test_symlink_output_is_refused_and_its_target_untouched(tmp_path, trace, opt):
    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    link = tmp_path / "out"
    link.symlink_to(target)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "created-through-link")
    for path in (link, dangling):
        args = _args(opt, path)
        r = run("analyze", trace, *args)
        assert r.returncode == 2, r.stderr
        assert "symbolic link" in one_line(r.stderr)
        assert path.is_symlink()
    assert target.read_text() == "precious\n"
    assert not (tmp_path / "created-through-link").exists()


@pytest.mark.parametrize("opt", ["-o", "--format perfetto:", "--write-baseline"])
def test_fifo_output_is_refused_at_once(tmp_path, trace, opt):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = _args(opt, fifo)
    r = run("analyze", trace, *args, timeout=30)  # used to block forever
    assert r.returncode == 2
    assert "FIFO" in one_line(r.stderr)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_fifo_with_a_reader_is_refused_too(tmp_path):
    from rocrtrace.output import OutputError, write

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OutputError, match="FIFO"):
            write(str(fifo), "x")
    finally:
        os.close(reader)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (the attack needs it too)")
def test_write_baseline_onto_a_device_writes_in_place(tmp_path, trace):
    # A private null device: as root, the old temp-file-and-rename replaced
    # the node (/dev/null itself) with a regular 0600 file.
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    r = run("analyze", trace, "--write-baseline", dev, "--format", "json", "-o", tmp_path / "r.json")
    assert r.returncode == 1, r.stderr
    st = os.lstat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_write_baseline_to_stdout_names_the_stream(trace):
    r = run("analyze", trace, "--write-baseline", "/dev/stdout", "--format", "json", "-o", os.devnull)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["schema"] == "rocrtrace-baseline/v1"


def test_write_baseline_keeps_a_regular_files_mode(tmp_path, trace):
    bl = tmp_path / "baseline.json"
    bl.write_text("{}")
    os.chmod(bl, 0o644)
    assert run("analyze", trace, "--write-baseline", bl).returncode == 1
    assert stat.S_IMODE(os.stat(bl).st_mode) == 0o644
    assert json.loads(bl.read_text())["entries"]


def test_report_to_a_full_disk_is_exit_2(trace):
    with open("/dev/full", "wb") as full:
        r = subprocess.run(
            [sys.executable, "-m", "rocrtrace", "analyze", str(trace)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert r.returncode == 2
    assert "No space left" in one_line(r.stderr)
    r = run("analyze", trace, "-o", "/dev/full")
    assert r.returncode == 2
    assert "No space left" in one_line(r.stderr)


def test_step_summary_in_a_missing_directory_warns_and_annotates(trace, tmp_path):
    r = run(
        "analyze", trace, "--format", "github", env={"GITHUB_STEP_SUMMARY": str(tmp_path / "missing" / "summary.md")}
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith(b"::error ")
    assert "step summary" in one_line(r.stderr)


# --- escaping ------------------------------------------------------------------

HOSTILE = "x\n::error file=a.c,line=1::pwned\x1b]52;c;cHduZWQ=\x07\u202eexe.txt"


def test_expired_baseline_entry_is_escaped_on_stderr(tmp_path, trace):
    bl = tmp_path / "bl.json"
    bl.write_text(
        json.dumps(
            {
                "schema": "rocrtrace-baseline/v1",
                "entries": [
                    {
                        "fingerprint": "ab" * 16,
                        "occurrence": 1,
                        "rule": HOSTILE,
                        "message": HOSTILE,
                        "justification": "",
                        "expires": "2001-01-01",
                    }
                ],
            }
        )
    )
    r = run("analyze", trace, "--baseline", bl)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "expired" in err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert not any(ln.startswith("::") for ln in err.splitlines())


def test_file_names_in_errors_are_escaped(tmp_path):
    bad = tmp_path / "evil\x1b]52;c;eA==\x07\u202e.log"
    bad.write_text("not a trace at all\n")
    r = run("analyze", bad)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "\x1b" not in line and "\u202e" not in line and "\\x1b" in line


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f not in BINARY_FORMATS])
def test_bidi_and_controls_never_reach_an_output(tmp_path, fmt):
    evil = "/tmp/a\u202egnp.exe\x1b[2J\u2066"
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE.replace("/dev/null", evil))
    r = run("analyze", log, "--format", fmt, "-v" if fmt == "text" else "--fail-on=error")
    assert r.returncode == 1, r.stderr
    out = r.stdout.decode()
    for ch in ("\u202e", "\u2066", "\x1b"):
        assert ch not in out, (fmt, ch)


def test_csv_formula_with_a_leading_minus_is_neutralized():
    from rocrtrace.report.csv_ import cell as _cell

    assert _cell("-2+3+cmd|' /C calc'!A0").startswith("'")
    assert _cell("=1+1").startswith("'")
    assert _cell("-1") == "-1" and _cell(-1) == "-1"


# --- bad baselines -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "[" * 100000 + "]" * 100000,
        '{"schema": "rocrtrace-baseline/v1", "entries": [{"fingerprint": "'
        + "ab" * 16
        + '", "occurrence": '
        + "9" * 5000
        + "}]}",
    ],
)
def test_hostile_baseline_is_exit_2(tmp_path, trace, content):
    bl = tmp_path / "bl.json"
    bl.write_text(content)
    r = run("analyze", trace, "--baseline", bl)
    assert r.returncode == 2
    assert "baseline" in one_line(r.stderr)


def test_baseline_from_an_endless_device_is_exit_2(trace):
    r = run("analyze", trace, "--baseline", "/dev/zero", timeout=60)
    assert r.returncode == 2
    assert "baseline" in one_line(r.stderr)


# --- Ctrl-C --------------------------------------------------------------------


def test_ctrl_c_stops_the_core_at_once_with_exit_130(tmp_path):
    big = tmp_path / "big.log"
    line = (
        '100 1700000000.{:06d} openat(AT_FDCWD, "/dev/null", O_RDWR) = 3</dev/null>\n'
        "100 1700000000.{:06d} close(3</dev/null>) = 0\n"
    )
    with open(big, "w") as fh:
        chunk = "".join(line.format(i % 1000000, i % 1000000) for i in range(100000))
        for _ in range(30):  # 6M lines: many seconds of replay
            fh.write(chunk)
    p = subprocess.Popen(
        [sys.executable, "-m", "rocrtrace", "analyze", str(big), "--no-progress"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(2.0)
    assert p.poll() is None, "the run ended before the signal: make the trace bigger"
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    took = time.monotonic() - t0
    assert p.returncode == 130, err
    assert out == b""  # no report
    assert b"interrupted" in err
    assert took < 2.0, took


def test_an_open_descriptor_path_is_written_through_the_descriptor(tmp_path, trace):
    # a shell's >(...) names a pipe as /dev/fd/N: written, not refused
    target = tmp_path / "r.json"
    with open(target, "wb") as fh:
        fd = fh.fileno()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "rocrtrace",
                "analyze",
                str(trace),
                "--format",
                f"json:/dev/fd/{fd}",
                "-o",
                os.devnull,
            ],
            cwd=ROOT,
            capture_output=True,
            pass_fds=(fd,),
            timeout=60,
        )
    assert r.returncode == 1, r.stderr
    assert json.loads(target.read_text())["findings"]
    r = run("analyze", trace, "--format", "json:/dev/fd/77")
    assert r.returncode == 2 and "Bad file descriptor" in one_line(r.stderr)


def test_a_failing_input_among_others_is_named_escaped(tmp_path, trace):
    bad = tmp_path / "evil\x1b]52;c;eA==\x07\u202e.log"
    bad.write_text("not a trace at all\n")
    r = run("analyze", trace, bad)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "\\x1b" in err
