"""The event table built row by row from the events' records: the way the
Python engine built it, kept as the simple reference the core's columnar
table (src/table.rs, tables.frame_from_columns) is compared with
(tests/test_engine_table.py)."""

from __future__ import annotations

from rocrtrace import kfd, tables

# Columns that hold integers or nothing: nullable Int64 keeps them integers
# in CSV/JSONL/parquet instead of floats with NaN.
_INT_COLUMNS = ("line", "seq", "pid", "tid", "ret", "fd", "type", "nr", "size", "request", "length", "nattr")
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
    return {
        "op": OP_NAMES.get(op, None if op is None else str(op)),
        "nattr": nattr,
        "attr_shape": tables.attr_shape(attrs) if attrs else None,
    }


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
    if any(v is not None and not -(2**63) <= v < 2**63 for v in vals):
        return pd.Series([None if v is None else str(v) for v in vals], dtype="string", index=col.index)
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
