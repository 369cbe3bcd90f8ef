"""The terminal report.

Concise by default, as compilers and linters are: per finding one
headline ``SOURCE:LINE: severity[rule] message``, then the events that prove
it, each once, with ``file:line tid time``, and a ``help:`` line with the
fix.  ``verbose`` adds the full message and diagnosis, the coverage section,
the inputs and every caveat; ``quiet`` prints the headlines alone.

Like every reporter it reads only the fields of findings, evidence and
events (rule, severity, message, file, line, pid, tid, time, subject, cause,
details, fingerprint; event file, line, tid, time, text, stack), never the
models or event classes.
"""

from __future__ import annotations

import re

from .. import __version__
from ..rules import fix_of
from .common import by_rule, call_text, counts_line, cut, hexs, location_frame, pages, printable, source_root, to_int


def tabulate(*args, **kw) -> str:
    """tabulate's table, imported when a report first draws one (its import
    reads package metadata: ~70 ms of a run that prints no table)."""
    from tabulate import tabulate as draw

    return draw(*args, **kw)


_COLORS = {"error": "1;31", "warning": "1;33", "note": "1;36", "bold": "1", "dim": "2", "ok": "32", "help": "1;32"}

# Plain words for the causes svm-over-revoke names.
CAUSES = {
    "shared-page": "the claims meet only on boundary pages: the revoke of one takes the shared page from the other",
    "enclosing-range": "the victim starts left of the revoke and covers it",
    "grown-extent": "the revoke reaches past the claim it releases",
    "cross-thread-order": "the victim was granted on another thread after the revoking "
    "deregistration began, or their windows overlap",
}

CALL_WIDTH = 200  # a call line of the concise report, off a terminal
VERBOSE_CALL_WIDTH = None  # --verbose: every call whole
MAX_EVIDENCE = 8  # events per finding in the concise report


class _Style:
    def __init__(self, color: bool):
        self.color = color

    def __call__(self, text: str, what: str) -> str:
        if not self.color or what not in _COLORS:
            return text
        return f"\x1b[{_COLORS[what]}m{text}\x1b[0m"


# ``PATH:`` followed by a line number, PATH one token (no space, colon,
# parenthesis or comma)
_PATH_REF = re.compile(r"([^\s:(),]+):(?=\d)")


def _base_name(path: str) -> str:
    """A trace file's short name: its base name, except for a process
    substitution or an inherited descriptor (``<(zcat log)`` is /dev/fd/63),
    whose number alone would read as a line number ("63:20:")."""
    if path.startswith(("/dev/fd/", "/proc/self/fd/")) or (path.startswith("/proc/") and "/fd/" in path):
        return path
    return path.rsplit("/", 1)[-1]


class _Names:
    """Trace files by base name when that is unambiguous: the full path of
    every evidence line is noise in a one-input report."""

    def __init__(self, result):
        files = [i.file for i in result.inputs if i.file]
        for f in [*result.findings, *result.suppressed]:
            if f.file:
                files.append(f.file)
        base: dict[str, set] = {}
        for p in files:
            base.setdefault(_base_name(p), set()).add(p)
        self.short = {p: b for b, ps in base.items() if len(ps) == 1 for p in ps}
        self._long = {p: b for p, b in self.short.items() if p != b}
        # paths with a space or a colon cannot be found as one token: then
        # (and with few files) every path is looked for in the text
        self._few = len(self._long) <= 32 or any(" " in p or ":" in p for p in self._long)

    def __call__(self, path) -> str:
        if not path:
            return "-"
        return printable(self.short.get(path, path))

    def in_text(self, text: str) -> str:
        """The models' messages name trace files in full (``PATH:LINE``):
        the short name here too, where it is unambiguous.  Each ``PATH:``
        in the text is looked up, so the pass costs the message's length,
        not the number of files (10k -ff files x 10k findings)."""
        if ":" not in text or not self._long:
            return text
        if self._few:
            for path, short in self._long.items():
                if path + ":" in text:
                    text = text.replace(path + ":", short + ":")
            return text
        return _PATH_REF.sub(lambda m: self._long.get(m.group(1), m.group(1)) + ":", text)


def _when(e) -> str:
    bits = []
    if e.tid is not None:
        bits.append(f"tid {e.tid}")
    if e.time is not None:
        bits.append(f"t={e.time:.6f}")
    return " ".join(bits)


def _loc(fr, path) -> str:
    fn = fr.function or fr.symbol
    where = f"{printable(path)}:{fr.source_line}" if path else printable(fr.module.rsplit("/", 1)[-1])
    return where + (f" {printable(fn)}" if fn else "")


def headline_location(f, root, names) -> tuple[str, bool]:
    """(``SOURCE:LINE`` or ``TRACE:LINE``, whether it is a source line)."""
    hit = location_frame(f.stack, root)
    if hit and hit[1]:
        return f"{printable(hit[1])}:{hit[0].source_line}", True
    if not f.file:
        return "(whole input)", False
    if f.line is None:
        return names(f.file), False
    return f"{names(f.file)}:{f.line}", False


def first_sentence(msg: str) -> str:
    """The message's first sentence: the models' later sentences retell the
    evidence, which the report prints itself."""
    m = re.search(r"(?<=[a-z0-9)\]])\. (?=[A-Z])", msg)
    return msg[: m.start() + 1] if m else msg


def render(
    result,
    color: bool = False,
    verbose: bool = False,
    quiet: bool = False,
    cwd: str | None = None,
    width: int | None = None,
    **_opts,
) -> str:
    """``width``: the terminal's columns, when the report goes to one; call
    lines are cut to fit it (and to CALL_WIDTH elsewhere)."""
    st = _Style(color)
    root = source_root(cwd)
    names = _Names(result)
    ordered = _ordered(result)
    out: list[str] = []
    if quiet:
        for f in ordered:
            out.append(_headline(f, st, root, names, full=False))
        return "\n".join(out) + ("\n" if out else "")
    if verbose:
        out += _verbose_top(result, st)
    shown: set[int] = set()
    call_width = max(80, width) if width else CALL_WIDTH
    for f in ordered:
        if verbose:
            out += _verbose_finding(f, st, root, names, shown)
        else:
            out += _concise_finding(f, st, root, names, shown, call_width)
    out += _summary(result, st, verbose)
    return "\n".join(out) + "\n"


def _ordered(result) -> list:
    """Grouped by rule, most severe group first; in a group, trace order."""
    return [f for _, fs in by_rule(result.findings) for f in fs]


def _headline(f, st, root, names, full: bool) -> str:
    where, _ = headline_location(f, root, names)
    msg = printable(names.in_text(f.message if full else first_sentence(f.message)))
    return st(where + ":", "bold") + " " + st(f"{f.severity}[{f.rule}]", f.severity) + " " + msg


def _story(f) -> list:
    """The evidence, each event once, in time order (the offending call's own
    evidence entry included); the offending call is added if no entry names
    it."""
    seen: set[int] = set()
    rows = []
    for ev in f.evidence:
        if id(ev.event) in seen:
            continue
        seen.add(id(ev.event))
        rows.append((ev.role, ev.event, ev.note))
    if f.event is not None and id(f.event) not in seen:
        rows.append(("the call", f.event, ""))
    rows.sort(key=lambda r: (r[1].time if r[1].time is not None else float("-inf"), r[1].file or "", r[1].line or 0))
    return rows


def _concise_finding(f, st, root, names, shown: set, call_width: int = CALL_WIDTH) -> list[str]:
    out = [_headline(f, st, root, names, full=False)]
    rows = _story(f)
    where, is_source = headline_location(f, root, names)
    if not rows and f.file and is_source:
        out.append(f"  --> {names(f.file)}:{f.line}")
    width = min(max((len(printable(r)) for r, _, _ in rows[:MAX_EVIDENCE]), default=0), 40)
    for role, e, note in rows[:MAX_EVIDENCE]:
        out.append(_event_line(role, e, note, width, names, root, shown, call_width))
    if len(rows) > MAX_EVIDENCE:
        out.append(f"  … {len(rows) - MAX_EVIDENCE} more events (--verbose)")
    if f.rule == "trace-unparsed":
        for s in ((f.details or {}).get("samples") or [])[:3]:
            out.append(f"  {names(f.file)}:{s.get('line')}: " + printable(cut(str(s.get("text", "")), CALL_WIDTH)))
    fix = fix_of(f.rule)
    if fix:
        out.append("  " + st("help:", "help") + " " + fix)
    out.append("")
    return out


def _event_line(
    role, e, note, width, names, root, shown: set, call_width: int, ind: str = "  ", concise: bool = True
) -> str:
    """``role  file:line tid time  source`` and, indented below it, the call
    (once per report: later mentions say so)."""
    head = f"{ind}{printable(role).ljust(width)}  {names(e.file)}:{e.line}"
    when = _when(e)
    if when:
        head += " " + when
    hit = location_frame(e.stack, root) if e.stack else None
    if hit:
        head += "  " + _loc(*hit)
    if note and not e.stack:
        head += f"  ({printable(note)})"
    if id(e) in shown:
        return head + "  (shown above)"
    shown.add(id(e))
    pad = ind + "    "
    width = None if call_width is None else max(40, call_width - len(pad))
    return head + "\n" + pad + call_text(e, width, concise)


def _summary(result, st, verbose: bool) -> list[str]:
    s = result.summary()
    n_in = len(result.inputs)
    verdict = st("FAILED", "error") if s["failed"] else st("passed", "ok")
    counts = (
        f"{s['findings']} finding{'' if s['findings'] == 1 else 's'} ({counts_line(s)})"
        if s["findings"]
        else "no findings"
    )
    out = [
        f"{counts} in {n_in} input{'' if n_in == 1 else 's'} ({s['lines']} lines, "
        f"{s['events']} events, {s['unparsed']} unparsed)"
        + (f", {s['suppressed']} suppressed by baseline" if s["suppressed"] else "")
        + f"; --fail-on {s['fail_on']}: {verdict}"
    ]
    cannot = (result.coverage or {}).get("cannot_show") or []
    if cannot and not verbose:
        out.append(
            st(
                f"{len(cannot)} thing{'' if len(cannot) == 1 else 's'} this input cannot show: --verbose lists them",
                "dim",
            )
        )
    return out


# --- verbose ------------------------------------------------------------------


def _verbose_top(result, st) -> list[str]:
    out = [st(f"rocrtrace {__version__}", "bold"), ""]
    out += _coverage(result, st)
    out += _inputs(result, st)
    return out


def _coverage(result, st) -> list[str]:
    cov = result.coverage or {}
    out = []
    labels = (("shows", "This input shows"), ("cannot_show", "It cannot show"), ("advice", "Advice"))
    if not any(cov.get(k) for k, _ in labels):
        return out
    out.append(st("Coverage", "bold"))
    for key, label in labels:
        items = cov.get(key) or []
        if items:
            out.append(f"  {label}:")
            out += [f"    - {printable(x)}" for x in items]
    out.append("")
    return out


def _inputs(result, st) -> list[str]:
    if not result.inputs:
        return []
    rows = [[printable(i.file), i.format, i.lines, i.events, i.unparsed] for i in result.inputs]
    out = [st("Inputs", "bold")]
    out += ["  " + ln for ln in tabulate(rows, headers=["file", "format", "lines", "events", "unparsed"]).splitlines()]
    out.append("")
    return out


def _verbose_finding(f, st, root, names, shown: set) -> list[str]:
    ind = "    "
    out = [_headline(f, st, root, names, full=True)]
    where, is_source = headline_location(f, root, names)
    bits = [f"pid {f.pid}"] if f.pid is not None else []
    if f.event is not None and _when(f.event):
        bits.append(_when(f.event))
    if is_source and f.file:
        trace_at = f"{names(f.file)}:{f.line}" if f.line is not None else names(f.file)
        out.append(f"  --> {' '.join([trace_at, *bits])}")
    elif bits:
        out.append(f"  at {' '.join(bits)}")
    if f.event is not None and f.event.text:
        out.append(f"{ind}call: {call_text(f.event, VERBOSE_CALL_WIDTH, concise=False)}")
    if f.cause:
        out.append(f"{ind}cause: {f.cause}" + (f" ({CAUSES[f.cause]})" if f.cause in CAUSES else ""))
    out += [ind + ln for ln in _subject_table(f.subject)]
    out += [ind + ln for ln in _details(f, names)]
    rows = _story(f)
    if rows:
        out.append(f"{ind}evidence:")
        width = min(max(len(printable(r)) for r, _, _ in rows), 40)
        for role, e, note in rows:
            first = id(e) not in shown
            out.append(
                _event_line(role, e, "", width, names, root, shown, VERBOSE_CALL_WIDTH, ind=ind + "  ", concise=False)
            )
            if note:
                out.append(f"{ind}    note: {printable(note)}")
            if first and e is not f.event:
                out += [f"{ind}      > {printable(fr.label())}" for fr in e.stack]
    if f.stack:
        out.append(f"{ind}stack:")
        out += [f"{ind}  #{n} {printable(fr.label())}" for n, fr in enumerate(f.stack)]
    fix = fix_of(f.rule)
    if fix:
        out.append(f"{ind}" + st("help:", "help") + " " + fix)
    out.append(st(f"{ind}fingerprint {f.fingerprint}", "dim"))
    out.append("")
    return out


def _subject_table(subject: dict | None) -> list[str]:
    if not subject:
        return []
    kind = subject.get("kind")
    if kind == "svm-range":
        start, end = to_int(subject.get("start")), to_int(subject.get("end"))
        size = end - start if start is not None and end is not None else None
        row = [
            hexs(subject.get("start")),
            hexs(subject.get("end")),
            "" if size is None else f"{size:#x}",
            "" if size is None else pages(size),
            ", ".join(hexs(g) for g in subject.get("gpu_ids") or []) or "-",
        ]
        return tabulate([row], headers=["start", "end (excl.)", "size", "pages", "gpus"]).splitlines()
    if kind == "fd":
        row = [subject.get("fd"), subject.get("fd_kind") or "-"]
        extra = {k: v for k, v in subject.items() if k not in ("kind", "fd", "fd_kind")}
        heads = ["fd", "kind"] + list(extra)
        row += [printable(plain(v)) for v in extra.values()]
        return tabulate([row], headers=heads).splitlines()
    if kind == "handle":
        return [f"handle: {hexs(subject.get('handle'))}"]
    if kind in ("process", "input"):
        return []
    return ["subject: " + printable(plain(subject))]


# details keys that are bookkeeping for other formats, not news to a reader
_QUIET_KEYS = {"baseline", "exited", "samples"}


def _details(f, names) -> list[str]:
    d = f.details or {}
    out = []
    for key in ("released", "victim", "claim"):
        v = d.get(key)
        claims = v if isinstance(v, list) else [v] if isinstance(v, dict) else []
        label = {"released": "claim it released", "victim": "live claim it hurt", "claim": "claim"}[key]
        for c in claims:
            out.append(f"{label}: {claim_text(c, names)}")
    for k, v in d.items():
        if k in ("released", "victim", "claim") or k in _QUIET_KEYS:
            continue
        if v in (None, "", [], {}) or isinstance(v, bool):
            continue
        out.append(f"{k.replace('_', ' ')}: {printable(plain(v))}")
    return out


def claim_text(c: dict, names=None) -> str:
    """One SVM claim as a sentence, empty parts left out."""
    start, end = to_int(c.get("start")), to_int(c.get("end"))
    s = f"{c.get('kind', '')} claim".strip()
    if start is not None and end is not None:
        n = c.get("pages")
        s += f" [{hexs(start)}, {hexs(end)})" + (f" {n} page{'' if n == 1 else 's'}" if isinstance(n, int) else "")
    gpus = c.get("gpus") or []
    if gpus:
        s += " gpus " + ", ".join(hexs(g) for g in gpus)
    if c.get("flags"):
        s += f" flags {printable(c['flags'])}"
    if c.get("file"):
        where = names(c["file"]) if names else printable(c["file"])
        s += f", from {where}:{c.get('line')}"
        if c.get("tid") is not None:
            s += f" tid {c['tid']}"
    return s


def plain(v) -> str:
    """details values as a reader wants them: ints as hex when they look like
    addresses, containers flattened, empty parts left out."""
    if isinstance(v, dict):
        return ", ".join(f"{k} {plain(x)}" for k, x in v.items() if x not in (None, "", [], {}))
    if isinstance(v, (list, tuple, set)):
        return ", ".join(plain(x) for x in v)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) and v >= 0x10000:
        return f"{v:#x}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
