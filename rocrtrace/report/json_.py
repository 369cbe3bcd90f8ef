"""The JSON report: ``result.to_dict()`` tagged with its schema."""

from __future__ import annotations

import json
import math

from .common import SCHEMA


def safe(obj):
    """``json.dumps`` default: models may leave sets, bytes or odd numbers in
    details; a report must still be valid JSON rather than a crash."""
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if isinstance(obj, bytes):
        return obj.hex()
    return str(obj)


def clean(obj):
    """NaN and infinities are not JSON; they become null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def document(result) -> dict:
    return {"schema": SCHEMA, **result.to_dict()}


def dumps(obj, indent: int | None = 2) -> str:
    # ASCII only: U+2028/U+2029 and NEL, legal raw in JSON strings, are line
    # breaks to str.splitlines() and to some JSONL readers.
    return json.dumps(clean(obj), indent=indent, default=safe, allow_nan=False)


def render(result, **_opts) -> str:
    return dumps(document(result)) + "\n"
