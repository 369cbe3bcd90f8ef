"""The engine behind every command: a thin, typed front over the analysis.

The CLI and the tests call only these functions.  The compiled core (rocrtrace._engine, Rust) runs by default.  The Python
reference engine (rocrtrace/parse, rocrtrace/models) stays until the
Python engine is retired: the comparison harness (tests/engine/compare.py)
runs both on the whole corpus and reports every byte that differs.
``ROCRTRACE_ENGINE=python|rust`` picks one.

Input problems are raised as ``InputError`` (exit 2, one line); anything
else is a bug (exit 3).
"""
from __future__ import annotations

import os
from typing import Callable, Iterable

from .result import AnalysisResult

ENGINES = ("python", "rust")


def which() -> str:
    from .inputs import InputError

    name = os.environ.get("ROCRTRACE_ENGINE", "rust")
    if name not in ENGINES:
        raise InputError(f"ROCRTRACE_ENGINE={name!r}: choose python or rust")
    if name == "rust":
        try:
            from . import _engine  # noqa: F401
        except ImportError as e:
            raise InputError(f"the compiled core rocrtrace._engine does not load ({e}): "
                             "reinstall with 'pip install .', or set ROCRTRACE_ENGINE=python "
                             "for the reference engine") from None
    return name


def _open(paths: Iterable[str], input_format=None, jobs=1):
    from .inputs import open_trace

    return [open_trace(p, input_format=input_format, jobs=jobs) for p in paths]


def analyze(paths: list[str], *, input_format: str | None = None, enabled=None,
            debug_dirs=(), fail_on: str = "error", all_fds: bool = False, jobs: int = 1,
            on_event: Callable | None = None, progress: Callable | None = None,
            table: bool = False) -> AnalysisResult:
    """Replay every trace with its own models; findings symbolized and
    fingerprinted.  ``on_event`` sees every event (the perfetto sink),
    ``progress`` every event while one process replays (a progress bar);
    ``table``: also the event table, as ``result.table``."""
    if which() == "rust":
        from . import _rust

        return _rust.analyze(paths, input_format=input_format, enabled=enabled,
                             debug_dirs=debug_dirs, fail_on=fail_on, all_fds=all_fds,
                             jobs=jobs, on_event=on_event, progress=progress, table=table)
    from .replay import analyze as run

    if jobs > 1 and len(paths) > 1 and on_event is None and not table:
        from .findings import number_collisions
        from .parallel import analyze_parallel

        result = analyze_parallel(paths, input_format, enabled, debug_dirs, fail_on, jobs,
                                  all_fds=all_fds)
        number_collisions(result.findings)
        return result
    opened = _open(paths, input_format, jobs)
    collected: list = []
    hooks = [h for h in (progress, on_event, collected.append if table else None)
             if h is not None]
    hook = hooks[0] if len(hooks) == 1 else (lambda ev: [h(ev) for h in hooks]) if hooks \
        else None
    result = run(opened, enabled=enabled, debug_dirs=debug_dirs, fail_on=fail_on,
                 on_event=hook, all_fds=all_fds)
    if table:
        from .tables import events_frame

        result.table = events_frame(collected)
    return result


def events_frame(paths: list[str], *, input_format: str | None = None, jobs: int = 1):
    """(the event table of all traces, their InputInfos)."""
    if which() == "rust":
        from . import _rust

        return _rust.events_frame(paths, input_format=input_format, jobs=jobs)
    from .tables import events_frame as frame

    opened = _open(paths, input_format, jobs)
    df = frame(ev for t in opened for ev in t.events())
    return df, [i for t in opened for i in t.infos]


def history(path: str, *, input_format: str | None = None, watch_fd=None, watch_addr=None):
    """(the recorded history of one fd (pid, fd) or page range (start, end[,
    pid]), the InputInfos): what `rocrtrace show` renders."""
    if which() == "rust":
        from . import _rust

        return _rust.history(path, input_format=input_format, watch_fd=watch_fd,
                             watch_addr=watch_addr)
    from .replay import build_models, replay

    models = build_models(watch_fd=watch_fd, watch_addr=watch_addr)
    (opened,) = _open([path], input_format)
    replay(opened.events(), models)
    watcher = models[2] if watch_addr is not None else models[0]
    return watcher.history, opened.infos


# --- appended by tparse: the events of one trace, for tests and tools ----------

def trace_events(path: str, *, input_format: str | None = None, max_line: int = 1 << 20,
                 max_open: int = 64):
    """(every event of one TRACE argument in replay order, its InputInfos) as
    the core reads and parses it; an input it cannot read is InputError.  One
    Python object per event: for tests and tools, not for the product's paths
    (those hand over tables)."""
    from . import _engine
    from .inputs import InputError

    try:
        return _engine.trace_events(path, input_format, max_line, max_open)
    except _engine.ReadError as e:
        raise InputError(str(e)) from None
