"""--jobs N: analyze several TRACE arguments in worker processes.  Traces are
independent runs (each replayed with its own models), so results just add."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

from .result import AnalysisResult


def _one(args):
    from .inputs import open_trace
    from .replay import analyze

    path, input_format, enabled, debug_dirs, fail_on, all_fds = args
    return analyze([open_trace(path, input_format=input_format)], enabled=enabled,
                   debug_dirs=debug_dirs, fail_on=fail_on, all_fds=all_fds)


def analyze_parallel(traces, input_format, enabled, debug_dirs, fail_on, jobs,
                     all_fds=False) -> AnalysisResult:
    work = [(t, input_format, enabled, tuple(debug_dirs), fail_on, all_fds) for t in traces]
    merged = AnalysisResult(fail_on=fail_on)
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        for res in pool.map(_one, work):     # map keeps argument order: stable reports
            merged.merge(res)
    return merged
