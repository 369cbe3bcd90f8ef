"""The rule catalogue (src/rules.rs) and everything that copies or uses it:
rocrtrace/rules.py reads it from the core, the README's and the man page's
rule lists are generated from it (docs/gen_rules.py), and every rule has a
fixture under fixtures/rules/<id>/ that fires it (fixtures/rules/generate.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from rocrtrace import _engine
from rocrtrace.rules import RULES, SEVERITIES

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_python_reads_the_core_catalogue():
    cat = _engine.rule_catalogue()
    assert [asdict(r) for r in RULES.values()] == cat
    assert len(cat) == len({d["id"] for d in cat}) >= 18
    assert {d["severity"] for d in cat} <= set(SEVERITIES)


def test_python_names_only_catalogue_rules():
    """The few findings Python makes (trace-unparsed, trace-incomplete) name
    their rule by id: each such id is one the catalogue has."""
    named = set()
    for py in (ROOT / "rocrtrace").rglob("*.py"):
        named |= set(re.findall(r"(?<![\w-])rule\s*(?:=|==|!=)\s*\"([a-z]+(?:-[a-z]+)+)\"", py.read_text()))
    assert named >= {"trace-unparsed", "trace-incomplete"}
    assert named <= set(RULES)


def test_rules_command_shows_the_catalogue():
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "rules", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(r.stdout) == _engine.rule_catalogue()


def test_documents_list_the_catalogue():
    r = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_rules.py"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", ["README.md", "man/rocrtrace.1"])
def test_document_check_sees_a_stale_list(name):
    """The check is not vacuous: a list missing a rule, or naming a rule the
    catalogue does not have, is regenerated to the catalogue's."""
    gen = _load(ROOT / "docs" / "gen_rules.py")
    begin, end, make = gen.TARGETS[name]
    text = (ROOT / name).read_text()
    lines = make()
    assert "\n".join(lines) in text
    gone = [ln for ln in lines if "fd\\-leak" not in ln and "fd-leak" not in ln]
    stale = text.replace("\n".join(lines), "\n".join(gone).replace("fd", "df"))
    assert stale != text
    assert gen.regenerate(stale, begin, end, lines, name) == text


# --- fixtures/rules/<rule-id>/ ----------------------------------------------------------

FIXTURES = ROOT / "fixtures" / "rules"


def test_rule_fixtures_are_what_the_generator_writes():
    """Traces and expected reports are generated (fixtures/rules/generate.py)
    and still what rocrtrace reports on them."""
    r = subprocess.run(
        [sys.executable, str(FIXTURES / "generate.py"), "--check"], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("rule", list(RULES))
def test_every_rule_has_a_fixture(rule):
    d = FIXTURES / rule
    logs = sorted(d.glob("*.log"))
    assert logs, f"no fixture for {rule}: add a case to fixtures/rules/generate.py"
    for log in logs:
        assert log.with_name(log.stem + ".expected.json").exists(), log


def test_every_fixture_directory_names_a_rule():
    dirs = {d.name for d in FIXTURES.iterdir() if d.is_dir() and d.name != "__pycache__"}
    assert dirs == set(RULES)


def _fixtures():
    for log in sorted(FIXTURES.glob("*/*.log")):
        yield pytest.param(log, id=f"{log.parent.name}/{log.stem}")


@pytest.mark.parametrize("log", list(_fixtures()))
def test_each_fixture_fires_its_rule(log, monkeypatch):
    """Each fixture's trace fires its directory's rule, as its expected
    report says (the report's paths are relative to the rule's directory)."""
    from rocrtrace.engine import analyze

    rule = log.parent.name
    expected = json.loads(log.with_name(log.stem + ".expected.json").read_text())
    assert expected["rule"] == rule
    monkeypatch.chdir(log.parent)
    res = analyze([log.name], all_fds="--all-fds" in expected["args"])
    assert sum(i.unparsed for i in res.inputs) == (rule == "trace-unparsed")
    mine = [(f.line, f.severity, f.message) for f in res.findings if f.rule == rule]
    assert mine, f"{log.name} does not fire {rule}"
    assert mine == [
        (f["line"], f["severity"], f["message"]) for f in expected["report"]["findings"] if f["rule"] == rule
    ]
