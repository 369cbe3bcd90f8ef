"""[tool.rocrtrace] in the nearest pyproject.toml: it sets the
defaults of fail-on, enable, disable, baseline, source-root and per-rule
severities; command-line options win; a bad table is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUGGY = ROOT / "fixtures" / "scenarios" / "c1-enclosing-range" / "v1-buggy-explicit.log"


def _run(cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _project(tmp_path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + table)
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True, exist_ok=True)
    return sub  # the nearest pyproject.toml is found from below


def test_fail_on_from_the_table_and_the_option_wins(tmp_path):
    cwd = _project(tmp_path, '[tool.rocrtrace]\nfail-on = "never"\n')
    assert _run(cwd, "analyze", "-q", BUGGY).returncode == 0
    assert _run(cwd, "analyze", "-q", "--fail-on", "error", BUGGY).returncode == 1


def test_disable_and_per_rule_severity(tmp_path):
    cwd = _project(
        tmp_path,
        '[tool.rocrtrace]\ndisable = ["svm-coherency-downgrade"]\n\n'
        '[tool.rocrtrace.severity]\nsvm-over-revoke = "warning"\n',
    )
    p = _run(cwd, "analyze", "--format", "json", BUGGY)
    found = json.loads(p.stdout)["findings"]
    assert [(f["rule"], f["severity"]) for f in found] == [("svm-over-revoke", "warning")]
    assert p.returncode == 0  # nothing at error any more
    # the option wins over the table
    p = _run(cwd, "analyze", "--format", "json", "--disable", "svm-over-revoke", BUGGY)
    assert {f["rule"] for f in json.loads(p.stdout)["findings"]} == {"svm-coherency-downgrade"}


def test_baseline_path_is_relative_to_the_pyproject(tmp_path):
    cwd = _project(tmp_path, '[tool.rocrtrace]\nbaseline = "ci/base.json"\n')
    (tmp_path / "ci").mkdir()
    w = _run(ROOT, "analyze", "-q", "--write-baseline", tmp_path / "ci" / "base.json", BUGGY)
    assert w.returncode == 1
    assert _run(cwd, "analyze", "-q", BUGGY).returncode == 0  # all baselined


def test_a_bad_table_is_one_line_and_exit_2(tmp_path):
    for table in (
        '[tool.rocrtrace]\nfail-on = "sometimes"\n',
        "[tool.rocrtrace]\ncolour = true\n",
        '[tool.rocrtrace]\nenable = ["no-such-rule"]\n',
        '[tool.rocrtrace.severity]\nfd-leak = "fatal"\n',
        "[tool.rocrtrace\n",
    ):
        cwd = _project(tmp_path, table)
        p = _run(cwd, "analyze", "-q", BUGGY)
        assert p.returncode == 2, (table, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "pyproject.toml" in p.stderr
        assert "Traceback" not in p.stderr


def test_no_table_changes_nothing(tmp_path):
    cwd = _project(tmp_path, "[tool.other]\nx = 1\n")
    assert _run(cwd, "analyze", "-q", BUGGY).returncode == 1
