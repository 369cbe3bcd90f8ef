"""Every scenario fixture (a real program run under the real capture library
and the fake device) yields exactly the findings written by hand for it
from the reference: rule, severity, cause and subject, no more, no less."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rocrtrace.engine import analyze

SCEN = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
LOGS = sorted(SCEN.glob("*/*.log"))


def _key(f: dict) -> str:
    return json.dumps(
        {"rule": f["rule"], "severity": f["severity"], "cause": f.get("cause"), "subject": f["subject"]}, sort_keys=True
    )


def test_corpus_is_there():
    assert len(LOGS) >= 40
    assert {p.parent.name for p in LOGS} >= {
        "c1-enclosing-range",
        "c2-grown-extent",
        "c3-regrant",
        "partial-page",
        "pin-race-17page",
        "clr-noaccess-before-unlock",
        "vmm-fd-per-handle",
        "vmm-export-double-close",
        "xdna-gem-close",
    }


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_exact_findings(log):
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    ignore = set(expected.get("unasserted", ()))
    res = analyze([str(log)])
    assert all(i.unparsed == 0 for i in res.inputs)
    got = Counter(_key(f.to_dict()) for f in res.findings if f.rule not in ignore and not f.rule.startswith("trace-"))
    want = Counter(_key(f) for f in expected["findings"])
    assert got == want, [f.message for f in res.findings]
    # every finding explains itself: evidence with lines and threads
    for f in res.findings:
        if f.event is not None:
            assert f.evidence and all(e.event.line > 0 for e in f.evidence)


@pytest.mark.parametrize("log", [p for p in LOGS if "fixed" in p.stem], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixed_variants_pass_the_gate(log):
    res = analyze([str(log)], fail_on="warning")
    assert not res.failed(), [f.message for f in res.findings]
