"""The Python reference engine behind rocrtrace.engine's three calls, for
the comparison harness only (compare.py swaps these in for the core's).

The product runs the compiled core alone; this is the Python engine it was
ported from (rocrtrace/parse, rocrtrace/models, replay.py, parallel.py,
inputs.py), kept here until those modules are deleted, with its row-by-row
event table (the core hands the product its table as columns).
"""
from __future__ import annotations

from contextlib import contextmanager

from rocrtrace import engine as _engine_front
from rocrtrace import kfd, tables


def _open(paths, input_format=None, jobs=1):
    from rocrtrace.inputs import open_trace

    return [open_trace(p, input_format=input_format, jobs=jobs) for p in paths]


# Columns that hold integers or nothing: nullable Int64 keeps them integers
# in CSV/JSONL/parquet instead of floats with NaN.
_INT_COLUMNS = ("line", "seq", "pid", "tid", "ret", "fd", "type", "nr", "size", "request",
                "length", "nattr")
OP_NAMES = {kfd.SVM_OP_SET_ATTR: "SET_ATTR", kfd.SVM_OP_GET_ATTR: "GET_ATTR"}


def svm_columns(ev) -> dict:
    """op, nattr and shape of an AMDKFD_IOC_SVM call; nattr from the request's
    size field when the struct was not decoded (strace logs)."""
    if ev.event != "Ioctl" or (ev.type, ev.nr) != kfd.SVM:
        return {}
    arg = ev.arg or {}
    op = arg.get("op")
    attrs = arg.get("attrs")
    nattr = arg.get("nattr")
    if nattr is None and attrs is not None:
        nattr = len(attrs)
    if nattr is None and ev.size is not None and ev.size >= 24 and (ev.size - 24) % 8 == 0:
        nattr = (ev.size - 24) // 8
    return {"op": OP_NAMES.get(op, None if op is None else str(op)), "nattr": nattr,
            "attr_shape": tables.attr_shape(attrs) if attrs else None}


def ioctl_label(ev) -> str:
    if ev.ioctl:
        return ev.ioctl
    if ev.type is not None and ev.nr is not None:
        return f"_IOC(type={ev.type:#x}, nr={ev.nr:#x})"
    return "ioctl(?)"


def _nullable_int(col):
    import pandas as pd

    vals = [None if v is None or (isinstance(v, float) and v != v) else int(v) for v in col]
    # Int64 holds signed 64-bit; request codes and addresses fit, but an
    # odd value that does not is kept exact as text rather than wrapped.
    if any(v is not None and not -2**63 <= v < 2**63 for v in vals):
        return pd.Series([None if v is None else str(v) for v in vals], dtype="string",
                         index=col.index)
    return pd.array(vals, dtype="Int64")


def events_frame_of(events):
    """The event table built from Python events, one row at a time."""
    import pandas as pd

    from rocrtrace.events import event_record
    from rocrtrace.tables import ORDER, _storable

    rows = []
    for ev in events:
        rec = event_record(ev)
        rec["file"] = _storable(rec["file"])
        if ev.event == "Ioctl":
            rec["ioctl"] = ioctl_label(ev)
            rec.update(svm_columns(ev))
        rows.append(rec)
    df = pd.DataFrame.from_records(rows, columns=list(ORDER))
    for c in _INT_COLUMNS:
        df[c] = _nullable_int(df[c])
    for c in ("time", "dur"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in ("file", "event", "name", "err", "ioctl", "op", "attr_shape"):
        df[c] = df[c].astype("string")
    return df


def analyze(paths, *, input_format=None, enabled=None, debug_dirs=(), fail_on="error",
            all_fds=False, jobs=1, on_event=None, progress=None, table=False):
    from rocrtrace.replay import analyze as run

    if jobs > 1 and len(paths) > 1 and on_event is None and not table:
        from rocrtrace.findings import number_collisions
        from rocrtrace.parallel import analyze_parallel

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
        result.table = events_frame_of(collected)
    return result


def events_frame(paths, *, input_format=None, jobs=1):
    opened = _open(paths, input_format, jobs)
    df = events_frame_of(ev for t in opened for ev in t.events())
    return df, [i for t in opened for i in t.infos]


def history(path, *, input_format=None, watch_fd=None, watch_addr=None):
    from rocrtrace.replay import build_models, replay

    models = build_models(watch_fd=watch_fd, watch_addr=watch_addr)
    (opened,) = _open([path], input_format)
    replay(opened.events(), models)
    watcher = models[2] if watch_addr is not None else models[0]
    return watcher.history, opened.infos


@contextmanager
def selected():
    """rocrtrace.engine runs the Python reference while this is open."""
    names = ("analyze", "events_frame", "history")
    saved = {n: getattr(_engine_front, n) for n in names}
    try:
        for n in names:
            setattr(_engine_front, n, globals()[n])
        yield
    finally:
        for n, f in saved.items():
            setattr(_engine_front, n, f)
