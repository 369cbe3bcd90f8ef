"""``--format html[:FILE]``: one self-contained triage page.

The page needs no network: its CSS and its few lines of script are inline,
its pictures are inline SVG, and a Content-Security-Policy forbids every
fetch.  It holds the verdict and counts, a list of the findings, then per
finding its headline (``SOURCE:LINE: severity[rule] message``), the whole
message, subject, cause, claims, a timeline picture and the evidence,
every call shown whole (never cut; long lines wrap), the stack, the
fix and the fingerprint; then the coverage section and the inputs.

The timeline draws the finding's events on one lane per thread, each as its
window [entry, entry + duration], numbered as in the evidence table below
it; a lane above them shows the subject's life as the evidence tells it (an
fd from its creation to its last close, an SVM claim from its grant on, the
victim still live after the hurting call), and a red line marks the
offending call.  Without timestamps the events are spaced in file order.

Everything that came from a trace or a file name is untrusted: it is made
printable (control characters and bidi overrides shown as escapes,
report.common.printable) and then HTML-escaped, in text and in attributes
alike; the script reads nothing of it.
"""

from __future__ import annotations

import html as _html

from .. import __version__
from ..rules import fix_of
from .common import by_rule, call_text, counts_line, printable, source_root, subject_text
from .text import CAUSES, _Names, _story, claim_text, first_sentence, headline_location

# The page may fetch nothing: no script, style, image or font from
# anywhere but itself (inline), no form or frame target, no base URL.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def esc(value) -> str:
    """Untrusted text for HTML text or a quoted attribute value."""
    return _html.escape(printable(value), quote=True)


CSS = """
:root { --err: #b3261e; --warn: #9a6700; --note: #0b6bcb; --ink: #1f2328; --dim: #59636e;
        --line: #d1d9e0; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       margin: 0 auto; padding: 16px 24px 48px; max-width: 1280px; }
h1 { font-size: 20px; margin: 8px 0; }
h2 { font-size: 16px; margin: 0 0 6px; font-weight: 600; word-break: break-word; }
h3 { font-size: 14px; margin: 14px 0 6px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
                   font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-all; margin: 0; }
.verdict { font-weight: 700; padding: 2px 8px; border-radius: 4px; color: #fff; }
.verdict.failed { background: var(--err); } .verdict.passed { background: #1a7f37; }
.sev { font-weight: 700; }
.sev.error { color: var(--err); } .sev.warning { color: var(--warn); } .sev.note { color: var(--note); }
.finding { border: 1px solid var(--line); border-left: 5px solid var(--line); border-radius: 6px;
           padding: 12px 16px; margin: 14px 0; }
.finding.error { border-left-color: var(--err); } .finding.warning { border-left-color: var(--warn); }
.finding.note { border-left-color: var(--note); }
.finding.hidden { display: none; }
.meta { color: var(--dim); margin: 2px 0 8px; }
.message { margin: 6px 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--bg); font-weight: 600; }
td.n { width: 2.5em; text-align: right; color: var(--dim); }
td.role { white-space: nowrap; }
td.where { white-space: nowrap; color: var(--dim); }
.timeline { margin: 8px 0; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
.timeline svg { display: block; width: 100%; height: auto; }
.help { color: #1a7f37; }
.fp { color: var(--dim); font-size: 12px; }
.filters label { margin-right: 12px; }
ul.cov { margin: 4px 0 10px; }
.toc td:first-child { white-space: nowrap; }
"""

# Shows and hides findings by severity, and counts what is shown.  It reads
# only the page's own data-severity attributes, never trace text.
SCRIPT = """
(function () {
  var boxes = document.querySelectorAll('input[data-sev]');
  function update() {
    var on = {};
    boxes.forEach(function (b) { on[b.getAttribute('data-sev')] = b.checked; });
    var shown = 0;
    document.querySelectorAll('section.finding').forEach(function (s) {
      var vis = on[s.getAttribute('data-severity')] !== false;
      s.classList.toggle('hidden', !vis);
      if (vis) { shown += 1; }
    });
    document.getElementById('shown').textContent = String(shown);
  }
  boxes.forEach(function (b) { b.addEventListener('change', update); });
  update();
})();
"""


def render(result, cwd: str | None = None, **_opts) -> str:
    root = source_root(cwd)
    names = _Names(result)
    ordered = [f for _, fs in by_rule(result.findings) for f in fs]
    s = result.summary()
    verdict = "failed" if s["failed"] else "passed"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>rocrtrace: {s['findings']} finding{'' if s['findings'] == 1 else 's'}, {verdict}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
    ]
    out += _header(result, s, verdict)
    out += _toc(ordered, root, names)
    out.append('<main id="findings">')
    for n, f in enumerate(ordered, 1):
        out += _finding(n, f, root, names)
    out.append("</main>")
    out += _coverage(result)
    out += _inputs(result)
    out += [f"<script>{SCRIPT}</script>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _header(result, s: dict, verdict: str) -> list[str]:
    n_in = len(result.inputs)
    out = [
        f"<header><h1>rocrtrace {esc(__version__)}: "
        f'<span class="verdict {verdict}" id="verdict">{verdict}</span> '
        f"(--fail-on {esc(s['fail_on'])})</h1>",
        f'<p id="summary">{_n(s["findings"], "finding")} ({esc(counts_line(s))})'
        + (f", {s['suppressed']} suppressed by baseline" if s["suppressed"] else "")
        + f" in {_n(n_in, 'input')} ({_n(s['lines'], 'line')}, {_n(s['events'], 'event')}, "
        f"{s['unparsed']} unparsed).</p>",
    ]
    if result.findings:
        boxes = " ".join(
            f'<label><input type="checkbox" data-sev="{sev}" checked> <span class="sev {sev}">{sev}</span></label>'
            for sev in ("error", "warning", "note")
        )
        out.append(f'<p class="filters">Show: {boxes} — <span id="shown">{len(result.findings)}</span> shown.</p>')
    out.append("</header>")
    return out


def _toc(ordered, root, names) -> list[str]:
    if not ordered:
        return ['<p id="clean">No findings.</p>']
    out = [
        "<h3>Findings</h3>",
        '<table class="toc"><tr><th>severity</th><th>rule</th><th>where</th><th>message</th></tr>',
    ]
    for n, f in enumerate(ordered, 1):
        where, _ = headline_location(f, root, names)
        out.append(
            f'<tr><td class="sev {esc(f.severity)}">{esc(f.severity)}</td>'
            f'<td><a href="#f{n}"><code>{esc(f.rule)}</code></a></td>'
            f'<td class="mono">{esc(where)}</td>'
            f"<td>{esc(names.in_text(first_sentence(f.message)))}</td></tr>"
        )
    out.append("</table>")
    return out


def _finding(n: int, f, root, names) -> list[str]:
    where, _ = headline_location(f, root, names)
    sev = esc(f.severity)
    out = [
        f'<section class="finding {sev}" id="f{n}" data-severity="{sev}" '
        f'data-rule="{esc(f.rule)}" data-fingerprint="{esc(f.fingerprint)}">',
        f'<h2 class="headline"><span class="mono">{esc(where)}:</span> '
        f'<span class="sev {sev}">{sev}[{esc(f.rule)}]</span> '
        f"{esc(names.in_text(first_sentence(f.message)))}</h2>",
    ]
    meta = []
    if f.file:
        meta.append(f"{names(f.file)}:{f.line}" if f.line is not None else names(f.file))
    if f.pid is not None:
        meta.append(f"pid {f.pid}")
    if f.tid is not None:
        meta.append(f"tid {f.tid}")
    if f.time is not None:
        meta.append(f"t={f.time:.6f}")
    if meta:
        out.append(f'<p class="meta mono">{esc(" ".join(meta))}</p>')
    if first_sentence(f.message) != f.message:
        out.append(f'<p class="message">{esc(names.in_text(f.message))}</p>')
    facts = []
    if f.subject:
        facts.append(("subject", subject_text(f.subject)))
    if f.cause:
        facts.append(("cause", f"{f.cause}" + (f" ({CAUSES[f.cause]})" if f.cause in CAUSES else "")))
    d = f.details or {}
    for key, label in (("released", "claim it released"), ("victim", "live claim it hurt"), ("claim", "claim")):
        v = d.get(key)
        for c in v if isinstance(v, list) else [v] if isinstance(v, dict) else []:
            facts.append((label, claim_text(c, names)))
    if facts:
        out.append(
            '<table class="facts">'
            + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
            + "</table>"
        )
    rows = _story(f)
    out += timeline(f, rows)
    if rows:
        out.append("<h3>Evidence</h3>")
        out.append('<table class="evidence"><tr><th>#</th><th>role</th><th>where</th><th>call</th></tr>')
        for k, (role, e, note) in enumerate(rows, 1):
            when = " ".join(
                x
                for x in (f"tid {e.tid}" if e.tid is not None else "", f"t={e.time:.6f}" if e.time is not None else "")
                if x
            )
            cell = f'<pre class="call">{esc(call_text(e, None, concise=False))}</pre>'
            if note:
                cell += f'<div class="note">{esc(note)}</div>'
            if e.stack and e is not f.event:
                cell += '<pre class="frames">' + "\n".join("  &gt; " + esc(fr.label()) for fr in e.stack) + "</pre>"
            out.append(
                f'<tr class="ev"><td class="n">{k}</td><td class="role">{esc(role)}</td>'
                f'<td class="where mono">{esc(names(e.file))}:{e.line}'
                f"<br>{esc(when)}</td><td>{cell}</td></tr>"
            )
        out.append("</table>")
    if f.stack:
        out.append("<h3>Stack</h3>")
        out.append(
            '<pre class="stack">' + "\n".join(f"#{i} {esc(fr.label())}" for i, fr in enumerate(f.stack)) + "</pre>"
        )
    fix = fix_of(f.rule)
    if fix:
        out.append(f'<p class="help"><b>help:</b> {esc(fix)}</p>')
    out.append(f'<p class="fp mono">fingerprint {esc(f.fingerprint)}</p>')
    out.append("</section>")
    return out


# --- the timeline picture ---------------------------------------------------------

W, LEFT, RIGHT, LANE, TOP = 960, 150, 20, 30, 26


def _fmt_span(sec: float) -> str:
    us = sec * 1e6
    if abs(us) < 1000:
        return f"{us:.0f} µs"
    if abs(us) < 1e6:
        return f"{us / 1000:.3g} ms"
    return f"{sec:.3g} s"


def timeline(f, rows) -> list[str]:
    """The finding's events on per-thread lanes as inline SVG (the module
    docstring says what it shows)."""
    if not rows:
        return ['<p class="timeline-none meta">No timeline: this finding is about the whole input, not a call.</p>']
    timed = all(e.time is not None for _, e, _ in rows)
    if timed:
        starts = [e.time for _, e, _ in rows]
        ends = [e.time + (e.dur or 0.0) for _, e, _ in rows]
    else:  # file order, one slot each
        starts = [float(i) for i in range(len(rows))]
        ends = [s + 0.6 for s in starts]
    t0, t1 = min(starts), max(ends)
    span = (t1 - t0) or 1e-6
    t0, t1 = t0 - span * 0.04, t1 + span * 0.04
    scale = (W - LEFT - RIGHT) / (t1 - t0)

    def x(t: float) -> float:
        return LEFT + (t - t0) * scale

    tids = []
    for _, e, _ in rows:
        key = e.tid if e.tid is not None else e.pid
        if key not in tids:
            tids.append(key)
    subject = _subject_life(f, rows, starts, ends)
    lanes = (1 if subject else 0) + len(tids)
    height = TOP + lanes * LANE + 28
    out = [
        f'<div class="timeline"><svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {W} {height}" width="{W}" height="{height}" '
        f'aria-label="timeline of finding {esc(f.rule)}">',
        '<text x="8" y="16" font-size="12" fill="#59636e">'
        + (
            f"t0 = {t0 + span * 0.04:.6f} s; windows [entry, entry + duration]"
            if timed
            else "no timestamps in this trace: events in file order"
        )
        + "</text>",
    ]
    lane_y = TOP
    if subject:
        a, b, label, live = subject
        out.append(_lane_label(lane_y, label, "subject"))
        xa, xb = x(a), (W - RIGHT if live else x(b))
        out.append(
            f'<rect class="life" x="{xa:.1f}" y="{lane_y + 8}" '
            f'width="{max(xb - xa, 3):.1f}" height="{LANE - 16}" rx="3" '
            f'fill="#d8e6f7" stroke="#0b6bcb"><title>{esc(label)}</title></rect>'
        )
        lane_y += LANE
    row_of = {key: i for i, key in enumerate(tids)}
    for key in tids:
        y = lane_y + row_of[key] * LANE
        out.append(_lane_label(y, f"tid {key}" if key is not None else "thread ?", "thread"))
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y + LANE / 2}" y2="{y + LANE / 2}" stroke="#d1d9e0"/>')
    offending = f.event
    for k, ((role, e, _), a, b) in enumerate(zip(rows, starts, ends), 1):
        key = e.tid if e.tid is not None else e.pid
        y = lane_y + row_of[key] * LANE
        xa = x(a)
        w = max(x(b) - xa, 4.0)
        colour = "#b3261e" if e is offending else "#0b6bcb"
        tip = f"{k}. {role} — {e.file}:{e.line} — {call_text(e, 160)}"
        if e.event == "Intent":
            # a runtime call: its window encloses the ioctls it issued, so
            # it is drawn hollow behind them, numbered at its left end
            shape = (
                f'<rect x="{xa:.1f}" y="{y + 3}" width="{w:.1f}" height="{LANE - 6}" '
                f'rx="3" fill="none" stroke="{colour}" stroke-width="1.5">'
            )
            label_x, anchor = xa + 2, "start"
        else:
            shape = (
                f'<rect x="{xa:.1f}" y="{y + 8}" width="{w:.1f}" height="{LANE - 16}" '
                f'rx="2" fill="{colour}" fill-opacity="0.85">'
            )
            label_x, anchor = xa + w / 2, "middle"
        out.append(
            f'<g class="ev" data-n="{k}">{shape}<title>{esc(tip)}</title></rect>'
            f'<text x="{label_x:.1f}" y="{y + 2}" font-size="10" '
            f'text-anchor="{anchor}" fill="{colour}">{k}</text></g>'
        )
    if offending is not None:
        at = next((a for (_, e, _), a in zip(rows, starts) if e is offending), None)
        if at is not None:
            out.append(
                f'<line class="offending" x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{TOP - 4}" '
                f'y2="{lane_y + len(tids) * LANE}" stroke="#b3261e" '
                f'stroke-dasharray="4 3"/>'
            )
    axis_y = lane_y + len(tids) * LANE + 16
    if timed:
        for i in range(5):
            t = t0 + span * 0.04 + i * span / 4
            out.append(
                f'<text x="{x(t):.1f}" y="{axis_y}" font-size="10" fill="#59636e" '
                f'text-anchor="middle">+{esc(_fmt_span(t - (t0 + span * 0.04)))}</text>'
            )
    out.append("</svg></div>")
    return out


def _lane_label(y: float, label: str, kind: str) -> str:
    short = label.split(":", 1)[0]
    short = short if len(short) <= 22 else short[:21] + "…"
    return (
        f'<g><title>{esc(label)}</title><text class="lane {kind}" x="8" '
        f'y="{y + LANE / 2 + 4}" font-size="12" fill="#1f2328">{esc(short)}</text></g>'
    )


def _subject_life(f, rows, starts, ends):
    """(start, end, label, still live at the right edge) of the subject as
    the evidence shows it, or None: an fd from the first evidence event to
    the last (its creation to its last close), an SVM claim from its grant
    (the victim's own time where the finding names it) on."""
    subj = f.subject or {}
    kind = subj.get("kind")
    if kind not in ("fd", "svm-range", "handle"):
        return None
    label = {"fd": f"fd {subj.get('fd')}", "handle": "buffer handle"}.get(kind, "victim claim")
    a, b = min(starts), max(ends)
    live = False
    if kind == "svm-range":
        victim = (f.details or {}).get("victim") or (f.details or {}).get("claim")
        if (
            isinstance(victim, dict)
            and isinstance(victim.get("time"), (int, float))
            and all(e.time is not None for _, e, _ in rows)
        ):
            a = victim["time"]  # the victim's own grant, not the story's start
        live = f.rule in ("svm-over-revoke", "svm-coherency-downgrade")
    return a, b, f"{label}: {subject_text(subj)}", live


def _coverage(result) -> list[str]:
    cov = result.coverage or {}
    labels = (("shows", "This input shows"), ("cannot_show", "It cannot show"), ("advice", "Advice"))
    out = ['<section id="coverage"><h3>Coverage</h3>']
    if not any(cov.get(k) for k, _ in labels):
        out.append("<p>Nothing to say.</p>")
    for key, label in labels:
        items = cov.get(key) or []
        if items:
            out.append(
                f'<p><b>{label}:</b></p><ul class="cov">' + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
            )
    out.append("</section>")
    return out


def _inputs(result) -> list[str]:
    out = [
        '<section id="inputs"><h3>Inputs</h3>',
        "<table><tr><th>file</th><th>format</th><th>lines</th><th>events</th><th>unparsed</th></tr>",
    ]
    for i in result.inputs:
        out.append(
            f'<tr><td class="mono">{esc(i.file)}</td><td>{esc(i.format)}</td>'
            f"<td>{i.lines}</td><td>{i.events}</td><td>{i.unparsed}</td></tr>"
        )
    out.append("</table></section>")
    return out
