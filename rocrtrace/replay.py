"""Replay: drive the models over one trace's event stream and collect what
they conclude, plus what the input itself says about its own coverage."""
from __future__ import annotations

from typing import Callable, Iterable

from .coverage import coverage, input_findings
from .parse.pyevents import Event, ModuleMap
from .findings import (Evidence, Finding, Programs, assign_fingerprints, number_collisions,
                       symbolize_findings)
from .result import AnalysisResult, TraceFacts


def build_models(watch_fd=None, watch_addr=None, all_fds=False):
    """The model stack, in feeding order: fds first (handles look fds up).
    ``all_fds``: also list every fd the program still holds at exit."""
    from .models.fds import FdModel
    from .models.handles import HandleModel
    from .models.svm import SvmModel

    fds = FdModel(watch=watch_fd, all_fds=all_fds)
    handles = HandleModel(fds)
    svm = SvmModel(watch=watch_addr) if watch_addr is not None else SvmModel()
    return fds, handles, svm


def replay(events: Iterable[Event], models, on_event: Callable[[Event], None] | None = None,
           maps: list | None = None) -> None:
    feeds = [m.feed for m in models]
    for ev in events:
        if maps is not None and isinstance(ev, ModuleMap):
            maps.append(ev)
        for feed in feeds:
            feed(ev)
        if on_event is not None:
            on_event(ev)
    for m in models:
        m.finish()


def analyze(traces, enabled=None, debug_dirs=(), fail_on="error",
            on_event=None, all_fds=False) -> AnalysisResult:
    """Replay every trace with its own models (traces are independent runs)."""
    result = AnalysisResult(fail_on=fail_on)
    limits: list[str] = []
    facts = TraceFacts()
    for trace in traces:
        models = build_models(all_fds=all_fds)
        maps: list = []
        programs = Programs()
        replay(trace.events(), [*models, programs, facts], on_event=on_event, maps=maps)
        found: list[Finding] = []
        for m in models:
            found.extend(m.findings)
            limits.extend(x for x in getattr(m, "limits", []) if x not in limits)
        for info in trace.infos:
            found.extend(input_findings(info))
        symbolize_findings(found, maps, debug_dirs)
        assign_fingerprints(found, programs)
        result.inputs.extend(trace.infos)
        result.findings.extend(found)
    if enabled is not None:
        result.findings = [f for f in result.findings if f.rule in enabled]
    number_collisions(result.findings)
    result.limits, result.facts = limits, facts
    result.coverage = facts.relevant(coverage(result.inputs, limits))
    return result


__all__ = ["analyze", "replay", "build_models", "input_findings", "coverage", "Evidence"]
