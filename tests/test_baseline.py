"""Baselines: written from a result, read back, applied; expiry honoured;
bad files refused with one clear line."""

from __future__ import annotations

import json
import pathlib
import sys
from datetime import date

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import report_samples as S  # noqa: E402

from rocrtrace.baseline import (
    BASELINE_SCHEMA,
    BaselineError,
    apply_baseline,  # noqa: E402
    load_baseline,
    occurrences,
    write_baseline,
)


def test_round_trip_suppresses_everything_and_the_gate_passes(tmp_path):
    path = tmp_path / "baseline.json"
    first = S.sample_result()
    assert first.failed()
    n = write_baseline(str(path), first)
    doc = json.loads(path.read_text())
    assert doc["schema"] == BASELINE_SCHEMA and len(doc["entries"]) == n == 5
    for e in doc["entries"]:
        assert set(e) >= {"fingerprint", "rule", "message", "justification", "expires"}
        assert e["justification"] == "" and e["expires"] is None

    again = S.sample_result()  # a new run of the same program
    applied = apply_baseline(again, load_baseline(str(path)))
    assert again.findings == [] and len(again.suppressed) == 5
    assert not again.failed() and again.summary()["suppressed"] == 5
    assert list(applied) == [] and applied.unused == []


def test_identical_leaks_at_one_site_stay_distinct(tmp_path):
    r = S.sample_result()
    leaks = [f for f in r.findings if f.rule == "fd-leak"]
    assert leaks[0].fingerprint == leaks[1].fingerprint  # same site, different fds
    occ = occurrences(r.findings)
    assert sorted(occ[id(f)] for f in leaks) == [1, 2]

    # A baseline that knew one such leak does not hide a second one.
    one = S.sample_result()
    one.findings = [f for f in one.findings if not (f.rule == "fd-leak" and f.line == 31)]
    path = tmp_path / "b.json"
    write_baseline(str(path), one)
    later = S.sample_result()
    apply_baseline(later, load_baseline(str(path)))
    assert [f.rule for f in later.findings] == ["fd-leak"]
    assert later.findings[0].line == 31


def test_expired_entries_no_longer_suppress(tmp_path):
    path = tmp_path / "b.json"
    write_baseline(str(path), S.sample_result())
    doc = json.loads(path.read_text())
    for e in doc["entries"]:
        if e["rule"] == "fd-double-close":
            e["expires"] = "2025-01-31"
            e["justification"] = "fix lands in 6.4"
        else:
            e["expires"] = "2025-03-01"
    path.write_text(json.dumps(doc))
    base = load_baseline(str(path))

    r = S.sample_result()
    applied = apply_baseline(r, base, today=date(2025, 2, 1))
    assert [f.rule for f in r.findings] == ["fd-double-close"]
    assert [e.rule for e in applied] == ["fd-double-close"]
    assert any("expired on 2025-01-31" in m for m in applied.messages())
    assert r.failed()
    # the expiry day itself still suppresses
    r = S.sample_result()
    apply_baseline(r, base, today=date(2025, 1, 31))
    assert r.findings == []


def test_rewriting_keeps_justifications(tmp_path):
    path = tmp_path / "b.json"
    write_baseline(str(path), S.sample_result())
    doc = json.loads(path.read_text())
    doc["entries"][0]["justification"] = "upstream bug ROCm/ROCR-Runtime#123"
    doc["entries"][0]["expires"] = "2099-01-01"
    path.write_text(json.dumps(doc))
    old = load_baseline(str(path))
    r = S.sample_result()
    apply_baseline(r, old)
    write_baseline(str(path), r, previous=old)
    new = json.loads(path.read_text())["entries"]
    kept = [
        e
        for e in new
        if e["fingerprint"] == doc["entries"][0]["fingerprint"] and e["occurrence"] == doc["entries"][0]["occurrence"]
    ]
    assert kept[0]["justification"] == "upstream bug ROCm/ROCR-Runtime#123"
    assert kept[0]["expires"] == "2099-01-01"
    assert len(new) == 5


def test_hand_written_entry_without_occurrence_matches_all(tmp_path):
    r = S.sample_result()
    fp = [f for f in r.findings if f.rule == "fd-leak"][0].fingerprint
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": BASELINE_SCHEMA, "entries": [{"fingerprint": fp, "justification": "x"}]}))
    apply_baseline(r, load_baseline(str(path)))
    assert sorted(f.rule for f in r.suppressed) == ["fd-leak", "fd-leak"]


@pytest.mark.parametrize(
    "content, words",
    [
        ("{not json", "not JSON"),
        ("[]", "expected a JSON object"),
        ('{"schema": "other/v9", "entries": []}', "schema"),
        ('{"schema": "rocrtrace-baseline/v1", "entries": {}}', "'entries' must be a list"),
        ('{"schema": "rocrtrace-baseline/v1", "entries": [{"fingerprint": 5}]}', "entry 1"),
        (
            '{"schema": "rocrtrace-baseline/v1", "entries": [{"fingerprint": "abcdef0123", "expires": "next week"}]}',
            "'expires' must be a date",
        ),
        (
            '{"schema": "rocrtrace-baseline/v1", "entries": [{"fingerprint": "abcdef0123", "occurrence": 0}]}',
            "'occurrence'",
        ),
    ],
)
def test_bad_files_give_one_clear_line(tmp_path, content, words):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError) as exc:
        load_baseline(str(path))
    msg = str(exc.value)
    assert words in msg and str(path) in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(BaselineError, match="cannot read"):
        load_baseline(str(tmp_path / "nope.json"))


# --- a baseline hides known findings, never a new one (real strace runs) -------

TWO_SITES_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void site_a(void)
{
    int fd = open("/etc/hostname", O_RDONLY);
    close(fd);
    close(fd);                       /* SITE_A */
}

static void site_b(void)
{
    int fd = open("/etc/hostname", O_RDONLY);
    close(fd);
    close(fd);                       /* SITE_B */
}

int main(int argc, char **argv)
{
    site_a();
    if (argc > 1 && atoi(argv[1]) > 1)
        site_b();
    return 0;
}
"""


def _strace_runs(tmp_path, stacks: bool):
    import shutil
    import subprocess

    if not (shutil.which("strace") and shutil.which("cc")):
        pytest.skip("needs strace and cc")
    src = tmp_path / "two.c"
    src.write_text(TWO_SITES_C)
    prog = tmp_path / "two"
    subprocess.run(["cc", "-g", "-O0", "-o", str(prog), str(src)], check=True)
    logs = []
    for n in ("1", "2"):
        log = tmp_path / f"run{n}.log"
        opts = ["-f", "-ttt", "-T", "-yy", "-e", "trace=openat,close"] + (["-k"] if stacks else [])
        subprocess.run(["strace", *opts, "-o", str(log), str(prog), n], check=True)
        logs.append(str(log))
    return src, logs


@pytest.mark.parametrize("stacks", [False, True], ids=["plain", "with-k"])
def test_a_baseline_of_one_double_close_does_not_hide_a_second_site(tmp_path, stacks):
    from rocrtrace.engine import analyze

    src, (one, two) = _strace_runs(tmp_path, stacks)
    known = analyze([one])
    assert [f.rule for f in known.findings] == ["fd-double-close"]
    bl = tmp_path / "b.json"
    write_baseline(str(bl), known)
    later = analyze([two])
    fps = [f.fingerprint for f in later.findings if f.rule == "fd-double-close"]
    assert len(fps) == len(set(fps)) == 2  # two sites, two fingerprints
    apply_baseline(later, load_baseline(str(bl)))
    assert [f.rule for f in later.findings] == ["fd-double-close"]
    assert len(later.suppressed) == 1
    if stacks:
        line_b = next(n for n, t in enumerate(TWO_SITES_C.splitlines(), 1) if "SITE_B" in t)
        frames = [fr for fr in later.findings[0].stack if fr.source and fr.source.endswith("two.c")]
        assert frames[0].source_line == line_b
