"""The core's fd, handle and dma-buf models through their two doors: a trace
file analyzed whole (`_engine.analyze`, `_engine.history`, what the CLI
calls) and the same trace's events, as Python objects, fed one at a time to
`_engine.FdModels` (what the model tests in test_model_fds.py and
test_model_handles.py call with events they build).  The model tests are
only worth what that second door is: here, on every fixture log and on
generated strace and preload traces, both must give the same findings
(Finding.to_dict() plus key, details, cause, severity, in order) and the
same `show --fd` history rows.

(The real programs of test_fd_idioms.py and test_rocm_real.py are judged
there, on their expected findings; the lead's committed expected outputs
cover the fixtures' reports.)"""

from __future__ import annotations

import glob
import os
import sys

import pytest

from rocrtrace import _engine

from coremodels import Fds
from vocab import kind

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
COUNTS = {"traces": 0, "events": 0, "findings": 0, "history rows": 0}


def fview(f) -> dict:
    d = f.to_dict()
    d["key"] = tuple(map(str, f.key))
    d["details"] = f.details
    d["cause"] = f.cause
    d["severity"] = f.severity
    return d


def hview(row) -> tuple:
    ev, what, state = row
    return (kind(ev), ev.file, ev.line, ev.seq, ev.pid, ev.tid, ev.text, what, state)


def fed(events, **kw) -> Fds:
    """The events through FdModels with the handle models, as analyze stacks them."""
    m = Fds(handles=True, **kw)
    for ev in events:
        m.feed(ev)
    m.finish()
    return m


def watch_fds(findings) -> list[int]:
    """fd numbers worth a `show --fd` history: the low ones and every one a
    finding names."""
    out = {0, 3, 4, 5, 7}
    out |= {f.subject["fd"] for f in findings if isinstance(f.subject.get("fd"), int)}
    return sorted(out)[:12]


def check(path: str) -> None:
    events, _ = _engine.trace_events(path)
    assert events
    for all_fds in (False, True):
        (rep,) = _engine.analyze([path], all_fds=all_fds)
        m = fed(events, all_fds=all_fds)
        mine = [*m.findings, *m.handle_findings]
        # analyze lists the fd model's, the handle model's, then the SVM model's
        assert [fview(f) for f in rep["findings"][: len(mine)]] == [fview(f) for f in mine]
        assert all(f.rule.startswith("svm-") for f in rep["findings"][len(mine) :])
        COUNTS["findings"] += len(mine)
    for fd in watch_fds(mine):
        rows, _ = _engine.history(path, watch_fd=(None, fd))
        got = fed(events, watch=(None, fd)).history
        assert [hview(r) for r in got] == [hview(r) for r in rows]
        # every row says what happened to the number
        assert all(isinstance(what, str) and what for _, what, _ in rows)
        COUNTS["history rows"] += len(rows)
    COUNTS["traces"] += 1
    COUNTS["events"] += len(events)


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    """What was compared (shown with -s)."""
    yield
    print(f"\nengine-fds, both doors: {COUNTS}")


FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.log"), recursive=True))


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.relpath(p, ROOT) for p in FIXTURES])
def test_fixture(path):
    check(path)


@pytest.mark.parametrize("kind_", ["strace", "preload"])
def test_generated_trace(kind_, tmp_path):
    import gen_traces

    lines = (gen_traces.strace_lines if kind_ == "strace" else gen_traces.preload_lines)(8000)
    path = tmp_path / f"{kind_}.log"
    path.write_text("\n".join(lines) + "\n")
    check(str(path))


def test_the_doors_differ_when_the_events_do(tmp_path):
    """The comparison can fail: a trace with one close dropped from the
    events fed is not what the file gives."""
    path = tmp_path / "t.log"
    path.write_text(
        '100 openat(AT_FDCWD, "/etc/hosts", O_RDONLY) = 3\n'
        "100 close(3) = 0\n"
        "100 close(3) = -1 EBADF (Bad file descriptor)\n"
    )
    events, _ = _engine.trace_events(str(path))
    (rep,) = _engine.analyze([str(path)])
    assert [f.rule for f in rep["findings"]] == ["fd-double-close"]
    assert [fview(f) for f in fed(events).findings] == [fview(f) for f in rep["findings"]]
    dropped = fed(events[:1] + events[2:]).findings
    assert [fview(f) for f in dropped] != [fview(f) for f in rep["findings"]]
