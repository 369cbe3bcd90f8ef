"""SARIF 2.1.0, shaped for GitHub code scanning.

Code scanning rejects a result without a location and accepts only
repository-relative file URIs, so every result points either at the program's
own source line (a symbolized frame under the repository) or at the trace
file and line.  The evidence chain becomes a codeFlow (one threadFlow per
thread, ``executionOrder`` giving the order across threads), the offending
call's backtrace a stack, and the fingerprint a ``partialFingerprints`` entry
so alerts keep their identity across runs.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from .. import __version__
from ..rules import RULES
from ..paths import repo_relative
from .common import SCHEMA, printable, rule_ids, source_frame, subject_text
from .json_ import dumps

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "note": "note"}


def _uri(path: str, cwd: str) -> dict:
    rel = repo_relative(path, cwd)
    if rel is not None:
        return {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + quote(os.path.abspath(path))}


def _physical(path: str, line: int | None, cwd: str) -> dict:
    phys = {"artifactLocation": _uri(path, cwd)}
    if line and line > 0:
        phys["region"] = {"startLine": int(line)}
    return phys


def _trace_location(ev, cwd: str, text: str | None = None) -> dict:
    loc: dict = {}
    if ev.file and ev.file != "-":
        loc["physicalLocation"] = _physical(ev.file, ev.line, cwd)
    msg = text if text is not None else printable(ev.text)
    if msg:
        loc["message"] = {"text": msg}
    return loc


def _frame(fr, tid, cwd: str) -> dict:
    loc: dict = {"message": {"text": printable(fr.label())}}
    if fr.source and fr.source_line:
        loc["physicalLocation"] = _physical(fr.source, fr.source_line, cwd)
    fn = fr.function or fr.symbol
    if fn:
        loc["logicalLocations"] = [{"fullyQualifiedName": printable(fn), "kind": "function"}]
    out = {"location": loc, "module": printable(fr.module)}
    if isinstance(tid, int):
        out["threadId"] = tid
    return out


def _locations(f, cwd: str) -> tuple[list, list]:
    """(locations, relatedLocations): the primary one first, never empty."""
    related = []
    trace = None
    if f.file and f.file != "-":
        trace = {
            "physicalLocation": _physical(f.file, f.line, cwd),
            "message": {"text": "the offending call in the trace"},
        }
    sf = source_frame(f.stack, cwd)
    if sf:
        fr, rel = sf
        art = {"uri": "file://" + quote(rel)} if os.path.isabs(rel) else {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}
        primary = {
            "physicalLocation": {"artifactLocation": art, "region": {"startLine": int(fr.source_line)}},
            "message": {"text": printable(fr.label())},
        }
        if trace:
            trace["id"] = 1
            related.append(trace)
    elif trace:
        primary = trace
    else:
        # A finding about a whole input with no file (stdin): code scanning
        # still needs a location, and a logical one names what it is about.
        primary = {"logicalLocations": [{"name": subject_text(f.subject) or f.rule, "kind": "resource"}]}
    if f.subject:
        primary.setdefault("logicalLocations", [{"name": subject_text(f.subject), "kind": "resource"}])
    return [primary], related


def _code_flow(f, cwd: str) -> list:
    if not f.evidence:
        return []
    by_thread: dict = {}
    # executionOrder is the order in time: the models list the
    # offending call first, its causes after it
    chrono = sorted(
        f.evidence,
        key=lambda ev: (
            ev.event.time if ev.event.time is not None else float("-inf"),
            ev.event.file or "",
            ev.event.line or 0,
            getattr(ev.event, "seq", 0) or 0,
        ),
    )
    for order, ev in enumerate(chrono, 1):
        e = ev.event
        text = f"{ev.role}: {printable(e.text)}" + (f" ({printable(ev.note)})" if ev.note else "")
        tfl = {"location": _trace_location(e, cwd, text), "executionOrder": order}
        if e.stack:
            tfl["stack"] = {"frames": [_frame(fr, e.tid, cwd) for fr in e.stack]}
        by_thread.setdefault(e.tid, []).append(tfl)
    flows = []
    for tid, locs in by_thread.items():
        tf = {"locations": locs}
        if tid is not None:
            tf["id"] = str(tid)
            tf["message"] = {"text": f"thread {tid}"}
        flows.append(tf)
    return [{"message": {"text": f"the events that make this {f.rule} true"}, "threadFlows": flows}]


def _result(f, rule_index: dict, cwd: str, suppressed: bool = False) -> dict:
    locs, related = _locations(f, cwd)
    res = {
        "ruleId": f.rule,
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": printable(f.message) or f.rule},
        "locations": locs,
        "partialFingerprints": {SCHEMA: f.fingerprint},
    }
    if f.rule in rule_index:
        res["ruleIndex"] = rule_index[f.rule]
    if related:
        res["relatedLocations"] = related
    if f.stack:
        res["stacks"] = [
            {"message": {"text": "stack of the offending call"}, "frames": [_frame(fr, f.tid, cwd) for fr in f.stack]}
        ]
    flows = _code_flow(f, cwd)
    if flows:
        res["codeFlows"] = flows
    props = {"pid": f.pid, "tid": f.tid, "time": f.time, "subject": f.subject}
    if f.cause:
        props["cause"] = f.cause
    if f.details:
        props["details"] = {k: v for k, v in f.details.items() if k != "baseline"}
    res["properties"] = {k: v for k, v in props.items() if v is not None}
    if suppressed:
        base = (f.details or {}).get("baseline") or {}
        sup = {"kind": "external", "status": "accepted"}
        if base.get("justification"):
            sup["justification"] = str(base["justification"])
        res["suppressions"] = [sup]
    return res


def _rules(ids) -> list:
    out = []
    for rid in ids:
        r = RULES.get(rid)
        if r is None:
            out.append({"id": rid, "shortDescription": {"text": rid}})
            continue
        out.append(
            {
                "id": r.id,
                "name": "".join(p.capitalize() for p in r.id.split("-")),
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.help},
                "help": {"text": f"{r.help}\n\nExample: {r.example}\n\nFix: {r.fix}"},
                "defaultConfiguration": {"level": LEVELS[r.severity]},
                "properties": {"tags": ["rocm", r.id.split("-")[0]]},
            }
        )
    return out


def document(result, rules=None, cwd: str | None = None, enabled=None) -> dict:
    cwd = os.path.abspath(cwd or os.getcwd())
    ids = rule_ids(rules, enabled)
    for f in [*result.findings, *result.suppressed]:
        if f.rule not in ids:
            ids.append(f.rule)
    index = {rid: i for i, rid in enumerate(ids)}
    results = [_result(f, index, cwd) for f in result.sorted_findings()]
    results += [_result(f, index, cwd, suppressed=True) for f in result.suppressed]
    run = {
        "tool": {
            "driver": {
                "name": "rocrtrace",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": _rules(ids),
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + quote(cwd.rstrip("/") + "/")}},
        "invocations": [{"executionSuccessful": True}],
        "artifacts": [{"location": _uri(i.file, cwd)} for i in result.inputs if i.file and i.file != "-"],
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if not run["artifacts"]:
        del run["artifacts"]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render(result, rules=None, cwd: str | None = None, enabled=None, **_opts) -> str:
    return dumps(document(result, rules=rules, cwd=cwd, enabled=enabled)) + "\n"
