"""Reporters: render an analysis result (findings, inputs, coverage).

``render(result, fmt, **opts)`` returns the report as text (bytes for the
binary formats, perfetto and parquet).  Options a
format does not use are ignored, so the CLI can pass the same set to all:

* ``color`` (text): ANSI colour, only when asked;
* ``enabled`` or ``rules`` (junit, sarif): ids of the enabled rules, any
  iterable (default: all), listed in catalogue order;
* ``cwd`` (sarif, github): the repository root that source paths and
  trace files are made relative to (default: the working directory);
* ``events`` (perfetto): the EventSink that watched the replay; without it
  only the findings' own events are drawn;
* ``verbose``, ``quiet`` (text): the full diagnosis, or headlines only;
* ``step_summary`` (github): the file to append a markdown summary to
  (default: ``$GITHUB_STEP_SUMMARY``).

Each format lives in its own module, imported on first use: ``rocrtrace
--help`` must not pay for formats it does not render.
"""

from __future__ import annotations

import importlib

# Every report format once: its module, what ``--format`` help says of it
# (empty: the name says enough) and whether it is binary (needs a file).
# The CLI's choices, its --help text and this package's dispatch all read
# this table.
_FORMATS: dict[str, tuple[str, str, bool]] = {
    "text": ("text", "", False),
    "json": ("json_", "", False),
    "jsonl": ("jsonl", "", False),
    "csv": ("csv_", "", False),
    "junit": ("junit", "", False),
    "sarif": ("sarif", "", False),
    "github": ("github", "", False),
    "markdown": ("markdown", "", False),
    "html": ("html", "a self-contained triage page with a timeline per finding", False),
    "perfetto": ("perfetto", "a Perfetto trace", True),
    "parquet": ("parquet", "the findings table", True),
}
_MODULES = {name: mod for name, (mod, _, _) in _FORMATS.items()}
FORMATS = tuple(_FORMATS)
BINARY_FORMATS = tuple(name for name, (_, _, binary) in _FORMATS.items() if binary)


def format_help() -> str:
    """The formats as ``--format`` help lists them: ``text, json, …,
    perfetto:FILE (a Perfetto trace), …``."""
    parts = []
    for name, (_, what, binary) in _FORMATS.items():
        label = f"{name}:FILE" if binary else name
        parts.append(f"{label} ({what})" if what else label)
    return ", ".join(parts)


class MissingDependency(Exception):
    """A format whose library is not installed: the user's to fix (exit 2)."""


# The libraries a format needs beyond the standard library and the base
# install's others; all are base dependencies (pyproject.toml), so this is
# only ever missing from a broken environment.
NEEDS = {"perfetto": "perfetto.trace_builder.proto_builder", "parquet": "pyarrow.parquet"}


def need(module: str, extra: str = ""):
    """Import a library a format needs, or say how to get it back."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"rocrtrace: this format needs {module.split('.')[0]}, "
            "a dependency of rocrtrace that is not installed here: "
            "reinstall rocrtrace (pip install .)"
        ) from None


def check_formats(formats) -> None:
    """Every format's library imports, before the analysis runs and before
    any output is written (not after the other outputs were)."""
    for fmt in formats:
        if fmt in NEEDS:
            need(NEEDS[fmt])


def render(result, fmt: str, **opts) -> str:
    if fmt not in _MODULES:
        raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    mod = importlib.import_module(f".{_MODULES[fmt]}", __name__)
    return mod.render(result, **opts)
