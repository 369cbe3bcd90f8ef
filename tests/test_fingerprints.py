"""Fingerprints over the whole fixture corpus: no two different
findings share one, none holds a run-specific value, and a baseline written
for one program suppresses nothing in another."""

from __future__ import annotations

import glob
import os
import re

import pytest

from rocrtrace.baseline import apply_baseline, load_baseline, write_baseline
from rocrtrace.findings import Evidence, Finding, assign_fingerprints, normalize_path
from rocrtrace.engine import analyze
from vocab import Close, Frame

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.log"), recursive=True))


def _run(paths):
    return analyze(list(paths))


def test_corpus_is_there():
    assert len(CORPUS) > 40


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_two_findings_of_a_trace_share_a_fingerprint(path):
    r = _run([path])
    fps = [f.fingerprint for f in r.findings]
    assert len(fps) == len(set(fps)), [(f.rule, f.line) for f in r.findings]
    for f in r.findings:
        assert re.fullmatch(r"[0-9a-f]{32}", f.fingerprint)


def test_whole_corpus_in_one_run_has_unique_fingerprints():
    r = _run(CORPUS)
    assert len(r.findings) > 30
    fps = [f.fingerprint for f in r.findings]
    assert len(fps) == len(set(fps))


def test_fingerprints_are_stable_across_runs():
    a = sorted(f.fingerprint for f in _run(CORPUS).findings)
    b = sorted(f.fingerprint for f in _run(CORPUS).findings)
    assert a == b


def _renumbered(text: str, delta: int) -> str:
    """The same run with other pids, fd numbers stay (they are part of the
    program's behaviour) but times shift: nothing in a fingerprint moves."""

    def pid(m):
        return str(int(m.group(0)) + delta)

    text = re.sub(r"(?m)^\d{3,7}(?= )", pid, text)
    text = re.sub(r"pid=\d+", lambda m: f"pid={int(m.group(0)[4:]) + delta}", text)
    return re.sub(r"\b1764\d{6}\.", "1999999999.", text)


@pytest.mark.parametrize(
    "name", ["c1-enclosing-range/v1-buggy-explicit.log", "vmm-export-double-close/v2-6471-buggy-explicit.log"]
)
def test_other_pids_and_times_keep_fingerprints(name, tmp_path):
    src = os.path.join(ROOT, "fixtures", "scenarios", name)
    if not os.path.exists(src):
        pytest.skip(f"no fixture {name}")
    text = open(src, encoding="utf-8", errors="surrogateescape").read()
    moved = tmp_path / os.path.basename(name)
    moved.write_text(_renumbered(text, 1111), encoding="utf-8", errors="surrogateescape")
    a = sorted(f.fingerprint for f in _run([src]).findings)
    b = sorted(f.fingerprint for f in _run([str(moved)]).findings)
    assert a and a == b


def _with_findings():
    out = []
    for p in CORPUS:
        r = _run([p])
        if r.findings:
            out.append((p, r))
    return out


def test_a_baseline_for_one_program_suppresses_nothing_in_another(tmp_path):
    """Every trace with findings that names its program, copied with another
    executable name: the original's baseline suppresses none of the copy's
    findings, and still all of its own."""
    checked = 0
    for path, r in _with_findings():
        text = open(path, encoding="utf-8", errors="surrogateescape").read()
        if not re.search(r"exe=\S|execve\(", text):
            continue  # a trace that never names its program
        bl = tmp_path / "b.json"
        write_baseline(str(bl), r)
        same = _run([path])
        apply_baseline(same, load_baseline(str(bl)))
        assert same.findings == [], path
        other_text = re.sub(r"exe=\S+", "exe=/opt/other/bin/otherprog", text)
        other_text = re.sub(r'execve\("[^"]*"', 'execve("/opt/other/bin/otherprog"', other_text)
        other = tmp_path / ("another-" + os.path.basename(path))
        other.write_text(other_text, encoding="utf-8", errors="surrogateescape")
        got = _run([str(other)])
        n = len(got.findings)
        applied = apply_baseline(got, load_baseline(str(bl)))
        assert len(got.findings) == n and not applied.suppressed, path
        checked += 1
    assert checked > 20


def _double_close(line, frames=()):
    prev = Close(file="t.log", line=1, pid=1, tid=1, fd=3, path="/etc/hostname", ret=0)
    this = Close(file="t.log", line=line, pid=1, tid=1, fd=3, ret=-1, err="EBADF", stack=tuple(frames))
    return Finding(
        rule="fd-double-close",
        message="m",
        event=this,
        subject={"kind": "fd", "fd": 3, "fd_kind": "other"},
        evidence=[Evidence("previous close", prev), Evidence("this close", this)],
        key=("other", "open"),
    )


def test_call_sites_tell_findings_apart_and_occurrences_number_the_rest():
    site = lambda n: Frame(
        "/bin/app",
        symbol="main",
        addr=0x100 + n,  # noqa: E731
        function="main",
        source="/src/app.c",
        source_line=n,
    )
    a, b = _double_close(5, [site(8)]), _double_close(9, [site(12)])
    c, d = _double_close(5), _double_close(9)
    assign_fingerprints([a, b])
    assign_fingerprints([c, d])
    assert a.base_fingerprint != b.base_fingerprint  # two call sites
    assert c.base_fingerprint == d.base_fingerprint  # no stacks: same ingredients
    assert c.fingerprint != d.fingerprint  # ... but numbered apart
    # the first of colliding findings keeps the plain digest
    assert c.fingerprint == c.base_fingerprint


def test_invalid_utf8_and_surrogates_do_not_break_fingerprints():
    bad = b"/tmp/\xff\xfe-name".decode("utf-8", "surrogateescape")
    f = _double_close(5, [Frame("/bin/\udcff", symbol="\ud800x", addr=1, source=bad, source_line=3)])
    f.evidence[0].event.path = bad
    assign_fingerprints([f])
    assert re.fullmatch(r"[0-9a-f]{32}", f.fingerprint)


def test_normalized_paths_drop_run_numbers():
    assert normalize_path("socket:[12345]") == normalize_path("socket:[999]")
    assert normalize_path("/proc/4242/fd/7") == "/proc/N/fd/N"


def test_parallel_run_gives_the_same_fingerprints():
    """--jobs 2 over several traces numbers collisions over the merged
    result exactly as a sequential run does."""
    import json
    import subprocess
    import sys

    logs = sorted(glob.glob(os.path.join(ROOT, "fixtures", "scenarios", "xdna-gem-close", "*.log")))
    out = []
    for j in ("1", "2"):
        r = subprocess.run(
            [sys.executable, "-m", "rocrtrace", "analyze", "-j", j, "--format", "json", "--fail-on", "never", *logs],
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        out.append(sorted(f["fingerprint"] for f in json.loads(r.stdout)["findings"]))
    assert out[0] == out[1] and len(set(out[0])) == len(out[0]) > 4
