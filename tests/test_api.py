"""The typed Python API (issue 35): ``rocrtrace.analyze(paths, ...) ->
Report`` with findings as frozen dataclasses, scripted as a triage would
be, checked against the CLI's JSON report of the same traces; the example
script type-checks with mypy --strict and a wrong use does not."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocrtrace

ROOT = Path(__file__).resolve().parent.parent
SC = ROOT / "fixtures/scenarios"
C1 = SC / "c1-enclosing-range/v1-buggy-explicit.log"
VMM = SC / "vmm-export-double-close/v2-6471-buggy-explicit.log"
TAIL = "value=KFD_IOCTL_SVM_FLAG_EXT_COHERENT}]}) = 0 <0.000010>"


def cli_json(*args) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", *map(str, args), "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_a_scripted_triage():
    report = rocrtrace.analyze([C1, VMM])
    assert isinstance(report, rocrtrace.Report) and report.failed
    assert [i.file for i in report.inputs] == [str(C1), str(VMM)]
    # the double close: its fd, kind and the close before it
    (dc,) = report.by_rule("fd-double-close")
    assert isinstance(dc, rocrtrace.Finding)
    assert (dc.subject.kind, dc.subject.fd, dc.subject.fd_kind) == ("fd", 6, "dmabuf")
    roles = [e.role for e in dc.evidence]
    assert "previous close" in roles and "this close" in roles
    assert dc.location == f"{VMM.relative_to(ROOT)}:27" or dc.location == f"{VMM}:27"
    # SVM: addresses are ints, the revoking call whole
    (ov,) = report.by_rule("svm-over-revoke")
    assert (ov.subject.start, ov.subject.end, ov.subject.gpu_ids) == (0x7E0000003000, 0x7E0000004000, (0x1A2B,))
    assert ov.cause == "enclosing-range"
    assert any(e.call.endswith(TAIL) and e.time is not None and e.duration == 1e-05 for e in ov.evidence)
    assert report.coverage.cannot_show and all(isinstance(x, str) for x in report.coverage.shows)
    # frozen: a script cannot change a finding under the report
    with pytest.raises(dataclasses.FrozenInstanceError):
        dc.severity = "note"  # type: ignore[misc]


def test_the_api_and_the_cli_agree():
    report = rocrtrace.analyze([C1, VMM])
    doc = cli_json(C1, VMM)
    assert [(f.rule, f.severity, f.fingerprint, f.line) for f in report.findings] == [
        (f["rule"], f["severity"], f["fingerprint"], f["line"]) for f in doc["findings"]
    ]
    assert [e.call for f in report.findings for e in f.evidence] == [
        e["call"] for f in doc["findings"] for e in f["evidence"]
    ]
    assert json.loads(report.render("json"))["findings"] == doc["findings"]


def test_options_are_the_cli_options(tmp_path):
    only = rocrtrace.analyze(VMM, enable=["fd-double-close"])
    assert [f.rule for f in only.findings] == ["fd-double-close"]
    assert rocrtrace.analyze(VMM, disable=["fd-double-close", "fd-use-after-close"]).findings == ()
    low = rocrtrace.analyze(VMM, severity={"fd-double-close": "note"}, fail_on="error")
    assert low.by_rule("fd-double-close")[0].severity == "note" and low.failed  # use-after-close
    bl = tmp_path / "bl.json"
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", str(VMM), "--fail-on", "never", "--write-baseline", str(bl)],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    quiet = rocrtrace.analyze(VMM, baseline=bl)
    assert quiet.findings == () and len(quiet.suppressed) == 3 and not quiet.failed
    with pytest.raises(ValueError, match="unknown rule"):
        rocrtrace.analyze(VMM, enable=["no-such-rule"])


def test_bad_inputs(tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_text("this is not a trace\nnor is this\n")
    with pytest.raises(rocrtrace.InputError):
        rocrtrace.analyze(junk)
    with pytest.raises(rocrtrace.InputError):
        rocrtrace.analyze(tmp_path / "missing.log")
    # one bad input among good ones: listed, the others analyzed
    r = rocrtrace.analyze([VMM, tmp_path / "missing.log"])
    assert r.errors and r.by_rule("fd-double-close")


def test_the_package_is_typed():
    assert (Path(rocrtrace.__file__).parent / "py.typed").is_file()


def _mypy(path: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=path.parent,
    )


def test_the_example_type_checks_and_runs(tmp_path):
    example = ROOT / "examples/triage.py"
    r = _mypy(example)
    assert r.returncode == 0, r.stdout + r.stderr
    run = subprocess.run(
        [sys.executable, str(example), str(VMM)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 1 and "fd 6 (dmabuf) closed twice" in run.stdout


def test_a_wrong_use_does_not_type_check(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import rocrtrace\n"
        "r = rocrtrace.analyze('t.log')\n"
        "n: int = r.findings[0].subject.fd\n"  # Optional[int]
        "s: str = r.findings[0].evidence[0].line\n"
    )
    r = _mypy(bad)
    assert r.returncode == 1
    assert "bad.py:3: error" in r.stdout and "bad.py:4: error" in r.stdout


def test_the_readme_snippet_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / VMM.name).write_bytes(VMM.read_bytes())
    r = subprocess.run(
        [sys.executable, "-c", block],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    assert "dmabuf" in r.stdout and "close(" in r.stdout
    assert "error[fd-double-close]" in (tmp_path / "triage.html").read_text()
