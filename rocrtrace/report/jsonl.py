"""JSON Lines: the findings table (rocrtrace/schema.py), one finding per
line with the table's columns as keys, for pandas and for diffing runs."""

from __future__ import annotations

from ..schema import FINDING_NAMES
from .common import table_rows
from .json_ import dumps


def render(result, cwd=None, **_opts) -> str:
    return "".join(dumps({k: row[k] for k in FINDING_NAMES}, indent=None) + "\n" for row in table_rows(result, cwd))
