"""Reporters: render an analysis result (findings, inputs, coverage).

``render(result, fmt, **opts)`` returns the report as text.  Options a
format does not use are ignored, so the CLI can pass the same set to all:

* ``color`` (text): ANSI colour, only when asked;
* ``enabled`` or ``rules`` (junit, sarif): ids of the enabled rules, any
  iterable (default: all), listed in catalogue order;
* ``cwd`` (sarif, github): the repository root that source paths and
  trace files are made relative to (default: the working directory);
* ``step_summary`` (github): the file to append a markdown summary to
  (default: ``$GITHUB_STEP_SUMMARY``).

Each format lives in its own module, imported on first use: ``rocrtrace
--help`` must not pay for formats it does not render.
"""
from __future__ import annotations

import importlib

_MODULES = {
    "text": "text",
    "json": "json_",
    "jsonl": "jsonl",
    "csv": "csv_",
    "junit": "junit",
    "sarif": "sarif",
    "github": "github",
    "markdown": "markdown",
}
FORMATS = tuple(_MODULES)


def render(result, fmt: str, **opts) -> str:
    if fmt not in _MODULES:
        raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    mod = importlib.import_module(f".{_MODULES[fmt]}", __name__)
    return mod.render(result, **opts)
