"""Markdown for a PR comment or a job summary: the verdict, a table of the
findings, and the evidence of each in a collapsible block."""
from __future__ import annotations

import re

from .. import __version__
from .common import (by_rule, finding_lines, counts_line, location_text, primary_location,
                     printable, source_frame, subject_text)

# GitHub renders inline HTML and markdown in table cells: escape what would
# change the structure or inject markup.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")


def md(text) -> str:
    s = printable(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def html(text) -> str:
    """For inside HTML blocks (<summary>), where markdown escapes would show."""
    return (printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def code_block(lines: list[str]) -> str:
    body = "\n".join(printable(ln) for ln in lines)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def summary_table(result, max_rows: int | None = None) -> list[str]:
    s = result.summary()
    verdict = "failed" if s["failed"] else "passed"
    out = [f"### rocrtrace {__version__}: {verdict} (--fail-on {s['fail_on']})", "",
           f"{s['findings']} findings ({counts_line(s)}), {s['suppressed']} suppressed; "
           f"{len(result.inputs)} inputs, {s['events']} events, {s['unparsed']} unparsed "
           "lines.", ""]
    if not result.findings:
        return out
    out += ["| severity | rule | message | where | subject |",
            "|---|---|---|---|---|"]
    from .text import _Names, first_sentence

    names = _Names(result)
    fs = result.sorted_findings()
    for f in fs[:max_rows] if max_rows else fs:
        msg = names.in_text(first_sentence(f.message))
        out.append(f"| {f.severity} | `{f.rule}` | {md(msg)} | {md(_where(f, names))} "
                   f"| {md(subject_text(f.subject))} |")
    if max_rows and len(fs) > max_rows:
        out.append(f"\n{len(fs) - max_rows} more findings in the full report.")
    out.append("")
    return out


def _where(f, names=None) -> str:
    """The program's source line first where the stack has it (SPEC 6),
    then the trace line and the process."""
    trace = location_text(f) if names is None else " ".join(
        x for x in ((f"{names(f.file)}:{f.line}" if f.file and f.line is not None
                     else names(f.file) if f.file else "(whole input)"),
                    f"pid {f.pid}" if f.pid is not None else "") if x)
    if source_frame(f.stack):
        file, line = primary_location(f)
        return f"{file}:{line} ({trace})"
    return trace


def _details(f) -> str:
    lines = finding_lines(f, evidence_stacks=True)
    return (f"<details><summary>{f.severity} <code>{f.rule}</code>: {html(f.message)}"
            f"</summary>\n\n{code_block(lines)}\n\n</details>")


def render(result, **_opts) -> str:
    out = summary_table(result)
    cov = result.coverage or {}
    if cov.get("cannot_show"):
        out.append("**This input cannot show:** " + "; ".join(md(x) for x in cov["cannot_show"]))
        out.append("")
    if cov.get("advice"):
        out.append("**Advice:** " + "; ".join(md(x) for x in cov["advice"]))
        out.append("")
    for rule, fs in by_rule(result.findings):
        out.append(f"#### `{rule}` ({len(fs)})")
        out.append("")
        out += [_details(f) + "\n" for f in fs]
    return "\n".join(out).rstrip("\n") + "\n"
