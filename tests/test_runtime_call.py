"""fd and buffer findings name the runtime call they ran inside (issue 35,
item 11), and a runtime call that hands its caller an fd the trace already
closed is the bug itself (fd-use-after-close at the handover)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SC = os.path.join(ROOT, "fixtures", "scenarios")


def _findings(rel):
    p = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", os.path.join(SC, rel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)["findings"]


def test_close_inside_handle_release_names_it():
    fs = {f["line"]: f for f in _findings("vmm-export-double-close/v2-6471-buggy-explicit.log")}
    dc = fs[27]
    assert dc["rule"] == "fd-double-close"
    assert dc["details"]["runtime_call"] == "hsa_amd_vmem_handle_release"
    assert dc["message"].endswith(
        "it ran inside hsa_amd_vmem_handle_release at "
        + os.path.join(SC, "vmm-export-double-close", "v2-6471-buggy-explicit.log:30")
    )
    inside = [e for e in dc["evidence"] if e["role"] == "inside the runtime call"]
    assert [e["line"] for e in inside] == [30]
    # the app's own dup (line 25) ran inside no runtime call
    assert "runtime_call" not in fs[25].get("details", {})


def test_stale_fd_handover_is_reported_where_it_happens():
    fs = {f["line"]: f for f in _findings("vmm-export-double-close/v2-6471-buggy-explicit.log")}
    h = fs[24]
    assert (h["rule"], h["severity"]) == ("fd-use-after-close", "error")
    assert h["subject"]["fd"] == 6
    assert h["message"].startswith("hsa_amd_vmem_export_shareable_handle handed fd 6 to its caller")
    roles = {e["role"]: e["line"] for e in h["evidence"]}
    assert roles["handed over by"] == 24 and roles["closed by"] == 23 and roles["created by"] == 17
    # the fixed runtime exports a fresh fd each time: no handover finding
    assert not [
        f for f in _findings("vmm-export-double-close/v3-7786-fixed-explicit.log") if f["rule"] == "fd-use-after-close"
    ]


def test_without_intent_calls_nothing_is_named():
    for f in _findings("vmm-export-double-close/v2-6471-buggy-inferred.log"):
        assert "runtime_call" not in f.get("details", {})
        assert "ran inside" not in f["message"]


def test_buffer_findings_name_it_too():
    fs = [f for f in _findings("xdna-gem-close/7660-buggy-explicit.log") if f["rule"] == "bo-double-free"]
    assert fs and fs[0]["details"]["runtime_call"] == "hsa_amd_vmem_handle_release"
