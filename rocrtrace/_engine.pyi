"""Types of rocrtrace._engine, the compiled core (src/lib.rs, src/py/).

What the package calls is declared here; tests/test_engine_boundary.py checks
that the module holds exactly these names (plus, in a build with the
``hooks`` feature, the test and benchmark entry points listed at the end).
Each analysis returns one report per run (runs are kept apart); an input error raises
ReadError (or, with ``keep_going``, becomes a report ``{"error": message}``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypedDict

from typing_extensions import NotRequired

from .events import Event, InputInfo
from .findings import Finding

# An event table column: ("int", values, null mask, [(row, wide value)]),
# ("float", values) or ("text", int32 codes, categories); see src/table.rs.
Column = tuple[Any, ...]
Columns = dict[str, Column]

class Report(TypedDict):
    """One run's analysis."""

    inputs: list[InputInfo]
    findings: list[Finding]
    # what the trace cannot show (the coverage section's "cannot show")
    limits: list[str]
    # what the trace shows of the SVM runtime's behaviour ("SVM runtime: ...")
    svm_runtime: list[str]
    # (SVM ioctls, GPU calls) seen
    facts: tuple[int, int]
    # pid -> executable path
    exe: dict[int | None, str]
    # the module maps (ModuleMap events) for symbolization
    maps: list[Event]
    # the trace was read in this many chunks (--jobs)
    chunks: int
    # inputs skipped as not traces (one line each)
    skipped: list[str]
    # with table=True
    table: NotRequired[Columns]
    # analyze_calls only: the perfetto report's call columns
    calls: NotRequired[Columns]

class ErrorReport(TypedDict):
    """A run that could not be read (keep_going=True)."""

    error: str

class ReadError(Exception):
    """An input the reader cannot read or recognize; str() is the one-line message."""

def analyze(
    paths: Sequence[str],
    input_format: str | None = None,
    max_line: int = ...,
    all_fds: bool = False,
    table: bool = False,
    jobs: int = 1,
    progress: Callable[..., Any] | None = None,
    chunking: tuple[int, int] | None = None,
    keep_going: bool = False,
) -> list[Report | ErrorReport]: ...
def analyze_calls(
    paths: Sequence[str],
    input_format: str | None = None,
    max_line: int = ...,
    all_fds: bool = False,
    table: bool = False,
    jobs: int = 1,
    chunking: tuple[int, int] | None = None,
    keep_going: bool = False,
) -> list[Report | ErrorReport]: ...
def analyze_events(
    path: str,
    on_event: Callable[[Event], Any],
    input_format: str | None = None,
    max_line: int = ...,
    all_fds: bool = False,
    table: bool = False,
    jobs: int = 1,
    chunking: tuple[int, int] | None = None,
) -> Report | list[Report]: ...
def events_table(
    paths: Sequence[str],
    input_format: str | None = None,
    max_line: int = ...,
    jobs: int = 1,
    chunking: tuple[int, int] | None = None,
) -> tuple[Columns, list[InputInfo]]: ...
def event_batches(
    paths: Sequence[str],
    on_batch: Callable[[Columns], Any],
    input_format: str | None = None,
    max_line: int = ...,
    jobs: int = 1,
    chunking: tuple[int, int] | None = None,
    batch_rows: int = 65536,
) -> list[InputInfo]: ...
def history(
    path: str,
    input_format: str | None = None,
    watch_fd: tuple[int | None, int] | None = None,
    watch_addr: Sequence[int | None] | None = None,
) -> tuple[list[tuple[Event, str, Any]], list[InputInfo]]: ...
def table_of_events(events: Sequence[Event]) -> Columns: ...
def input_formats() -> list[str]: ...  # the dialects' names, as --input-format takes them

class RuleEntry(TypedDict):
    """One rule of the catalogue (src/rules.rs); rocrtrace/rules.py's Rule."""

    id: str
    severity: str  # the default: "error", "warning" or "note"
    summary: str
    help: str
    example: str
    fix: str

def rule_catalogue() -> list[RuleEntry]: ...

# The `hooks` feature adds (tests and benchmarks only; the package build has none):
# hooks: FdModels, parse_lines, parse_tinygrad_lines, read_input, roundtrip_events,
# hooks: run_fd_models, run_svm_model, time_fd_models, time_svm_model, trace_events
