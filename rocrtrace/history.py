"""`rocrtrace show`: the history the models recorded for one fd or page range."""

from __future__ import annotations

import json


def _row(entry):
    ev, desc = entry[0], entry[1]
    state = entry[2] if len(entry) > 2 else None
    return ev, desc, state


def render_history(history, subject: str, fmt: str = "text", pid=None) -> str:
    rows = [_row(e) for e in history if pid is None or e[0].pid in (pid, None)]
    if fmt == "json":
        return json.dumps(
            {
                "subject": subject,
                "events": [
                    {
                        "file": ev.file,
                        "line": ev.line,
                        "pid": ev.pid,
                        "tid": ev.tid,
                        "time": ev.time,
                        "call": ev.text,
                        "what": desc,
                        "state": state,
                        "stack": [f.to_dict() for f in ev.stack],
                    }
                    for ev, desc, state in rows
                ],
            },
            indent=2,
            default=str,
        )
    if not rows:
        return f"nothing in this trace touches {subject}\n"
    from .report.common import printable
    from .report.text import call_text

    out = [f"history of {subject}: {len(rows)} event(s)", ""]
    for ev, desc, state in rows:
        when = f"t={ev.time:.6f}" if ev.time is not None else ""
        out.append(
            " ".join(
                x
                for x in (
                    f"{printable(ev.file)}:{ev.line}",
                    f"pid {ev.pid}" if ev.pid is not None else "",
                    f"tid {ev.tid}" if ev.tid is not None else "",
                    when,
                )
                if x
            )
        )
        out.append(f"    {call_text(ev, 240, concise=False)}")
        out.append(f"    -> {printable(desc)}")
        out += ["       " + ln for ln in state_lines(state)]
        for fr in ev.stack[:8]:
            out.append(f"       > {printable(fr.label())}")
        out.append("")
    return "\n".join(out)


def state_lines(state) -> list[str]:
    """The model's state after an event as rows a reader scans: a list of
    records becomes a table, a list of strings one line each."""
    from tabulate import tabulate

    from .report.common import printable
    from .report.text import plain

    if not state:
        return []
    if not isinstance(state, dict):
        return [printable(plain(state))]
    out = []
    for key, v in state.items():
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, dict) for x in v):
            heads = list(dict.fromkeys(k for x in v for k in x))
            table = [[printable(plain(x.get(h))) for h in heads] for x in v]
            out.append(f"{key}:")
            out += ["  " + ln for ln in tabulate(table, headers=heads).splitlines()]
        elif isinstance(v, (list, tuple)):
            out.append(f"{key}:" + ("" if v else " none"))
            out += [f"  {printable(plain(x))}" for x in v]
        else:
            out.append(f"{key}: {printable(plain(v))}")
    return out
