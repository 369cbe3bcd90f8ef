"""The GitHub composite action (action.yml) and its step, action/run.sh, run
locally as GitHub runs it: INPUT_* variables, $GITHUB_OUTPUT,
$GITHUB_STEP_SUMMARY, the rocrtrace on PATH.  (Installing from a wheel is
checked by tests/test_readme.py with the wheel the README's recipe builds.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "action" / "run.sh"
SC = ROOT / "fixtures" / "scenarios"
BUGGY = SC / "c1-enclosing-range" / "v1-buggy-explicit.log"
CLEAN = SC / "c1-enclosing-range" / "v4-fixed-explicit.log"


def _action(tmp_path, **inputs):
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update({f"INPUT_{k.upper()}": str(v) for k, v in inputs.items()})
    env.update(
        GITHUB_OUTPUT=str(out),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_ACTION_PATH=str(ROOT),
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    )
    p = subprocess.run(["bash", str(RUN)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines()) if out.exists() else {}
    return p, outputs, summary


def test_action_yml_runs_the_step_and_gates_on_its_code():
    yaml = pytest.importorskip("yaml")
    a = yaml.safe_load((ROOT / "action.yml").read_text())
    assert a["runs"]["using"] == "composite"
    steps = a["runs"]["steps"]
    assert '"$GITHUB_ACTION_PATH/action/run.sh"' in steps[0]["run"]
    assert steps[0]["id"] == "analyze"
    # every input reaches the step as INPUT_*, or decides a step
    for name in a["inputs"]:
        assert f"INPUT_{name.upper().replace('-', '_')}" in steps[0]["env"] or any(
            f"inputs.{name}" in s.get("if", "") for s in steps
        ), name
    assert steps[1]["uses"].startswith("github/codeql-action/upload-sarif@")
    assert "always()" in steps[1]["if"] and "always()" in steps[2]["if"]
    assert "exit-code" in a["outputs"]


def test_findings_annotate_fill_the_summary_and_fail(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    shutil.copy(BUGGY, d)
    p, outputs, summary = _action(tmp_path, traces="traces", fail_on="error")
    assert p.returncode == 0, p.stderr  # analyze ran: the action's last step fails
    assert outputs["exit-code"] == "1"
    assert "::error file=" in p.stdout and "svm-over-revoke" in p.stdout
    sarif = json.loads((tmp_path / "rocrtrace.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"svm-over-revoke"}
    assert "svm-over-revoke" in summary.read_text()


def test_clean_traces_pass_and_options_reach_analyze(tmp_path):
    p, outputs, _ = _action(tmp_path, traces=str(CLEAN), sarif="out/r.sarif", args="--fail-on never")
    # --fail-on never given in args comes last and wins (click keeps the last)
    assert outputs["exit-code"] == "0", p.stdout + p.stderr
    assert (tmp_path / "out" / "r.sarif").exists()
    p, outputs, _ = _action(tmp_path, traces=str(BUGGY), fail_on="never")
    assert outputs["exit-code"] == "0"


def test_bad_input_is_exit_2_and_a_missing_wheel_says_so(tmp_path):
    p, outputs, _ = _action(tmp_path, traces=str(tmp_path / "nothing-here.log"))
    assert outputs["exit-code"] == "2"
    p, outputs, _ = _action(tmp_path, traces=str(BUGGY), wheel=str(tmp_path / "none-*.whl"))
    assert p.returncode == 2 and "no wheel matches" in p.stderr and not outputs


def test_by_hand_the_script_exits_with_analyze_code(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update(INPUT_TRACES=str(BUGGY), PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    p = subprocess.run(["bash", str(RUN)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr
