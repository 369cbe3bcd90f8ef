"""The core's models as the model tests drive them: constructed events
(tests/vocab.py) fed one at a time to rocrtrace._engine.FdModels, findings,
history and an fd number's occupant read between events.

Events cross into Rust and back, so a finding's evidence holds copies of
the events fed, never the objects themselves: ``same(a, b)`` is the test's
``a is b`` (the builders give every event its own line and seq)."""

from __future__ import annotations

from types import SimpleNamespace

from rocrtrace import _engine


def same(a, b) -> bool:
    """The same trace event: file, line, seq and text."""
    if a is None or b is None:
        return a is b
    return (a.file, a.line, a.seq, a.text) == (b.file, b.line, b.seq, b.text)


def lines(events) -> list:
    return [e.line for e in events]


def _ns(d):
    if d is None:
        return None
    ns = SimpleNamespace(**d)
    if getattr(ns, "prev", None) is not None:
        ns.prev = SimpleNamespace(**ns.prev)
        ns.prev.slot = _ns(ns.prev.slot)
    return ns


class Fds:
    """The fd model (``handles=False``: alone, as FdModel was) or the fd,
    handle and dma-buf models together (``handles=True``, as analyze stacks
    them): ``findings`` are the fd model's, ``handle_findings`` the others'."""

    def __init__(self, watch=None, all_fds=False, handles=False, **opts):
        self._m = _engine.FdModels(watch_fd=watch, all_fds=all_fds, handles=handles, **opts)

    def feed(self, ev) -> None:
        self._m.feed(ev)

    def finish(self) -> None:
        self._m.finish()

    @property
    def findings(self) -> list:
        return self._m.findings

    @property
    def handle_findings(self) -> list:
        return self._m.handle_findings

    @property
    def history(self) -> list:
        return self._m.history

    def lookup(self, pid, fd):
        """The occupant of fd in pid (attributes: kind, origin, creator, root,
        root_origin, ofd, cloexec, path, last_use, prev ...), None when free."""
        return _ns(self._m.lookup(pid, fd))

    def open_fds(self, pid, below: int = 256) -> list[int]:
        return [n for n in range(below) if self._m.lookup(pid, n) is not None]


def svm_run(events, watch=None, xnack=None, clean_start=True) -> SimpleNamespace:
    """The core's SVM model over events (in the order given): findings,
    limits, history rows (event, what, state) and counts."""
    findings, limits, history, counts = _engine.run_svm_model(
        events, watch_addr=watch, xnack=xnack, clean_start=clean_start
    )
    return SimpleNamespace(findings=findings, limits=limits, history=history, counts=counts)


def end(ev) -> float:
    """Completion time (entry + duration), the order the analyzer replays in."""
    return ev.time + (ev.dur or 0.0)


def trace_events(path: str, *, input_format: str | None = None, max_line: int = 1 << 20, max_open: int = 64):
    """(every event of one TRACE argument in replay order, its InputInfos) as
    the core reads and parses it; an input it cannot read is InputError.  One
    Python record per event, through the core's test entry point."""
    from rocrtrace.engine import InputError

    try:
        return _engine.trace_events(path, input_format, max_line, max_open)
    except _engine.ReadError as e:
        raise InputError(str(e)) from None
