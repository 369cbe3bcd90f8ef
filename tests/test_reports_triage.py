"""Issue 35, the reports' items: evidence never cut (1), the markdown size
cap (6), a symbolized headline (9), JUnit counts and SARIF order (10), the
plain install's formats (3) and the small ones (13)."""

from __future__ import annotations

import gzip
import re
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
C1 = ROOT / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log"
LINE20 = C1.read_text().splitlines()[19]
# what proves the finding: the last attribute and the result
TAIL = "value=KFD_IOCTL_SVM_FLAG_EXT_COHERENT}]}) = 0 <0.000010>"


def run(*args, env=None, cwd=ROOT):
    e = dict(os.environ)
    e.pop("GITHUB_STEP_SUMMARY", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *map(str, args)], cwd=cwd, capture_output=True, env=e, timeout=120
    )


def out(*args, **kw) -> str:
    r = run(*args, **kw)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.decode()


# --- 1: evidence is never cut ----------------------------------------------------


def _calls(doc_findings):
    return [e["call"] for f in doc_findings for e in f["evidence"]]


def test_json_jsonl_carry_the_whole_line():
    assert len(LINE20) > 300
    doc = json.loads(out("analyze", C1, "--format", "json"))
    assert LINE20 in _calls(doc["findings"])
    recs = [json.loads(ln) for ln in out("analyze", C1, "--format", "jsonl").splitlines()]
    assert LINE20 in _calls(recs)


@pytest.mark.parametrize("fmt", ["sarif", "junit", "csv", "markdown", "github"])
def test_every_format_carries_the_proving_tail(fmt):
    text = out("analyze", C1, "--format", fmt)
    if fmt == "junit":
        text = "\n".join(f.text or "" for f in ET.fromstring(text).iter("failure"))
    assert TAIL in text, fmt


def test_verbose_text_prints_the_call_whole_and_concise_keeps_its_end():
    verbose = out("analyze", "-v", C1)
    body = LINE20.split("1764435600.000270 ", 1)[1]
    assert body in verbose
    concise = out("analyze", C1)
    line = next(ln for ln in concise.splitlines() if "AMDKFD_IOC_SVM" in ln and "nattr=3" in ln)
    assert line.rstrip().endswith("value=EXT_COHERENT}]}) = 0 <0.000010>"), line
    assert "[…]" in line


def test_compressed_and_split_calls_are_read_back_whole(tmp_path):
    gz = tmp_path / "c1.log.gz"
    gz.write_bytes(gzip.compress(C1.read_bytes()))
    assert LINE20 in _calls(json.loads(out("analyze", gz, "--format", "json"))["findings"])
    lines = C1.read_text().splitlines()
    i = LINE20.index("AMDKFD_IOC_SVM, ") + len("AMDKFD_IOC_SVM, ")
    first = LINE20[:i].rstrip(", ") + " <unfinished ...>"
    second = "4242  1764435600.000280 <... ioctl resumed>, " + LINE20[i:]
    split = tmp_path / "split.log"
    split.write_text("\n".join(lines[:19] + [first, second] + lines[20:]) + "\n")
    calls = _calls(json.loads(out("analyze", split, "--format", "json"))["findings"])
    assert first + " … " + second in calls


def test_elide_drops_the_middle_never_the_end():
    from rocrtrace.report.common import elide

    text = "call(" + ", ".join(f"arg{i}=value{i}" for i in range(60)) + ") = 0 <0.1>"
    short = elide(text, 120)
    assert len(short) <= 125 and short.startswith("call(arg0=value0")
    assert short.endswith("arg59=value59) = 0 <0.1>") and "[…]" in short
    assert elide(text, None) == text


# --- 9: the headline is symbolized like the evidence --------------------------------

DCLOSE_C = r"""
#include <fcntl.h>
#include <unistd.h>

static void twice(int fd)
{
    close(fd);                       /* FIRST */
    close(fd);                       /* SECOND */
}

int main(void)
{
    int fd = open("/etc/hostname", O_RDONLY);
    twice(fd);
    return 0;
}
"""


@pytest.fixture(scope="module")
def dclose_log(tmp_path_factory):
    import shutil

    if not (shutil.which("cc") and shutil.which("strace")):
        pytest.skip("needs cc and strace")
    d = tmp_path_factory.mktemp("dclose")
    (d / "dclose.c").write_text(DCLOSE_C)
    prog = d / "dclose"
    subprocess.run(["cc", "-g", "-O0", "-no-pie", "-o", str(prog), str(d / "dclose.c")], check=True)
    log = d / "st.log"
    subprocess.run(
        ["strace", "-f", "-k", "-yy", "-ttt", "-T", "-e", "trace=openat,close", "-o", str(log), str(prog)],
        check=True,
        capture_output=True,
    )
    return d, log


def test_messages_name_symbolized_call_sites(dclose_log):
    d, log = dclose_log
    first = next(n for n, t in enumerate(DCLOSE_C.splitlines(), 1) if "FIRST" in t)
    site = f"dclose.c:{first} twice"
    text = out("analyze", log, cwd=d)
    headline = text.splitlines()[0]
    assert site in headline and "[0x" not in headline, headline
    sarif = json.loads(out("analyze", log, "--format", "sarif", cwd=d))
    (res,) = sarif["runs"][0]["results"]
    assert site in res["message"]["text"] and "[0x" not in res["message"]["text"]
    gh = out("analyze", log, "--format", "github", cwd=d).splitlines()[0]
    assert site in gh and "[0x" not in gh.split("%0A")[0]
    md = out("analyze", log, "--format", "markdown", cwd=d)
    table_row = next(ln for ln in md.splitlines() if ln.startswith("| error"))
    assert "dclose.c:" in table_row and "\\[0x" not in table_row and "[0x" not in table_row


# --- 10: JUnit counts agree; SARIF executionOrder is chronological ------------------


def test_junit_failures_count_the_failure_elements(tmp_path):
    log = tmp_path / "twice.log"
    log.write_text(
        '100 1700000000.000100 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3</dev/null>\n'
        "100 1700000000.000200 close(3</dev/null>) = 0\n"
        "100 1700000000.000300 close(3) = -1 EBADF (Bad file descriptor)\n"
        '100 1700000000.000400 openat(AT_FDCWD, "/dev/zero", O_RDWR) = 4</dev/zero>\n'
        "100 1700000000.000500 close(4</dev/zero>) = 0\n"
        "100 1700000000.000600 close(4) = -1 EBADF (Bad file descriptor)\n"
        "100 1700000000.000700 exit_group(0) = ?\n100 +++ exited with 0 +++\n"
    )
    root = ET.fromstring(out("analyze", log, "--format", "junit"))
    fails = list(root.iter("failure"))
    assert len(fails) == 2
    for suite in [root, *root.iter("testsuite")]:
        assert int(suite.get("failures")) == len(list(suite.iter("failure")))
        assert int(suite.get("tests")) == len(list(suite.iter("testcase")))
    assert all(len(c.findall("failure")) <= 1 for c in root.iter("testcase"))


def test_sarif_execution_order_is_chronological():
    doc = json.loads(out("analyze", C1, "--format", "sarif"))
    checked = 0
    for res in doc["runs"][0]["results"]:
        for flow in res.get("codeFlows", []):
            locs = [tl for tf in flow["threadFlows"] for tl in tf["locations"]]
            times = {tl["executionOrder"]: tl["location"]["physicalLocation"]["region"]["startLine"] for tl in locs}
            order = [times[k] for k in sorted(times)]
            lines = C1.read_text().splitlines()
            stamps = [float(lines[n - 1].split()[1]) for n in order]
            assert stamps == sorted(stamps), order
            checked += 1
    assert checked


# --- 6: markdown fits a GitHub comment ------------------------------------------------


def _many_double_closes(path, n):
    with open(path, "w") as fh:
        for i in range(n):
            t = 1700000000 + i * 0.001
            fh.write(
                f'100 {t:.6f} openat(AT_FDCWD, "/tmp/f{i}", O_RDWR) = 3</tmp/f{i}>\n'
                f"100 {t + 0.0001:.6f} close(3</tmp/f{i}>) = 0\n"
                f"100 {t + 0.0002:.6f} close(3) = -1 EBADF (Bad file descriptor)\n"
            )
        fh.write("100 1800000000.000000 exit_group(0) = ?\n100 +++ exited with 0 +++\n")


def test_markdown_is_capped_under_githubs_comment_limit(tmp_path):
    log = tmp_path / "many.log"
    _many_double_closes(log, 400)
    text = out("analyze", log, "--format", "markdown")
    assert len(text) < 65536
    doc = json.loads(out("analyze", log, "--format", "json"))
    n = len(doc["findings"])
    assert n >= 400
    shown = text.count("<details>")
    assert 0 < shown < n
    assert f"**{n - shown} more findings not shown**" in text
    assert text.count("| error |") == shown


def test_markdown_small_report_is_whole_and_plurals_agree(tmp_path):
    text = out("analyze", C1, "--format", "markdown")
    assert "not shown" not in text and text.count("<details>") == 2
    assert "1 input," in text and "1 inputs" not in text
    one = tmp_path / "one.log"
    _many_double_closes(one, 1)
    assert "1 finding (" in out("analyze", one, "--format", "markdown")
    assert "rocrtrace: 1 finding (" in out("analyze", one, "--format", "github")


# --- 3 (part): every format after the plain install -----------------------------------


def test_every_format_library_is_a_base_dependency():
    import tomllib

    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {re.split(r"[<>=!~ \[]", d, 1)[0].lower() for d in proj["dependencies"]}
    assert {"pyarrow", "perfetto"} <= base
    # never imported anywhere: not a dependency
    assert "sortedcontainers" not in base
    for py in (ROOT / "rocrtrace").rglob("*.py"):
        assert "sortedcontainers" not in py.read_text(), py


def test_a_missing_format_library_fails_before_any_output(tmp_path):
    js = tmp_path / "r.json"
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None\n"
        "from rocrtrace.cli import main\n"
        f"main(['analyze', {str(C1)!r}, '--format', 'json:{js}', "
        f"'--format', 'parquet:{tmp_path / 'r.parquet'}'])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60)
    assert r.returncode == 2
    assert not js.exists()  # used to be written before the parquet failed
    assert b"pip install ." in r.stderr and b"rocrtrace[" not in r.stderr


# --- 13: small ones ------------------------------------------------------------------


def test_term_dumb_gets_no_colour(monkeypatch):
    import io

    from rocrtrace.cli import _use_color

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert _use_color(None, None) is True
    monkeypatch.setenv("TERM", "dumb")
    assert _use_color(None, None) is False
    assert _use_color(True, None) is True  # --color still wins


def test_missing_debug_dir_is_a_usage_error(tmp_path):
    r = run("analyze", C1, "--debug-dir", tmp_path / "nonexistent")
    assert r.returncode == 2
    assert b"--debug-dir" in r.stderr and b"not a directory" in r.stderr


def test_text_findings_in_trace_order():
    log = ROOT / "fixtures/scenarios/vmm-export-double-close/v2-6471-buggy-explicit.log"
    heads = [ln for ln in out("analyze", "-q", log).splitlines() if "error[" in ln]
    lines = [int(h.split(":")[1]) for h in heads]
    assert lines == sorted(lines), heads


def test_short_file_names_in_messages_with_many_files():
    import types

    from rocrtrace.report.text import _Names

    files = [f"/tmp/run/trace.{i}" for i in range(500)] + ["/a/x.log", "/b/x.log"]
    names = _Names(
        types.SimpleNamespace(inputs=[types.SimpleNamespace(file=f) for f in files], findings=[], suppressed=[])
    )
    msg = "closed at /tmp/run/trace.7:12 (x) and at /tmp/run/trace.70:4, then /a/x.log:3"
    # unambiguous names shortened, an ambiguous base name kept whole
    assert names.in_text(msg) == "closed at trace.7:12 (x) and at trace.70:4, then /a/x.log:3"
