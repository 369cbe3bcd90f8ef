"""Traces that grow while what the models must hold does not (issue 37),
at sizes CI affords: what each must give.  How their time and
memory grow (two sizes, the ratio) is benchmarks/bench_growth.py's, not a
timed test's."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import growth_traces as g
from rocrtrace.engine import analyze


def cli(*args, limit_fds: int | None = None) -> subprocess.CompletedProcess:
    def lower():
        if limit_fds is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_fds, limit_fds))

    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--no-progress", *args],
        capture_output=True,
        text=True,
        preexec_fn=lower,
        timeout=600,
    )


def test_a_repeated_finding_is_one_finding_with_its_count(tmp_path):
    # 20,000 close(-1): one note, "20000 times", first and last as evidence
    # (one finding per call made 903 MB of 200k)
    p = tmp_path / "t.log"
    g.close_bad(p, 20_000)
    r = cli("--format", "json", str(p))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) < 20_000
    (f,) = json.loads(r.stdout)["findings"]
    assert (f["rule"], f["severity"], f["line"]) == ("fd-bad-fd", "note", 2)
    assert f["details"]["occurrences"] == 20_000
    assert f["message"].endswith("; 20000 times in all (the first and the last are shown)")
    assert [(e["role"], e["line"]) for e in f["evidence"]] == [("this call", 2), ("the last of 20000", 20_001)]
    # the count is no part of the fingerprint: once or 20,000 times, the
    # baseline entry that suppresses it is the same
    one = tmp_path / "one.log"
    g.close_bad(one, 1)
    (f1,) = json.loads(cli("--format", "json", str(one)).stdout)["findings"]
    assert f1["fingerprint"] == f["fingerprint"] and "details" not in f1
    # the text report stays short
    r = cli(str(p))
    assert r.stdout.count("close(-1) = -1 EBADF") == 2, r.stdout


def test_the_same_sweep_in_every_child_is_one_note(tmp_path):
    # 2,000 fork children each closing 3..40 before exiting: one sweep
    # note, "2000 times" (a note per child grew with the trace)
    p = tmp_path / "t.log"
    g.sweeps(p, 2_000)
    res = analyze([str(p)])
    (f,) = res.findings
    assert (f.rule, f.severity, f.details["occurrences"]) == ("fd-bad-fd", "note", 2_000)
    assert f.details["sweep"] == {"closes": 38, "ebadf": 38, "first": 3, "last": 40}
    assert [(e.role, e.event.pid) for e in f.evidence] == [
        ("first close of the sweep", 1001),
        ("last close of the sweep", 1001),
        ("the last of 2000", 3000),
    ]


def test_many_threads_and_children_come_and_go(tmp_path):
    # every thread / child runs, then exits in the order it started (the
    # worst order for a list that shifts on removal)
    for name, n in (("tids", 5_000), ("children", 5_000)):
        p = tmp_path / f"{name}.log"
        g.WRITERS[name](p, n)
        res = analyze([str(p)])
        assert res.findings == [], [f.message for f in res.findings]
        (info,) = res.inputs
        assert (info.events, info.unparsed) == (5 * n + 3, 0)


def test_a_merge_of_many_files_holds_few_open(tmp_path):
    # 3,000 `strace -ff` files under an fd limit of 64: the merge holds a
    # quarter of the limit open and spills the rest in rounds (every spill
    # file used to stay open: 30k files under `ulimit -n 256` failed)
    d = g.ff_files(tmp_path / "ff", 3_000)
    r = cli("--format", "json", str(d), limit_fds=64)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["inputs"]) == 3_001
    assert doc["findings"] == []
    assert sum(i["events"] for i in doc["inputs"]) == 5 * 3_000 + 3
