"""The Rust SVM model (src/models/svm.rs, `_engine.run_svm_model`) against the
Python reference (rocrtrace/models/svm.py) on the same events: findings
(Finding.to_dict() plus key, details, cause, severity, in order), limits,
counts and the `show --addr` history must be identical.

(a) every SvmModel the existing SVM tests construct: their test functions are
    collected here again with SvmModel replaced by a subclass that, at
    finish(), runs the same events through Rust and compares;
(b) every fixture log; (c) the real ROCm 5.2.3 runs on the fake KFD and the
    generated benchmark traces; (d) `show --addr` histories.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from rocrtrace._engine import run_svm_model
from rocrtrace.inputs import open_trace
from rocrtrace.models.svm import SvmModel

import test_svm_equivalence as _equiv
import test_svm_model as _model

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

COMPARED = Counter()   # what was compared, for the report (-s prints it)


def finding_record(f) -> tuple:
    return (f.to_dict(), tuple(f.key), f.details, f.cause, f.severity)


def history_record(rows) -> list:
    return [(ev.file, ev.line, ev.seq, what, repr(state)) for ev, what, state in rows]


def compare(events, py: SvmModel, watch=None, xnack=None, clean_start=True) -> None:
    """Rust on `events` must give what the finished Python model `py` gave."""
    findings, limits, history, counts = run_svm_model(events, watch, xnack, clean_start)
    want = [finding_record(f) for f in py.findings]
    got = [finding_record(f) for f in findings]
    assert got == want
    assert limits == list(SvmModel.limits)
    assert counts == py.counts
    assert history_record(history) == history_record(py.history)
    COMPARED["runs"] += 1
    COMPARED["events"] += len(events)
    COMPARED["findings"] += len(want)
    COMPARED["history rows"] += len(history)


def run_both(events, **kw) -> SvmModel:
    py = SvmModel(**kw)
    for ev in events:
        py.feed(ev)
    py.finish()
    compare(events, py, **kw)
    return py


class Checked(SvmModel):
    """SvmModel that, when finished, checks the Rust model on its events."""

    def __init__(self, watch=None, xnack=None, clean_start=True):
        super().__init__(watch=watch, xnack=xnack, clean_start=clean_start)
        self._kw = {"watch": watch, "xnack": xnack, "clean_start": clean_start}
        self._events = []

    def feed(self, ev):
        self._events.append(ev)
        super().feed(ev)

    def finish(self):
        super().finish()
        compare(self._events, self, **self._kw)


# --- (a) the existing model tests, each model they build checked ----------------

def _reuse(module, names=None):
    for name, fn in vars(module).items():
        if name.startswith("test_") and callable(fn) and (names is None or name in names):
            globals()[f"{name}__{module.__name__}"] = fn


_reuse(_model)
_reuse(_equiv, {"test_fast_set_attr_matches_general",
                "test_fast_set_attr_matches_general_long", "test_exit_drops_the_same"})


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    """What this module compared, printed at its end (pytest -s)."""
    yield
    print("\nSVM engine comparisons:", dict(COMPARED))


@pytest.fixture(autouse=True)
def _checked_models(monkeypatch):
    monkeypatch.setattr(_model, "SvmModel", Checked)
    monkeypatch.setattr(_equiv, "SvmModel", Checked)


# --- (b) every fixture log --------------------------------------------------------

FIXTURE_LOGS = sorted(p for p in (ROOT / "fixtures").rglob("*.log"))


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_log(path):
    events = list(open_trace(str(path)).events())
    run_both(events)
    COMPARED["fixture logs"] += 1
    # (d) show --addr on the SVM calls the log has: one page, the whole range, one pid
    for start, size, pid in _svm_ranges(events)[:3]:
        run_both(events, watch=(start, start + 1))
        run_both(events, watch=(start, start + max(size, 1), pid))
        COMPARED["watches"] += 2


def _svm_ranges(events) -> list:
    out = []
    for ev in events:
        arg = getattr(ev, "arg", None)
        if getattr(ev, "nr", None) == 0x20 and isinstance(arg, dict) and "start_addr" in arg:
            item = (int(arg["start_addr"]), int(arg.get("size", 0)), ev.pid)
            if item not in out:
                out.append(item)
    return out


# --- (c) generated traces and the real ROCm runs -------------------------------------

@pytest.mark.parametrize("intents", [False, True], ids=["inferred", "intents"])
@pytest.mark.parametrize("live", [8, 64])
def test_bench_svm_churn(intents, live):
    import bench_svm

    events = list(bench_svm.stream(6000, live, intents))
    run_both(events)
    start = bench_svm.BASE + 3 * 0x10010
    run_both(events, watch=(start, start + 0x20000))


@pytest.mark.parametrize("kind", ["preload", "strace"])
def test_gen_traces(kind, tmp_path):
    import gen_traces

    path = tmp_path / f"{kind}.log"
    lines = (gen_traces.preload_lines if kind == "preload" else gen_traces.strace_lines)(20000)
    path.write_text("\n".join(lines) + "\n")
    events = list(open_trace(str(path)).events())
    py = run_both(events)
    if kind == "preload":
        assert py.counts["set_attr"] > 1000      # the comparison saw SVM churn
        (start, size, pid), *_ = _svm_ranges(events)
        run_both(events, watch=(start, start + size))


try:
    import test_rocm_real as _rocm
except Exception:   # pragma: no cover - the module needs the fakedev helpers
    _rocm = None


@pytest.mark.skipif(_rocm is None or _rocm._missing() is not None,
                    reason=(_rocm._missing() if _rocm else None) or "no test_rocm_real")
@pytest.mark.parametrize("prog,mode", list(_rocm.EXPECTED) if _rocm else [],
                         ids=[f"{p}-{m}" if m else p for p, m in
                              (_rocm.EXPECTED if _rocm else [])])
def test_rocm_real_run(prog, mode, tmp_path_factory, tmp_path):
    topology = _rocm.devns.write_topology(tmp_path_factory.mktemp("kfd") / "topology")
    _, events, _, _ = _rocm.capture(prog, mode, topology, tmp_path)
    run_both(events)
    for start, size, pid in _svm_ranges(events)[:2]:
        run_both(events, watch=(start, start + max(size, 1), pid))
    COMPARED["rocm runs"] += 1
