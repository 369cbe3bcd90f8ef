"""The terminal report: summary, coverage, inputs, then the findings grouped
by rule, most severe first, each with its story (evidence) and stacks."""
from __future__ import annotations

from tabulate import tabulate

from .. import __version__
from .common import (by_rule, counts_line, hexs, location_text, pages,
                     printable, rule_summary, severity_rank, to_int)

_COLORS = {"error": "31", "warning": "33", "note": "36", "bold": "1", "dim": "2",
           "ok": "32"}

# Plain words for the causes svm-over-revoke names (SPEC §5).
CAUSES = {
    "shared-page": "the claims meet only on boundary pages: the revoke of one takes "
                   "the shared page from the other",
    "enclosing-range": "the victim starts left of the revoke and covers it",
    "grown-extent": "the revoke reaches past the claim it releases",
    "cross-thread-order": "the victim was granted on another thread after the revoking "
                          "deregistration began, or their windows overlap",
}

# Evidence roles are written by the models; these word stems pick out the
# parts of an SVM story without depending on exact wording.
_RELEASED = ("releas", "deregist", "unlock", "own claim")
_VICTIM = ("victim", "hurt", "live", "grant", "lock")

# details keys the diagnosis block shows itself; the rest are listed after.
_DIAG_KEYS = {"released", "released_claim", "victim", "victim_claim", "pages", "gpus",
              "gpu_ids", "flags", "flags_taken", "order", "concurrent"}


class _Style:
    def __init__(self, color: bool):
        self.color = color

    def __call__(self, text: str, what: str) -> str:
        if not self.color or what not in _COLORS:
            return text
        return f"\x1b[{_COLORS[what]}m{text}\x1b[0m"


def render(result, color: bool = False, **_opts) -> str:
    st = _Style(color)
    out: list[str] = []
    s = result.summary()
    n_in = len(result.inputs)
    out.append(st(f"rocrtrace {__version__}", "bold")
               + f": {n_in} input{'' if n_in == 1 else 's'}, {s['lines']} lines, "
               f"{s['events']} events, {s['unparsed']} unparsed")
    verdict = (st("FAILED", "error") if s["failed"] else st("passed", "ok"))
    out.append(f"{s['findings']} finding{'' if s['findings'] == 1 else 's'} "
               f"({counts_line(s)}), {s['suppressed']} suppressed by baseline; "
               f"--fail-on {s['fail_on']}: {verdict}")
    out.append("")
    out += _coverage(result, st)
    out += _inputs(result, st)
    if not result.findings:
        out.append("No findings.")
        return "\n".join(out) + "\n"
    for rule, fs in by_rule(result.findings):
        sev = max((f.severity for f in fs), key=severity_rank)
        out.append(st(f"== {sev} {rule}", sev) + f" ({len(fs)}): {rule_summary(rule)}")
        out.append("")
        for i, f in enumerate(fs, 1):
            out += _finding(f, i, st)
    return "\n".join(out) + "\n"


def _coverage(result, st) -> list[str]:
    cov = result.coverage or {}
    out = []
    labels = (("shows", "This input shows"), ("cannot_show", "It cannot show"),
              ("advice", "Advice"))
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
    out += ["  " + ln for ln in tabulate(
        rows, headers=["file", "format", "lines", "events", "unparsed"]).splitlines()]
    out.append("")
    return out


def _finding(f, i: int, st) -> list[str]:
    ind = "    "
    out = [f"  [{i}] " + st(f.severity, f.severity) + " " + printable(f.message),
           f"{ind}at {printable(location_text(f))}"]
    if f.event is not None and f.event.text:
        out.append(f"{ind}call: {printable(f.event.text)}")
    if f.cause:
        out.append(f"{ind}cause: {f.cause}" + (f" ({CAUSES[f.cause]})" if f.cause in CAUSES else ""))
    out += [ind + ln for ln in _subject_table(f.subject)]
    if f.rule.startswith("svm-") and f.rule != "svm-bad-range":
        out += [ind + ln for ln in _diagnosis(f)]
    rest = {k: v for k, v in (f.details or {}).items()
            if not (f.rule.startswith("svm-") and k in _DIAG_KEYS) and k != "baseline"}
    for k, v in rest.items():
        out.append(f"{ind}{k}: {printable(_plain(v))}")
    if f.evidence:
        out.append(f"{ind}evidence:")
        for ev in f.evidence:
            # The offending call's stack is printed once, below.
            out += _evidence(ev, ind + "  ", frames=ev.event is not f.event)
    if f.stack:
        out.append(f"{ind}stack:")
        out += [f"{ind}  #{n} {printable(fr.label())}" for n, fr in enumerate(f.stack)]
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
        row = [hexs(subject.get("start")), hexs(subject.get("end")),
               "" if size is None else f"{size:#x}", "" if size is None else pages(size),
               ", ".join(hexs(g) for g in subject.get("gpu_ids") or []) or "-"]
        return tabulate([row], headers=["start", "end (excl.)", "size", "pages", "gpus"]
                        ).splitlines()
    if kind == "fd":
        row = [subject.get("fd"), subject.get("fd_kind") or "-"]
        extra = {k: v for k, v in subject.items() if k not in ("kind", "fd", "fd_kind")}
        heads = ["fd", "kind"] + list(extra)
        row += [printable(_plain(v)) for v in extra.values()]
        return tabulate([row], headers=heads).splitlines()
    if kind == "handle":
        return [f"handle: {hexs(subject.get('handle'))}"]
    if kind == "process":
        return []
    return ["subject: " + printable(_plain(subject))]


def _role_match(role: str, stems) -> bool:
    r = role.lower()
    return any(s in r for s in stems)


def _diagnosis(f) -> list[str]:
    """The SVM story in the order an engineer reads it: what revoked, what it
    meant to release, what it hurt, which pages and GPUs, why, how sure."""
    d = f.details or {}
    rows: list[tuple[str, str]] = []
    if f.event is not None:
        e = f.event
        label = {"svm-over-revoke": "revoking call",
                 "svm-coherency-downgrade": "downgrading call"}.get(f.rule, "call")
        rows.append((label, f"{e.file}:{e.line} tid {e.tid} "
                     + (f"t={e.time:.6f} " if e.time is not None else "") + printable(e.text)))
    released = d.get("released") or d.get("released_claim")
    victim = d.get("victim") or d.get("victim_claim")
    used = set()
    for ev in f.evidence:
        if f.event is not None and ev.event is f.event:
            continue
        if released is None and _role_match(ev.role, _RELEASED):
            released = f"{ev.role}: {ev.event.file}:{ev.event.line} {ev.event.text}"
            used.add(id(ev))
    for ev in f.evidence:
        if id(ev) in used or (f.event is not None and ev.event is f.event):
            continue
        if victim is None and _role_match(ev.role, _VICTIM):
            victim = (f"{ev.role}: {ev.event.file}:{ev.event.line} tid {ev.event.tid} "
                      f"{ev.event.text}")
    if released is not None:
        rows.append(("claim it released", printable(_plain(released))))
    if victim is not None:
        rows.append(("live claim it hurt", printable(_plain(victim))))
    subj = f.subject or {}
    start, end = to_int(subj.get("start")), to_int(subj.get("end"))
    npages = d.get("pages")
    if npages is None and start is not None and end is not None:
        npages = pages(end - start)
    if npages is not None:
        rows.append(("pages", f"{_plain(npages)}"
                     + (f" ({hexs(start)}-{hexs(end)})" if start is not None else "")))
    gpus = d.get("gpus") or d.get("gpu_ids") or subj.get("gpu_ids")
    if gpus:
        rows.append(("GPUs", ", ".join(hexs(g) for g in gpus) if isinstance(gpus, (list, tuple))
                     else printable(_plain(gpus))))
    flags = d.get("flags") or d.get("flags_taken")
    if flags:
        rows.append(("flags taken", printable(_plain(flags))))
    if f.cause:
        rows.append(("cause", f.cause))
    order = d.get("order")
    if order is None and "concurrent" in d:
        order = "concurrent" if d["concurrent"] else "certain"
    if order is None and f.cause == "cross-thread-order":
        order = "concurrent"
    if order is not None:
        rows.append(("order", printable(_plain(order))))
    if len(rows) <= 1:
        return []
    width = max(len(k) for k, _ in rows)
    return ["diagnosis:"] + [f"  {k.ljust(width)}  {v}" for k, v in rows]


def _evidence(ev, ind: str, frames: bool = True) -> list[str]:
    e = ev.event
    head = [f"{ev.role}", f"{e.file}:{e.line}"]
    if e.tid is not None:
        head.append(f"tid {e.tid}")
    if e.time is not None:
        head.append(f"t={e.time:.6f}")
    out = [ind + printable(" ".join(head))]
    if e.text:
        out.append(ind + "  " + printable(e.text))
    if ev.note:
        out.append(ind + "  note: " + printable(ev.note))
    if frames:
        out += [f"{ind}    > {printable(fr.label())}" for fr in e.stack]
    return out


def _plain(v) -> str:
    """details values as a reader wants them: ints as hex when they look like
    addresses, containers flattened."""
    if isinstance(v, dict):
        return ", ".join(f"{k}={_plain(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, set)):
        return ", ".join(_plain(x) for x in v)
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int) and v >= 0x10000:
        return f"{v:#x}"
    return str(v)
