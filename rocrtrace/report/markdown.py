"""Markdown for a PR comment or a job summary: the verdict, a table of the
findings, and the evidence of each in a collapsible block."""

from __future__ import annotations

import re

from .. import __version__
from .common import (
    by_rule,
    finding_lines,
    counts_line,
    location_text,
    primary_location,
    printable,
    source_frame,
    subject_text,
)

# GitHub renders inline HTML and markdown in table cells: escape what would
# change the structure or inject markup.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")


def md(text) -> str:
    s = printable(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def html(text) -> str:
    """For inside HTML blocks (<summary>), where markdown escapes would show."""
    return printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def code_block(lines: list[str]) -> str:
    body = "\n".join(printable(ln) for ln in lines)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def summary_table(result, max_rows: int | None = None, findings=None) -> list[str]:
    """The verdict, the counts and a table row per finding (``findings``:
    only these rows, the rest counted in a closing line)."""
    s = result.summary()
    verdict = "failed" if s["failed"] else "passed"
    n_in = len(result.inputs)
    out = [
        f"### rocrtrace {__version__}: {verdict} (--fail-on {s['fail_on']})",
        "",
        f"{_n(s['findings'], 'finding')} ({counts_line(s)}), {s['suppressed']} suppressed; "
        f"{_n(n_in, 'input')}, {_n(s['events'], 'event')}, "
        f"{_n(s['unparsed'], 'unparsed line')}.",
        "",
    ]
    if not result.findings:
        return out
    out += ["| severity | rule | message | where | subject |", "|---|---|---|---|---|"]
    from .text import _Names

    names = _Names(result)
    fs = result.sorted_findings() if findings is None else list(findings)
    rows = fs[:max_rows] if max_rows else fs
    out += [_row(f, names) for f in rows]
    left = len(result.findings) - len(rows)
    if left > 0:
        out.append(f"\n{_n(left, 'more finding')} not shown here: see the full report (--format json or text).")
    out.append("")
    return out


def _row(f, names) -> str:
    from .text import first_sentence

    msg = names.in_text(first_sentence(f.message))
    return f"| {f.severity} | `{f.rule}` | {md(msg)} | {md(_where(f, names))} | {md(subject_text(f.subject))} |"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _where(f, names=None) -> str:
    """The program's source line first where the stack has it,
    then the trace line and the process."""
    trace = (
        location_text(f)
        if names is None
        else " ".join(
            x
            for x in (
                (
                    f"{names(f.file)}:{f.line}"
                    if f.file and f.line is not None
                    else names(f.file)
                    if f.file
                    else "(whole input)"
                ),
                f"pid {f.pid}" if f.pid is not None else "",
            )
            if x
        )
    )
    if source_frame(f.stack):
        file, line = primary_location(f)
        return f"{file}:{line} ({trace})"
    return trace


def _details(f) -> str:
    lines = finding_lines(f, evidence_stacks=True)
    return (
        f"<details><summary>{f.severity} <code>{f.rule}</code>: {html(f.message)}"
        f"</summary>\n\n{code_block(lines)}\n\n</details>"
    )


# A GitHub comment (and an issue or PR body) holds at most 65,536
# characters; what does not fit is counted, not cut mid-block.
MAX_CHARS = 65536 - 1536


def render(result, max_chars: int | None = MAX_CHARS, **_opts) -> str:
    """The comment; ``max_chars`` caps its size (None: no cap): findings
    are taken most severe first while their table row and details fit,
    and one line says how many more the full report holds."""
    ordered = result.sorted_findings()
    blocks = {id(f): _details(f) + "\n" for f in ordered}
    shown = ordered
    if max_chars is not None:
        from .text import _Names

        names = _Names(result)
        fixed = len("\n".join(_head(result, [])))
        budget = max_chars - fixed - 400  # the closing lines, the group headers' slack
        shown = []
        used = 0
        for f in ordered:
            cost = len(_row(f, names)) + 1 + len(blocks[id(f)]) + 1 + 40  # + a group header
            if used + cost > budget:
                break
            shown.append(f)
            used += cost
    out = _head(result, shown)
    keep = {id(f) for f in shown}
    for rule, fs in by_rule(result.findings):
        mine = [f for f in fs if id(f) in keep]
        if not mine:
            continue
        out.append(f"#### `{rule}` ({len(fs)})")
        out.append("")
        out += [blocks[id(f)] for f in mine]
    left = len(ordered) - len(shown)
    if left:
        out.append(
            f"**{_n(left, 'more finding')} not shown** (a comment holds at most "
            "65,536 characters): see the full report (--format json or text)."
        )
    return "\n".join(out).rstrip("\n") + "\n"


def _head(result, shown) -> list[str]:
    out = summary_table(result, findings=shown)
    cov = result.coverage or {}
    if cov.get("cannot_show"):
        out.append("**This input cannot show:** " + "; ".join(md(x) for x in cov["cannot_show"]))
        out.append("")
    if cov.get("advice"):
        out.append("**Advice:** " + "; ".join(md(x) for x in cov["advice"]))
        out.append("")
    return out
