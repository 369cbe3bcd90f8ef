"""The core prints, byte for byte, what the committed expected outputs say
(tests/engine/expected.py): every fixture through analyze (JSON, --all-fds),
events (CSV) and show; the generated traces by digest, and --jobs 2 equal to
--jobs 1 on those past the chunking threshold."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "engine"))

import expected  # noqa: E402

FIXTURES = expected.fixture_inputs()


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(expected.ROOT)


def test_every_fixture_has_expected_output():
    assert len(FIXTURES) > 60
    have = {str(p.relative_to(expected.EXPECTED))[: -len(".out")] for p in expected.EXPECTED.rglob("*.out")}
    assert have == set(FIXTURES)


@pytest.mark.parametrize("path", FIXTURES)
def test_fixture(path):
    assert expected.check_fixture(path) == []


def test_generated(tmp_path):
    assert expected.check_generated(tmp_path) == []


def test_a_changed_byte_is_a_difference(tmp_path, monkeypatch):
    path = next(p for p in FIXTURES if "scenarios" in p)
    copy = tmp_path / (path + ".out")
    copy.parent.mkdir(parents=True)
    shutil.copy(expected.EXPECTED / (path + ".out"), copy)
    data = copy.read_bytes()
    i = data.index(b'"findings"')
    copy.write_bytes(data[:i] + b'"Findings"' + data[i + len(b'"findings"') :])
    monkeypatch.setattr(expected, "EXPECTED", tmp_path)
    diffs = expected.check_fixture(path)
    assert len(diffs) >= 1 and all("analyze" in d for d in diffs), diffs
