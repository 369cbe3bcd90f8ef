"""A short seeded run of the atheris harnesses (tests/fuzz): the parsers and
the whole pipeline on mutated fixture pieces, no crash.  Longer runs:
``python tests/fuzz/run.py parser|pipeline MINUTES``."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("atheris")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fuzz"))

import run as fuzz_run  # noqa: E402


@pytest.mark.parametrize("harness,runs", [("parser", 1500), ("pipeline", 150)])
def test_short_seeded_fuzz_run(harness, runs, tmp_path):
    execs, classes = fuzz_run.run(harness, 60, seed=1, runs=runs, workdir=str(tmp_path))
    assert classes == {}, classes
    assert execs >= runs


def test_corpus_is_seeded_from_the_fixtures(tmp_path):
    import common

    n = common.write_corpus(str(tmp_path))
    assert n >= 50 and len(os.listdir(tmp_path)) == n
    assert any("tinygrad" in p for p in common.seed_files())
