"""The CLI contract: exit codes 0/1/2/3 exactly, one-line errors
naming the file, never a bare traceback."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocrtrace.report import BINARY_FORMATS, FORMATS

ROOT = Path(__file__).resolve().parent.parent


def run(*args, stdin=None, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *args], cwd=ROOT, input=stdin, capture_output=True, env=e, timeout=120
    )


DOUBLE_CLOSE = (
    '100   1700000000.000100 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3</dev/null> <0.000010>\n'
    "100   1700000000.000200 close(3</dev/null>) = 0 <0.000005>\n"
    "100   1700000000.000300 close(3) = -1 EBADF (Bad file descriptor) <0.000004>\n"
    "100   1700000000.000400 exit_group(0) = ?\n"
    "100   +++ exited with 0 +++\n"
)
CLEAN = (
    '100   1700000000.000100 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3</dev/null> <0.000010>\n'
    "100   1700000000.000200 close(3</dev/null>) = 0 <0.000005>\n"
    "100   1700000000.000400 exit_group(0) = ?\n"
    "100   +++ exited with 0 +++\n"
)


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_findings_exit_1_and_clean_exit_0(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text(DOUBLE_CLOSE)
    good = tmp_path / "good.log"
    good.write_text(CLEAN)
    r = run("analyze", str(bad))
    assert r.returncode == 1, r.stderr
    assert b"fd-double-close" in r.stdout
    r = run("analyze", str(good))
    assert r.returncode == 0, r.stdout + r.stderr


def test_fail_on_never_and_json(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text(DOUBLE_CLOSE)
    r = run("analyze", "--fail-on", "never", "--format", "json", str(bad))
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    rules = [f["rule"] for f in doc["findings"]]
    assert rules == ["fd-double-close"]
    f = doc["findings"][0]
    assert f["line"] == 3 and f["pid"] == 100 and f["tid"] == 100
    assert f["subject"] == {"kind": "fd", "fd": 3, "fd_kind": "other"}
    assert doc["inputs"][0]["format"] == "strace" and doc["inputs"][0]["unparsed"] == 0


def test_stdin_and_gzip(tmp_path):
    r = run("analyze", "-", stdin=DOUBLE_CLOSE.encode())
    assert r.returncode == 1
    gz = tmp_path / "t.log.gz"
    gz.write_bytes(gzip.compress(DOUBLE_CLOSE.encode()))
    assert run("analyze", str(gz)).returncode == 1


@pytest.mark.parametrize("content", [b"", os.urandom(4096), b"\x00" * 100, b"\xff\xfe not a log \x80\x81\n" * 10])
def test_unrecognized_input_exit_2_one_line(tmp_path, content):
    p = tmp_path / "junk.bin"
    p.write_bytes(content)
    r = run("analyze", str(p))
    assert r.returncode == 2
    assert "junk.bin" in one_line(r.stderr)


def test_missing_path_and_empty_dir(tmp_path):
    r = run("analyze", str(tmp_path / "nope.log"))
    assert r.returncode == 2 and "nope.log" in one_line(r.stderr)
    d = tmp_path / "empty"
    d.mkdir()
    r = run("analyze", str(d))
    assert r.returncode == 2 and "empty" in one_line(r.stderr)


def test_usage_errors_exit_2(tmp_path):
    assert run("analyze").returncode == 2
    assert run("analyze", "--fail-on", "sometimes", "x").returncode == 2
    assert run("analyze", "--enable", "no-such-rule", "x").returncode == 2
    assert run("bogus-command").returncode == 2
    assert run("show", "x").returncode == 2


def test_internal_error_exit_3_without_traceback(tmp_path):
    # A bug is simulated by making the report renderer explode.
    bad = tmp_path / "bad.log"
    bad.write_text(CLEAN)
    code = (
        "import rocrtrace.report as r\n"
        "def boom(*a, **k): raise RuntimeError('simulated bug')\n"
        "r.render = boom\n"
        "import sys; sys.argv=['rocrtrace','analyze',%r]\n"
        "from rocrtrace.cli import main; main()\n"
    ) % str(bad)
    crash_dir = tmp_path / "crashes"
    crash_dir.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        env={**os.environ, "ROCRTRACE_CRASH_DIR": str(crash_dir)},
    )
    assert r.returncode == 3
    line = one_line(r.stderr)
    assert "internal error" in line and "traceback written to" in line
    path = Path(line.rsplit("traceback written to ", 1)[1].rstrip(")"))
    # written where the caller said, nowhere else (tests leave nothing in /tmp)
    assert path.parent == crash_dir and list(crash_dir.iterdir()) == [path]
    assert "simulated bug" in path.read_text()


def test_rules_lists_catalogue():
    r = run("rules", "--format", "json")
    assert r.returncode == 0
    ids = {x["id"] for x in json.loads(r.stdout)}
    assert {"svm-over-revoke", "fd-double-close", "trace-unparsed"} <= ids


def test_help_is_fast():
    t = time.monotonic()
    r = run("--help")
    assert r.returncode == 0
    # measured, not asserted as a benchmark: just guard against importing pandas
    assert (
        b"pandas"
        not in subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "rocrtrace", "--help"], cwd=ROOT, capture_output=True
        ).stderr
    )
    assert time.monotonic() - t < 30


def test_progress_bar_estimates_share_done(tmp_path):
    import io
    from types import SimpleNamespace

    from rocrtrace.cli import _Progress

    log = tmp_path / "t.log"
    log.write_text("".join(f"{1000 + i % 9000} close(3) = 0\n" for i in range(200000)))
    gz = tmp_path / "t.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))
    out = io.StringIO()
    bar = _Progress([str(log)], delay=0.0, out=out)
    for _ in range(0x10000):
        bar(SimpleNamespace(file=str(log), line=100000))
    assert 0.45 < bar.fraction() < 0.55
    text = out.getvalue()
    assert text.startswith("\rrocrtrace: [############............]  50% 65,536 events")
    assert "s left" in text
    bar.close()
    # the bar is taken away, not left as a stale "50%" line above the report
    done = out.getvalue()
    drawn = text.rsplit("\r", 1)[-1]
    assert "\n" not in done and done.endswith("\r" + " " * len(drawn) + "\r")
    # compressed input: no estimate, only the count
    out = io.StringIO()
    bar = _Progress([str(gz)], delay=0.0, out=out)
    for _ in range(0x10000):
        bar(SimpleNamespace(file=str(gz), line=5))
    assert bar.fraction() is None
    assert out.getvalue().startswith("\rrocrtrace: 65,536 events, ")
    # nothing is drawn before the delay
    out = io.StringIO()
    bar = _Progress([str(log)], delay=3600.0, out=out)
    for _ in range(0x20000):
        bar(SimpleNamespace(file=str(log), line=7))
    bar.close()
    assert out.getvalue() == ""


def test_whole_file_findings_have_no_line(tmp_path):
    """A finding about the input as a whole (a call that never completed)
    names the file, not line "None"."""
    log = tmp_path / "cut.log"
    log.write_text("100   1700000000.000100 ioctl(3, 0xc0184b0c, 0x7ffd <unfinished ...>\n")
    r = run("analyze", str(log))
    out = r.stdout.decode()
    assert "never completed" in out
    assert "cut.log: note[trace-incomplete]" in out and ":None" not in out
    assert r.returncode == 0


# --- the gate never passes on garbage, bad paths are the user's --------


def test_forced_format_that_does_not_fit_is_exit_2(tmp_path):
    p = tmp_path / "text.txt"
    p.write_text("hello world\nthis is text\n")
    for fmt in ("preload", "strace"):
        for cmd in (["analyze"], ["stats"], ["events"], ["show", "--fd", "3"]):
            r = run(*cmd, "--input-format", fmt, str(p))
            assert r.returncode == 2, (cmd, fmt, r.stdout)
            line = one_line(r.stderr)
            assert "text.txt" in line and "no line parses" in line
    # a log that does fit the forced format still works
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    assert run("analyze", "--input-format", "strace", str(log)).returncode == 1


@pytest.mark.parametrize("opt", ["--write-baseline", "-o", "--format=json:"])
def test_bad_output_paths_are_exit_2_before_any_work(tmp_path, opt):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    target = "/nonexistent/dir/out.json"
    args = [opt + target] if opt.endswith(":") else [opt, target]
    r = run("analyze", str(log), *args)
    assert r.returncode == 2
    assert "/nonexistent/dir" in one_line(r.stderr)
    r = run("analyze", str(log), *(args[:-1] + [str(tmp_path)]) if len(args) == 2 else [opt + str(tmp_path)])
    assert r.returncode == 2 and "directory" in one_line(r.stderr)


def test_unwritable_baseline_is_exit_2(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = run("analyze", str(log), "--write-baseline", str(ro / "b.json"))
        if os.geteuid() == 0:
            # root writes anyway: the baseline is there and complete
            assert r.returncode == 1 and json.loads((ro / "b.json").read_text())["entries"]
        else:
            assert r.returncode == 2 and "b.json" in one_line(r.stderr)
    finally:
        ro.chmod(0o700)
    from rocrtrace.baseline import BaselineError, write_baseline
    from rocrtrace.result import AnalysisResult

    with pytest.raises(BaselineError):
        write_baseline(str(tmp_path / "missing" / "b.json"), AnalysisResult())


def test_diff_gates_on_findings_only_in_b(tmp_path):
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(CLEAN)
    bad.write_text(DOUBLE_CLOSE)
    r = run("diff", str(good), str(bad))
    assert r.returncode == 1 and b"findings only in B: 1 fd-double-close" in r.stdout
    assert run("diff", str(bad), str(good)).returncode == 0  # B fixed it
    assert run("diff", str(bad), str(bad)).returncode == 0  # nothing new
    assert run("diff", "--fail-on", "never", str(good), str(bad)).returncode == 0
    out = tmp_path / "d.json"
    r = run("diff", "--format", "json", "-o", str(out), str(good), str(bad))
    assert r.returncode == 1 and r.stdout == b""
    assert json.loads(out.read_text())["only_in_b"][0]["rule"] == "fd-double-close"


def test_o_on_stats_and_show(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    for cmd in (["stats"], ["show", "--fd", "3"]):
        out = tmp_path / "out.txt"
        r = run(*cmd, str(log), "-o", str(out))
        assert r.returncode == 0 and r.stdout == b"" and out.read_text().strip(), cmd
        assert run(*cmd, str(log), "-o", "/nonexistent/x.txt").returncode == 2


def test_show_renders_rows_not_python_reprs(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    out = run("show", str(log), "--fd", "3").stdout.decode()
    assert "close" in out
    assert not any(tok in out for tok in ("{'", "['", "None", "True", "False")), out


def test_rules_id_explains_with_example_and_fix():
    r = run("rules", "fd-double-close")
    out = r.stdout.decode()
    assert r.returncode == 0
    assert out.startswith("fd-double-close (error):")
    assert "example:" in out and "fix:" in out
    assert run("rules", "no-such-rule").returncode == 2
    r = run("rules", "fd-leak,svm-over-revoke", "--format", "json")
    assert [x["id"] for x in json.loads(r.stdout)] == ["fd-leak", "svm-over-revoke"]
    assert all(x["fix"] for x in json.loads(r.stdout))


def test_comma_separated_rule_lists(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    r = run("analyze", "--format", "json", "--enable", "fd-leak,fd-double-close", str(log))
    assert r.returncode == 1
    r = run("analyze", "--disable", "fd-leak,fd-double-close", str(log))
    assert r.returncode == 0
    r = run("analyze", "--enable", "fd-leak,bogus", str(log))
    assert r.returncode == 2 and "bogus" in one_line(r.stderr)


def test_no_color_and_quiet(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(DOUBLE_CLOSE)
    assert b"\x1b[" in run("analyze", "--color", str(log)).stdout
    assert b"\x1b[" not in run("analyze", str(log), env={"NO_COLOR": "1"}).stdout
    # an explicit --color still wins over NO_COLOR
    assert b"\x1b[" in run("analyze", "--color", str(log), env={"NO_COLOR": "1"}).stdout
    q = run("analyze", "--quiet", str(log))
    assert q.returncode == 1
    lines = q.stdout.decode().splitlines()
    assert len(lines) == 1 and "error[fd-double-close]" in lines[0]
    assert run("analyze", "--quiet", "--verbose", str(log)).returncode == 2


def test_show_addr_renders_tables_not_python_reprs():
    r = run("show", "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log", "--addr", "0x7e0000003000")
    assert r.returncode == 0
    out = r.stdout.decode()
    assert "pieces:" in out and "claims:" in out and "range " in out
    # the model's state lines (not the trace's own call text) hold no reprs
    state = [ln for ln in out.splitlines() if ln.startswith("       ")]
    assert state and not any(tok in ln for ln in state for tok in ("{'", "['", "': "))


INVALID_UTF8 = (
    b'100 1700000000.000100 openat(AT_FDCWD, "/tmp/\xff\xfeA", O_RDONLY) = 3</tmp/\xff\xfeA>'
    b" <0.000010>\n > /tmp/bin/pr\xffog(main+0x10) [0x1130]\n"
    b"100 1700000000.000200 close(3</tmp/\xff\xfeA>) = 0 <0.000005>\n"
    b" > /tmp/bin/pr\xffog(main+0x20) [0x1140]\n"
    b"100 1700000000.000300 close(3) = -1 EBADF (Bad file descriptor) <0.000004>\n"
    b" > /tmp/bin/pr\xffog(main+0x30) [0x1150]\n"
    b"100 1700000000.000400 exit_group(0) = ?\n100 +++ exited with 0 +++\n"
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_invalid_utf8_in_paths_and_frames_reaches_every_format_escaped(tmp_path, fmt):
    log = tmp_path / "u.log"
    log.write_bytes(INVALID_UTF8)
    out = tmp_path / f"out.{fmt}"
    crashes = tmp_path / "crashes"
    crashes.mkdir()
    r = run(
        "analyze",
        str(log),
        "--format",
        f"{fmt}:{out}",
        "--write-baseline",
        str(tmp_path / "b.json"),
        env={"ROCRTRACE_CRASH_DIR": str(crashes)},
    )
    assert r.returncode == 1, r.stderr
    assert not list(crashes.iterdir())
    data = out.read_bytes()
    if fmt not in BINARY_FORMATS:
        text = data.decode("utf-8")  # valid UTF-8 throughout
        assert "\\xff" in text or "\\\\xff" in text or "\\udcff" in text, text[:300]
    # and the baseline written from it suppresses the same finding again
    r = run("analyze", str(log), "--baseline", str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stdout


def test_jobs_over_several_traces_gives_the_sequential_report(tmp_path):
    """--jobs 2 over several traces (each in its own worker) reports exactly
    what one sequential run does, coverage included: the SVM model's limits
    and the SVM caveats only where an input has SVM calls."""
    import json

    root = Path(__file__).resolve().parent.parent
    logs = [
        str(root / "fixtures" / "scenarios" / "c1-enclosing-range" / "v1-buggy-explicit.log"),
        str(root / "fixtures" / "strace" / "colour.log"),
        str(root / "fixtures" / "scenarios" / "xdna-gem-close" / "2515-buggy-explicit.log"),
    ]
    out = []
    for j in ("1", "2"):
        r = subprocess.run(
            [sys.executable, "-m", "rocrtrace", "analyze", "-j", j, "--format", "json", "--fail-on", "never", *logs],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        out.append(json.loads(r.stdout))
    assert out[0]["coverage"] == out[1]["coverage"]
    assert any(x.startswith("SVM:") for x in out[0]["coverage"]["cannot_show"])
    assert out[0]["findings"] == out[1]["findings"]


def test_allocator_options_stay_out_of_the_environment():
    """The core's allocator options are set only while it loads: a traced
    program (capture) never inherits them, and a user's own setting wins."""
    import subprocess as sp

    code = (
        "import os; os.environ['MIMALLOC_PURGE_DELAY'] = '7'; "
        "from rocrtrace import engine; engine.core(); "
        "print(sorted((k, v) for k, v in os.environ.items() if k.startswith('MIMALLOC')))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC")}
    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    assert out.strip() == "[('MIMALLOC_PURGE_DELAY', '7')]"
