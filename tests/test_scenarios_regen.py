"""The committed scenario fixtures are what their generator produces.

Every variant is run again as a real program under the capture library in
the fake device namespace; the normalized logs and the hand-written expected
findings must come out byte-identical to the committed files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakedev import devns

ROOT = Path(__file__).resolve().parents[1]
SCN = ROOT / "fixtures" / "scenarios"

pytestmark = pytest.mark.skipif(not devns.available(), reason="needs root and unshare")


def test_regenerating_gives_identical_files():
    r = subprocess.run(
        [sys.executable, str(SCN / "generate.py"), "--check"], capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr[-4000:]


def test_every_variant_has_log_and_expectation():
    sys.path.insert(0, str(SCN))
    import scenarios

    for sc in scenarios.SCENARIOS.values():
        assert sc.variants, sc.name
        for vname, v in sc.variants.items():
            log = SCN / sc.name / f"{vname}.log"
            exp = json.loads((SCN / sc.name / f"{vname}.expected.json").read_text())
            text = log.read_text()
            assert text.startswith("# rocrtrace-log 1\n") and "# exit status=0" in text
            # explicit variants really show their intent calls, inferred ones none
            assert ("hsa_amd_" in text) == v.explicit, log
            for f in exp["findings"]:
                assert set(f) == {"rule", "severity", "cause", "subject"}
