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
        return json.dumps({"subject": subject, "events": [
            {"file": ev.file, "line": ev.line, "pid": ev.pid, "tid": ev.tid, "time": ev.time,
             "call": ev.text, "what": desc, "state": state,
             "stack": [f.to_dict() for f in ev.stack]}
            for ev, desc, state in rows]}, indent=2, default=str)
    if not rows:
        return f"nothing in this trace touches {subject}\n"
    out = [f"history of {subject}: {len(rows)} event(s)", ""]
    for ev, desc, state in rows:
        when = f"{ev.time:.6f}" if ev.time is not None else "-"
        out.append(f"{ev.file}:{ev.line}  pid {ev.pid} tid {ev.tid}  {when}")
        out.append(f"    {ev.text}")
        out.append(f"    -> {desc}")
        if state:
            if isinstance(state, dict):
                for k, v in state.items():
                    out.append(f"       {k}: {v}")
            else:
                out.append(f"       {state}")
        for fr in ev.stack[:8]:
            out.append(f"       > {fr.label()}")
        out.append("")
    return "\n".join(out)
