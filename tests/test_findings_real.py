"""End to end on real strace: programs that perform known fd operations, run
under real strace with each option set, analyzed by the real parser and
models.  Each must yield exactly its expected findings and no others, and
every log must parse with zero unparsed lines."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from rocrtrace.engine import analyze

from realtrace import have_strace, run_strace

pytestmark = pytest.mark.skipif(not have_strace(), reason="needs strace and cc")

OPTION_SETS = {
    "f-o": ["-f", "-o"],
    "f-stderr": ["-f"],
    "ff-o": ["-ff", "-ttt", "-o"],
    "ff-notime": ["-ff", "-o"],
    "tt-T-yy": ["-f", "-tt", "-T", "-yy", "-o"],
    "ttt": ["-f", "-ttt", "-o"],
    "k": ["-f", "-k", "-o"],
    "Y": ["-f", "-Y", "-o"],
    "X-raw": ["-f", "-X", "raw", "-o"],
}

# mode -> the findings it must produce (rule -> count), and nothing else
EXPECTED = {
    "double_close": {"fd-double-close": 1},
    "use_after_close": {"fd-use-after-close": 2},  # read() and ioctl() on the closed fd
    "threads": {"fd-use-after-close": 1},  # another thread closed it first
    "emfile": {"fd-exhaustion": 1},
    "dup2": {},
    "close_range": {},
    "fork": {},
    "churn": {},
    "pass": {},
    "pidfd": {},
    "exec": {},
    "ioctls": {},
}


# -ff files without timestamps cannot be ordered across threads: the other
# thread's close cannot be placed before the ioctl, so nothing may be claimed.
OVERRIDES = {("threads", "ff-notime"): {}}


def _analyze(paths):
    arg = paths[0] if len(paths) == 1 else os.path.join(os.path.dirname(paths[0]), "trace.log.*")
    res = analyze([arg])
    return res


@pytest.mark.parametrize("opts", list(OPTION_SETS))
@pytest.mark.parametrize("mode", list(EXPECTED))
def test_exact_findings(mode, opts, tmp_path):
    paths = run_strace(OPTION_SETS[opts], "fdops", [mode], tmp_path)
    res = _analyze(paths)
    assert sum(i.unparsed for i in res.inputs) == 0, [i.unparsed_samples for i in res.inputs]
    got = Counter(f.rule for f in res.findings if f.rule not in ("trace-incomplete",))
    assert dict(got) == OVERRIDES.get((mode, opts), EXPECTED[mode]), [f.message for f in res.findings]
    for f in res.findings:
        assert f.line and f.file, f
        assert f.evidence, f.rule


def test_double_close_evidence_names_both_closes(tmp_path):
    paths = run_strace(["-f", "-ttt", "-T", "-yy", "-k", "-o"], "fdops", ["double_close"], tmp_path)
    (f,) = [f for f in _analyze(paths).findings if f.rule == "fd-double-close"]
    roles = " ".join(e.role for e in f.evidence)
    assert "close" in roles
    closes = [e for e in f.evidence if e.event.name == "close"]
    assert len(closes) == 2 and closes[0].event.line < closes[1].event.line
    # -k stacks reach the finding and name the program's main()
    assert any(fr.symbol == "main" for fr in f.stack)


def test_emfile_names_the_kinds(tmp_path):
    paths = run_strace(["-f", "-yy", "-o"], "fdops", ["emfile"], tmp_path)
    (f,) = [f for f in _analyze(paths).findings if f.rule == "fd-exhaustion"]
    assert f.subject == {"kind": "process"}
    assert "other" in f.message or "/dev/null" in f.message
