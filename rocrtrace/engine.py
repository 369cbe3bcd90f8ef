"""The engine behind every command: the compiled core (rocrtrace._engine,
Rust) and its results made into what the reporters take (AnalysisResult,
InputInfo, Finding, event tables).

The CLI calls analyze, events_frame and history (tests/coremodels.py's
trace_events hands the tests the events of one trace, through a test entry
point of the core).
Everything per event happens in Rust; this module sees only what a report
shows.  Symbolization and fingerprints stay here: they read ELF files
(pyelftools) for the frames findings cite.

Input problems are raised as ``InputError`` (exit 2, one line); anything
else is a bug (exit 3).
"""

from __future__ import annotations

from typing import Callable

from .core import core
from .paths import InputError
from .result import AnalysisResult, TraceFacts


def _skipped_note(message: str):
    """A file a directory or glob expanded to that is not a trace: skipped
    with a note."""
    from .findings import Finding

    text = message.removeprefix("rocrtrace: ")
    path = text.split(": ", 1)[0]
    return Finding(
        rule="trace-unparsed",
        message=f"skipped {text}",
        event=None,
        subject={"kind": "input", "file": path},
        key=("skipped",),
        file=path,
        details={"skipped": text},
    )


def _result(reports: list[dict], enabled, debug_dirs, fail_on) -> AnalysisResult:
    from .coverage import coverage, input_findings
    from .findings import Programs, assign_fingerprints, number_collisions, symbolize_findings, symbolize_messages

    result = AnalysisResult(fail_on=fail_on)
    limits: list[str] = []
    runtime: list[str] = []  # the SVM runtime's behaviour (coverage only)
    facts = TraceFacts()
    tables = []
    for rep in reports:
        if "error" in rep:
            result.errors.append(rep["error"])
            continue
        found = [_skipped_note(m) for m in rep.get("skipped", ())]
        found.extend(rep["findings"])
        infos = rep["inputs"]
        for info in infos:
            found.extend(input_findings(info))
        limits.extend(x for x in rep["limits"] if x not in limits)
        runtime.extend(x for x in rep.get("svm_runtime", ()) if x not in runtime)
        facts.svm_ioctls += rep["facts"][0]
        facts.gpu_calls += rep["facts"][1]
        symbolize_findings(found, rep["maps"], debug_dirs)
        symbolize_messages(found)
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
    result.coverage = facts.relevant(coverage(result.inputs, limits + runtime))
    if tables:
        from .tables import Batch

        result.table = [Batch(t) for t in tables]
    return result


def analyze(
    paths: list[str],
    *,
    input_format: str | None = None,
    enabled=None,
    debug_dirs=(),
    fail_on: str = "error",
    all_fds: bool = False,
    jobs: int = 1,
    on_event: Callable | None = None,
    progress: Callable | None = None,
    table: bool = False,
    keep_going: bool = False,
) -> AnalysisResult:
    """Replay every trace with its own models (the runs of one argument
    apart); findings symbolized and fingerprinted.  ``keep_going``:
    an input that cannot be read goes to ``result.errors`` and the others
    are analyzed (raised as InputError when no input could be read);
    without it the first such input raises InputError.  ``on_event`` sees every event: the perfetto report's
    EventSink gets them as the core's columns (``add_columns``, one call
    per trace), any other callable one record at a time (slow);
    ``progress`` is told as the replay advances (a progress bar);
    ``table``: also the event table, as ``result.table`` (tables.Batch, one a
    run)."""
    eng = core()
    try:
        if hasattr(on_event, "add_columns"):
            reports = eng.analyze_calls(
                list(paths), input_format=input_format, all_fds=all_fds, table=table, jobs=jobs, keep_going=keep_going
            )
            for rep in reports:
                if "calls" in rep:
                    on_event.add_columns(rep.pop("calls"))
        elif on_event is not None:
            reports = []
            for p in paths:
                try:
                    got = eng.analyze_events(
                        p, on_event, input_format=input_format, all_fds=all_fds, table=table, jobs=jobs
                    )
                except eng.ReadError as e:
                    if not keep_going:
                        raise
                    got = {"error": str(e)}
                reports.extend(got if isinstance(got, list) else [got])
        else:
            reports = eng.analyze(
                list(paths),
                input_format=input_format,
                all_fds=all_fds,
                table=table,
                jobs=jobs,
                progress=progress,
                keep_going=keep_going,
            )
    except eng.ReadError as e:
        raise InputError(str(e)) from None
    if reports and all("error" in r for r in reports):
        # nothing could be read: the first input's error, as for one input
        raise InputError(reports[0]["error"])
    return _result(reports, enabled, debug_dirs, fail_on)


def events_frame(paths: list[str], *, input_format: str | None = None, jobs: int = 1):
    """(the event table of all traces, their InputInfos)."""
    from .tables import frame_from_columns

    eng = core()
    try:
        cols, infos = eng.events_table(list(paths), input_format=input_format, jobs=jobs)
    except eng.ReadError as e:
        raise InputError(str(e)) from None
    return frame_from_columns(cols), infos


def event_batches(
    paths: list[str], on_batch, *, input_format: str | None = None, jobs: int = 1, batch_rows: int = 16384
):
    """Hand the event table of all traces to ``on_batch(batch)`` (a
    tables.Batch) ``batch_rows`` rows at a time (what events_frame gives, in
    pieces, without pandas); returns their InputInfos.  An exception in
    on_batch stops the reading and propagates."""
    from .tables import Batch

    eng = core()
    try:
        return eng.event_batches(
            list(paths), lambda cols: on_batch(Batch(cols)), input_format=input_format, jobs=jobs, batch_rows=batch_rows
        )
    except eng.ReadError as e:
        raise InputError(str(e)) from None


def history(path: str, *, input_format: str | None = None, watch_fd=None, watch_addr=None):
    """(the recorded history of one fd (pid, fd) or page range (start, end[,
    pid]), the InputInfos): what `rocrtrace show` renders."""
    eng = core()
    try:
        return eng.history(path, input_format=input_format, watch_fd=watch_fd, watch_addr=watch_addr)
    except eng.ReadError as e:
        raise InputError(str(e)) from None
