"""The compiled fd, handle and dma-buf models (src/models/) against the
Python reference (rocrtrace/models/fds.py, handles.py, dmabuf.py): the same
events through both, and the findings (Finding.to_dict() plus key, details,
cause, severity) and `show` history rows must be identical.

Inputs: (a) every event sequence the model tests build by hand
(tests/test_model_fds.py, tests/test_model_handles.py, recorded as they feed
their models), (b) every fixture log, (c) the fd idiom programs under real
strace and the real capture library, and the real ROCm runs on the fake
device; (d) `show --fd` history rows on all of them."""
from __future__ import annotations

import glob
import inspect
import os
import shutil

import pytest

from rocrtrace import _engine
from rocrtrace.inputs import open_trace
from rocrtrace.models.fds import FdModel
from rocrtrace.models.handles import HandleModel

import test_fd_idioms as idioms
import test_model_fds
import test_model_handles
from realtrace import have_strace, run_strace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = {"models": 0, "traces": 0, "events": 0, "compared": 0}


# --- the two engines ---------------------------------------------------------------------------

def fview(f) -> dict:
    d = f.to_dict()
    d["key"] = tuple(map(str, f.key))
    d["details"] = f.details
    d["cause"] = f.cause
    d["severity"] = f.severity
    return d


def hview(row) -> tuple:
    ev, what = row[0], row[1]
    state = row[2] if len(row) > 2 else None
    return (type(ev).__name__, ev.file, ev.line, ev.seq, ev.pid, ev.tid, ev.text, what, state)


def python_models(events, watch=None, all_fds=False, handles=True, finish=True, **opts):
    """rocrtrace.replay.build_models's fd and handle models, fed as replay feeds them."""
    fds = FdModel(watch=watch, all_fds=all_fds)
    hm = HandleModel(fds, **opts) if handles else None
    for ev in events:
        fds.feed(ev)
        if hm is not None:
            hm.feed(ev)
    if finish:
        fds.finish()
        if hm is not None:
            hm.finish()
    return fds.findings, (hm.findings if hm is not None else []), fds.history


def compare(py, rust) -> int:
    """Assert the two results equal; the number of findings and rows compared."""
    (pf, ph, phist), (rf, rh, rhist) = py, rust
    assert [fview(f) for f in rf] == [fview(f) for f in pf]
    assert [fview(f) for f in rh] == [fview(f) for f in ph]
    assert [hview(r) for r in rhist] == [hview(r) for r in phist]
    return len(pf) + len(ph) + len(phist)


def both(events, watch=None, **kw) -> int:
    events = list(events)
    return compare(python_models(events, watch=watch, **kw),
                   _engine.run_fd_models(events, watch_fd=watch, **kw))


def watch_fds(events) -> list[int]:
    """fd numbers worth a `show --fd` history: the low ones and every one a
    finding names."""
    fds, hf, _ = python_models(events, all_fds=True)
    out = {0, 3, 4, 5, 7}
    out |= {f.subject["fd"] for f in [*fds, *hf] if isinstance(f.subject.get("fd"), int)}
    return sorted(out)[:12]


def check_trace(events, watch_all=True) -> int:
    n = both(events) + both(events, all_fds=True)
    if watch_all:
        for fd in watch_fds(events):
            n += both(events, watch=(None, fd))
    COUNTS["traces"] += 1
    COUNTS["events"] += len(events)
    COUNTS["compared"] += n
    return n


# --- (a) the model tests' own event sequences ---------------------------------------------------

def _model_tests():
    for mod in (test_model_fds, test_model_handles):
        for name, fn in sorted(vars(mod).items()):
            if name.startswith("test_") and callable(fn):
                yield pytest.param(fn, id=f"{mod.__name__}::{name}")


@pytest.fixture
def recorder(monkeypatch):
    """Every FdModel a test makes, with the events fed to it (and to its
    HandleModel), its options and whether it was finished."""
    made = []
    init, feed, finish = FdModel.__init__, FdModel.feed, FdModel.finish
    hinit, hfeed = HandleModel.__init__, HandleModel.feed

    def f_init(self, watch=None, all_fds=False):
        init(self, watch=watch, all_fds=all_fds)
        self._rec = {"events": [], "hevents": [], "watch": watch, "all_fds": all_fds,
                     "handles": None, "finished": False}
        made.append(self)

    def f_feed(self, ev):
        if ev is not self._last:
            self._rec["events"].append(ev)
        feed(self, ev)

    def f_finish(self):
        self._rec["finished"] = True
        finish(self)

    def h_init(self, fds=None, *, watch=None, reexport_threshold=3, held_allocs=8,
               held_seconds=10.0, peak_min=32):
        hinit(self, fds, watch=watch, reexport_threshold=reexport_threshold,
              held_allocs=held_allocs, held_seconds=held_seconds, peak_min=peak_min)
        self.fds._rec["handles"] = self
        self.fds._rec["opts"] = dict(reexport_threshold=reexport_threshold,
                                     held_allocs=held_allocs, held_seconds=held_seconds,
                                     peak_min=peak_min)

    def h_feed(self, ev):
        self.fds._rec["hevents"].append(ev)
        hfeed(self, ev)

    monkeypatch.setattr(FdModel, "__init__", f_init)
    monkeypatch.setattr(FdModel, "feed", f_feed)
    monkeypatch.setattr(FdModel, "finish", f_finish)
    monkeypatch.setattr(HandleModel, "__init__", h_init)
    monkeypatch.setattr(HandleModel, "feed", h_feed)
    return made


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    """What was compared (shown with -s): models or traces, events, and
    findings plus history rows found equal."""
    yield
    print(f"\nengine-fds equality: {COUNTS}")


@pytest.mark.parametrize("test", list(_model_tests()))
def test_model_test_sequences(test, recorder):
    assert not inspect.signature(test).parameters, "a model test with arguments"
    test()
    if not recorder:
        pytest.skip("this test makes no model (kind_of_path: cargo test ports it)")
    for m in recorder:
        r = m._rec
        hm = r["handles"]
        kw = dict(watch_fd=r["watch"], all_fds=r["all_fds"], handles=hm is not None,
                  finish=r["finished"], **(r.get("opts") or {}))
        if hm is not None:
            # the handle model saw what its fd model saw (feeding both is idempotent)
            assert [id(e) for e in r["hevents"]] == [id(e) for e in r["events"]]
        rust = _engine.run_fd_models(r["events"], **kw)
        py = (m.findings, hm.findings if hm is not None else [], m.history)
        COUNTS["compared"] += compare(py, rust)
        COUNTS["models"] += 1
        COUNTS["events"] += len(r["events"])


# --- (b) every fixture log ------------------------------------------------------------------------

FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.log"), recursive=True))


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.relpath(p, ROOT) for p in FIXTURES])
def test_fixture(path):
    events = list(open_trace(path).events())
    check_trace(events)


# --- (c) real programs ------------------------------------------------------------------------------

@pytest.mark.skipif(not have_strace(), reason="needs strace and cc")
@pytest.mark.parametrize("prog,mode,opts", list(idioms._strace_cases()))
def test_fd_idiom_strace(prog, mode, opts, tmp_path):
    idioms._skip_unrunnable(prog)
    paths = run_strace(idioms.OPTION_SETS[opts], prog, [mode], tmp_path)
    arg = paths[0] if len(paths) == 1 else os.path.join(str(tmp_path), "trace.log.*")
    events = list(open_trace(arg).events())
    assert events
    check_trace(events)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs cc")
@pytest.mark.parametrize("prog,mode", list(idioms._capture_cases()))
@pytest.mark.parametrize("depth", [0, 8])
def test_fd_idiom_capture(prog, mode, depth, tmp_path):
    idioms._skip_unrunnable(prog)
    events = list(open_trace(idioms._capture(prog, mode, tmp_path, depth=depth)).events())
    assert events
    check_trace(events)


def _rocm():
    import test_rocm_real as rocm
    return rocm


try:
    from test_rocm_real import topology  # noqa: F401  (the fixture, for the ROCm runs)
    import test_rocm_real as _rocm_mod
    ROCM_CASES = list(_rocm_mod.EXPECTED)
    ROCM_MISSING = _rocm_mod._missing()
except Exception as e:          # pragma: no cover - the module needs the fake device
    ROCM_CASES, ROCM_MISSING = [], str(e)


@pytest.mark.skipif(ROCM_MISSING is not None, reason=ROCM_MISSING or "")
@pytest.mark.parametrize("prog,mode", ROCM_CASES,
                         ids=[f"{p}-{m}" if m else p for p, m in ROCM_CASES])
def test_rocm_real(prog, mode, topology, tmp_path):  # noqa: F811
    _, events, proc, _ = _rocm().capture(prog, mode, topology, tmp_path, stack_depth=8)
    assert events
    check_trace(events)
