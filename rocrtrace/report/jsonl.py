"""JSON Lines: one finding per line, the same keys on every line, for pandas
and for diffing runs."""
from __future__ import annotations

from .common import SCHEMA
from .json_ import dumps

KEYS = ("schema", "rule", "severity", "fingerprint", "message", "file", "line", "pid",
        "tid", "time", "subject", "cause", "evidence", "stack")


def record(f) -> dict:
    d = f.to_dict()
    d["schema"] = SCHEMA
    d.setdefault("cause", None)
    return {k: d.get(k) for k in KEYS}


def render(result, **_opts) -> str:
    return "".join(dumps(record(f), indent=None) + "\n" for f in result.sorted_findings())
