"""The compiled core behind rocrtrace.engine: its results made into what the
reporters take (AnalysisResult, InputInfo, Finding, pandas frames).

Everything per event happens in Rust; this module sees only what a report
shows.  Symbolization and fingerprints stay here: they read ELF files
(pyelftools) for the frames findings cite.
"""
from __future__ import annotations

from typing import Callable

from . import _engine
from .coverage import coverage, input_findings
from .findings import Programs, assign_fingerprints, number_collisions, symbolize_findings
from .inputs import InputError
from .result import AnalysisResult, TraceFacts


def _input_error(e: Exception) -> InputError:
    return InputError(str(e))


def _result(reports: list[dict], enabled, debug_dirs, fail_on) -> AnalysisResult:
    result = AnalysisResult(fail_on=fail_on)
    limits: list[str] = []
    facts = TraceFacts()
    tables = []
    for rep in reports:
        found = list(rep["findings"])
        infos = rep["inputs"]
        for info in infos:
            found.extend(input_findings(info))
        limits.extend(x for x in rep["limits"] if x not in limits)
        facts.svm_ioctls += rep["facts"][0]
        facts.gpu_calls += rep["facts"][1]
        symbolize_findings(found, rep["maps"], debug_dirs)
        programs = Programs()
        programs.exe = dict(rep["exe"])
        assign_fingerprints(found, programs)
        result.inputs.extend(infos)
        result.findings.extend(found)
        if "table" in rep:
            tables.append(rep["table"])
    if enabled is not None:
        result.findings = [f for f in result.findings if f.rule in enabled]
    number_collisions(result.findings)
    result.limits, result.facts = limits, facts
    result.coverage = facts.relevant(coverage(result.inputs, limits))
    if tables:
        from .tables import frame_from_columns

        frames = [frame_from_columns(t) for t in tables]
        if len(frames) == 1:
            result.table = frames[0]
        else:
            import pandas as pd

            result.table = pd.concat(frames, ignore_index=True)
    return result


def analyze(paths: list[str], *, input_format=None, enabled=None, debug_dirs=(),
            fail_on="error", all_fds=False, jobs=1, on_event: Callable | None = None,
            progress=None, table=False) -> AnalysisResult:
    try:
        if on_event is not None:
            reports = [_engine.analyze_events(p, on_event, input_format=input_format,
                                              all_fds=all_fds, table=table) for p in paths]
        else:
            reports = _engine.analyze(list(paths), input_format=input_format,
                                      all_fds=all_fds, table=table, jobs=jobs,
                                      progress=progress)
    except _engine.ReadError as e:
        raise _input_error(e) from None
    return _result(reports, enabled, debug_dirs, fail_on)


def events_frame(paths: list[str], *, input_format=None, jobs=1):
    from .tables import frame_from_columns

    try:
        cols, infos = _engine.events_table(list(paths), input_format=input_format, jobs=jobs)
    except _engine.ReadError as e:
        raise _input_error(e) from None
    return frame_from_columns(cols), infos


def history(path: str, *, input_format=None, watch_fd=None, watch_addr=None):
    try:
        return _engine.history(path, input_format=input_format, watch_fd=watch_fd,
                               watch_addr=watch_addr)
    except _engine.ReadError as e:
        raise _input_error(e) from None
