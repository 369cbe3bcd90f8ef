"""``--format parquet:FILE``: the findings table (rocrtrace/schema.py), one
row per finding, for fleets that aggregate many runs (DuckDB, Spark,
pandas).  Times are timestamps, addresses unsigned integers; rows a
baseline suppressed come last with ``suppressed`` true."""

from __future__ import annotations

import io

from ..schema import FINDING_COLUMNS, arrow_table
from .common import table_rows

_TEXT = {c.name for c in FINDING_COLUMNS if c.type == "string"}


def _text(s):
    # Parquet strings are UTF-8: a surrogate-escaped path is shown escaped.
    if s is None:
        return None
    return str(s).encode("utf-8", "backslashreplace").decode("utf-8")


def _utf8(row: dict) -> dict:
    out = {k: _text(v) if k in _TEXT else v for k, v in row.items()}
    out["evidence"] = [{k: _text(v) if isinstance(v, str) else v for k, v in e.items()} for e in row["evidence"]]
    out["stack"] = [_text(s) for s in row["stack"]]
    return out


def render(result, cwd=None, **_opts) -> bytes:
    from . import need

    need("pyarrow.parquet", "parquet")
    import pyarrow.parquet as pq

    table = arrow_table([_utf8(r) for r in table_rows(result, cwd)], FINDING_COLUMNS)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
