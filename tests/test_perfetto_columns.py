"""The perfetto report's two feeds agree: the columns the core builds
while a trace replays (EventSink.add_columns, src/table.rs CallTable) give
the same slices, process names and exits as the records of the same
events fed one at a time (EventSink(ev), the path for events in hand), on
every fixture and on real strace logs of the fd test programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocrtrace import _engine
from rocrtrace.report.perfetto import EventSink

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted(p for p in (ROOT / "fixtures").rglob("*.log"))


def _both(arg: str):
    by_record = EventSink()
    for ev in _engine.trace_events(arg)[0]:
        by_record(ev)
    by_columns = EventSink()
    (rep,) = _engine.analyze_calls([arg])
    by_columns.add_columns(rep["calls"])
    return by_record, by_columns


def _same(a: EventSink, b: EventSink) -> None:
    assert b.rows == a.rows
    assert (b.procs, b.ends, b._seq, b._last_ns) == (a.procs, a.ends, a._seq, a._last_ns)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_fixture_columns_equal_records(path):
    a, b = _both(str(path))
    _same(a, b)


def test_the_corpus_has_what_the_columns_carry():
    """Creates, closes, ioctls, mmaps, exits, process names and every kind of
    ioctl on a buffer handle occur, so the equality above covers them (pipes
    and execs: the real runs below)."""
    kinds, procs, handles = set(), 0, set()
    for p in LOGS:
        _, b = _both(str(p))
        kinds |= {r.kind for r in b.rows}
        procs += len(b.procs)
        handles |= {(r.handle[0], r.handle[1], r.err is None) for r in b.rows if r.handle}
    assert {"FdCreate", "Close", "Ioctl", "Exit", "Mmap"} <= kinds
    assert procs > 0
    assert {(op, family, True) for op in ("create", "export", "free") for family in ("KFD", "GEM")} | {
        ("free", "GEM", False)
    } <= handles


def test_real_strace_pipes_and_exec(tmp_path):
    import shutil
    import sys

    if not (shutil.which("strace") and shutil.which("cc")):
        pytest.skip("needs strace and cc")
    sys.path.insert(0, str(ROOT / "tests"))
    from realtrace import run_strace

    pairs = execs = 0
    for mode in ("pass", "exec", "pidfd", "threads"):
        d = tmp_path / mode
        d.mkdir()
        (log,) = run_strace(["-f", "-ttt", "-T", "-yy", "-o"], "fdops", [mode], d)
        a, b = _both(log)
        _same(a, b)
        pairs += sum(len(r.created) == 2 for r in b.rows)  # pipe2, socketpair
        execs += any(r.name.startswith("exec") for r in b.rows)
    assert pairs >= 2 and execs >= 1
