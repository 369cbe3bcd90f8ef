"""CSV: the findings table (rocrtrace/schema.py), one row per finding, for
spreadsheets and pandas (``rocrtrace.schema.read`` reads it back typed)."""

from __future__ import annotations

import csv
import io
import json
import re

from ..schema import FINDING_COLUMNS, FINDING_NAMES
from .common import printable, table_rows

# A cell a spreadsheet would evaluate as a formula (CSV injection): trace
# text is untrusted, so such cells get a leading apostrophe.
# "-" too (OWASP): "-2+3+cmd|' /C calc'!A0" runs like "=...".  A plain
# number ("-1", an fd) is left as it is, so the column stays numeric.
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_TYPES = {c.name: c.type for c in FINDING_COLUMNS}


def cell(v, type_: str = "string") -> str:
    """One value as its CSV cell: numbers as numbers (times in seconds),
    lists as JSON arrays, text made safe."""
    if v is None:
        return ""
    if type_ in ("evidence", "stack", "list<uint64>"):
        # ASCII JSON: control characters in trace text are \\u escapes
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return str(v)
    # Control characters from trace text (a decoded path may hold a newline
    # and then "::warning::", or an escape sequence) are shown, not obeyed,
    # by whatever prints the cell later: a CI log, a terminal, a sheet.
    s = printable(v)
    if s.startswith(_FORMULA) and not _NUMBER.match(s):
        s = "'" + s
    return s


def render(result, cwd=None, **_opts) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FINDING_NAMES)
    for row in table_rows(result, cwd):
        w.writerow([cell(row[k], _TYPES[k]) for k in FINDING_NAMES])
    return buf.getvalue()
