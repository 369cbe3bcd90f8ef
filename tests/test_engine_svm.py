"""The core's SVM model through its two doors: a trace file analyzed whole
(`_engine.analyze`, `_engine.history` with an address) and the same trace's
events, as Python objects, through `_engine.run_svm_model` (what
test_svm_model.py and test_svm_equivalence.py call with events they build).
On every fixture log, the generated preload trace and in-memory SVM churn
(benchmarks/bench_svm.py's stream), both must give the same findings (in
order, with key, details, cause, severity), limits and `show --addr`
history rows.

(The real ROCm runs of test_rocm_real.py are judged there, on their
expected findings.)"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from rocrtrace import _engine

from coremodels import svm_run
from vocab import kind

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

COMPARED = Counter()  # what was compared, for the report (-s prints it)


def finding_record(f) -> tuple:
    return (f.to_dict(), tuple(f.key), f.details, f.cause, f.severity)


def history_record(rows) -> list:
    return [(kind(ev), ev.file, ev.line, ev.seq, what, repr(state)) for ev, what, state in rows]


def svm_ranges(events) -> list:
    """(start, size, pid) of the SVM calls, first seen first."""
    out = []
    for ev in events:
        arg = getattr(ev, "arg", None)
        if getattr(ev, "nr", None) == 0x20 and isinstance(arg, dict) and "start_addr" in arg:
            item = (int(arg["start_addr"]), int(arg.get("size", 0)), ev.pid)
            if item not in out:
                out.append(item)
    return out


def check_file(path: str, watches: int = 3):
    events, _ = _engine.trace_events(path)
    (rep,) = _engine.analyze([path])
    got = svm_run(events)
    svm = [f for f in rep["findings"] if f.rule.startswith("svm-")]
    # analyze lists the SVM model's findings last
    assert rep["findings"][len(rep["findings"]) - len(svm) :] == svm
    assert [finding_record(f) for f in got.findings] == [finding_record(f) for f in svm]
    assert got.limits == rep["limits"]
    COMPARED["files"] += 1
    COMPARED["events"] += len(events)
    COMPARED["findings"] += len(svm)
    # show --addr on the SVM calls the log has: one page, the whole range, one pid
    for start, size, pid in svm_ranges(events)[:watches]:
        for watch in ((start, start + 1), (start, start + max(size, 1), pid)):
            rows, _ = _engine.history(path, watch_addr=watch)
            assert history_record(svm_run(events, watch=watch).history) == history_record(rows)
            COMPARED["watches"] += 1
            COMPARED["history rows"] += len(rows)
    return got


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    """What this module compared, printed at its end (pytest -s)."""
    yield
    print("\nSVM, both doors:", dict(COMPARED))


FIXTURE_LOGS = sorted(p for p in (ROOT / "fixtures").rglob("*.log"))


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_log(path):
    check_file(str(path))


def test_gen_traces_preload(tmp_path):
    import gen_traces

    path = tmp_path / "preload.log"
    path.write_text("\n".join(gen_traces.preload_lines(20000)) + "\n")
    got = check_file(str(path), watches=1)
    assert got.counts["set_attr"] > 1000  # the comparison saw SVM churn


@pytest.mark.parametrize("intents", [False, True], ids=["inferred", "intents"])
@pytest.mark.parametrize("live", [8, 64])
def test_bench_svm_churn_is_clean(intents, live):
    """The benchmark's churn is a correct runtime's (V3 shapes): no finding,
    on the whole stream and on a watched buffer, whose history records every
    SVM call on it."""
    import bench_svm

    events = list(bench_svm.stream(6000, live, intents))
    run = svm_run(events)
    assert run.findings == [] and run.counts["set_attr"] >= 6000
    start = bench_svm.BASE + 3 * 0x10010
    watched = svm_run(events, watch=(start, start + 0x20000))
    assert watched.findings == []
    on_it = [
        e
        for e in events
        if kind(e) == "Ioctl" and e.arg["start_addr"] < start + 0x20000 and e.arg["start_addr"] + e.arg["size"] > start
    ]
    assert on_it and [ev.line for ev, _, _ in watched.history if kind(ev) == "Ioctl"] == [e.line for e in on_it]
