"""The comparison harness in the suite: the compiled core and the Python
reference engine print the same bytes for analyze (JSON, --all-fds),
events (CSV), show and --jobs 2 on every fixture and on generated traces
small and past the chunking threshold (tests/engine/compare.py; its --real
corpus runs in tests/test_engine_fds.py / test_engine_svm.py's programs)."""
from __future__ import annotations

import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "engine"))

import compare  # noqa: E402


def test_core_equals_reference_engine(tmp_path):
    inputs = compare.fixture_inputs() + compare.generated_inputs(tmp_path)
    assert len(inputs) > 60
    out = io.StringIO()
    n, diffs = compare.compare(inputs, out=out)
    assert n > 4 * len(inputs) // 2
    assert diffs == 0, out.getvalue()[:4000]
