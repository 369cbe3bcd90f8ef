"""GitHub Actions workflow commands (annotations).

GitHub keeps at most 10 error, 10 warning and 10 notice annotations per step
(50 per job) and silently drops the rest, so the most severe findings go
first and, when some do not fit, one notice says how many more the report
holds.  The full table goes to ``$GITHUB_STEP_SUMMARY`` when it is set.
"""

from __future__ import annotations

import os

from .common import counts_line, evidence_line, primary_location, printable, subject_text
from .markdown import summary_table
from ..output import OutputError, write

PER_LEVEL = 10
COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}
# GitHub accepts up to 1 MiB of step summary per step.
SUMMARY_LIMIT = 1024 * 1024 - 4096


def escape_data(s) -> str:
    return str(s).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props) -> str:
    # Every value is shown, never obeyed: control characters and bidi
    # overrides escaped (rocrtrace.report.common.printable), then the
    # workflow-command escapes; the message keeps its own line breaks.
    ps = ",".join(f"{k}={escape_property(printable(v))}" for k, v in props.items() if v not in (None, ""))
    text = escape_data(printable(message, keep_newlines=True))
    return f"::{kind}{' ' + ps if ps else ''}::{text}"


def _message(f) -> str:
    lines = [printable(f.message)]
    extra = [x for x in (subject_text(f.subject), f.cause and f"cause: {f.cause}") if x]
    if extra:
        lines.append("; ".join(extra))
    if f.file:
        lines.append(f"trace: {printable(f.file)}:{f.line}")
    lines += [evidence_line(e) for e in f.evidence[:6]]
    if len(f.evidence) > 6:
        lines.append(f"... {len(f.evidence) - 6} more events in the report")
    return "\n".join(lines)


def select(findings, per_level: int = PER_LEVEL) -> tuple[list, int]:
    """The findings to annotate (most severe first) and how many are left
    out.  When any are left out, one notice slot is kept for saying so."""
    chosen: dict[str, list] = {"error": [], "warning": [], "note": []}
    dropped = 0
    for f in findings:
        bucket = chosen.get(f.severity)
        if bucket is None or len(bucket) >= per_level:
            dropped += 1
        else:
            bucket.append(f)
    if dropped and len(chosen["note"]) >= per_level:
        chosen["note"].pop()
        dropped += 1
    return chosen["error"] + chosen["warning"] + chosen["note"], dropped


def render(result, cwd: str | None = None, step_summary: str | None = None, **_opts) -> str:
    ordered = result.sorted_findings()
    shown, dropped = select(ordered)
    out = []
    for f in shown:
        file, line = primary_location(f, cwd)
        out.append(
            command(
                COMMANDS.get(f.severity, "warning"), _message(f), file=file, line=line, title=f"{f.rule} ({f.severity})"
            )
        )
    if dropped:
        out.append(
            command(
                "notice",
                f"{dropped} more finding{'' if dropped == 1 else 's'} "
                "in the report "
                "(GitHub shows at most 10 annotations of each level per step)",
                title="rocrtrace",
            )
        )
    s = result.summary()
    out.append(
        f"rocrtrace: {s['findings']} finding{'' if s['findings'] == 1 else 's'} "
        f"({counts_line(s)}), "
        f"{s['suppressed']} suppressed; "
        f"gate {'failed' if s['failed'] else 'passed'} at --fail-on {s['fail_on']}"
    )
    path = step_summary if step_summary is not None else os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        try:
            write_step_summary(path, result)
        except OutputError as e:
            # The annotations and the gate matter more than the summary: a
            # warning, and the run goes on.
            import sys

            print(f"{e} (step summary skipped)", file=sys.stderr)
    return "\n".join(out) + "\n"


def write_step_summary(path: str, result) -> None:
    """Append the summary table to ``path`` (never through a symlink, never
    onto a FIFO); an OutputError when it cannot be written."""
    text = "\n".join(summary_table(result, max_rows=500)) + "\n"
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > SUMMARY_LIMIT:
        data = data[:SUMMARY_LIMIT].rsplit(b"\n", 1)[0] + b"\n\n(truncated)\n"
    write(path, data, "the step summary ($GITHUB_STEP_SUMMARY)", append=True)
