"""The product runs without the Python engine: with rocrtrace.parse,
rocrtrace.models, rocrtrace.replay, rocrtrace.parallel and rocrtrace.inputs
made unimportable (a sys.meta_path finder that raises ImportError), every
command prints what the Python reference engine prints for the same trace
(analyze in text, json and perfetto, events, stats, show, diff)."""
from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "engine"))

import pyref  # noqa: E402

BLOCKED = ("rocrtrace.parse", "rocrtrace.models", "rocrtrace.replay", "rocrtrace.parallel",
           "rocrtrace.inputs")

FIX = ROOT / "fixtures"
BUGGY = FIX / "scenarios/vmm-export-double-close/v2-6471-buggy-explicit.log"
FIXED = FIX / "scenarios/vmm-export-double-close/v3-7786-fixed-explicit.log"
SVM = FIX / "scenarios/c1-enclosing-range/v1-buggy-explicit.log"
STRACE = FIX / "strace/deleted_dmabuf.log"
TINY = sorted((FIX / "tinygrad").glob("*.log"))[:1]


def _commands(out: Path) -> list[list[str]]:
    cmds = []
    for i, t in enumerate([BUGGY, SVM, STRACE, *TINY]):
        t = str(t)
        cmds += [["analyze", "--no-progress", "--fail-on", "never", t],
                 ["analyze", "--format", "json", "--no-progress", t],
                 ["analyze", "--no-progress", "--fail-on", "never", "--format",
                  f"perfetto:{out}/p{i}.pftrace", t],
                 ["events", "--format", "csv", t],
                 ["stats", t],
                 ["show", "--fd", "3", "--format", "json", t]]
    addr = re.search(r"start_addr=(0x[0-9a-f]+)", SVM.read_text()).group(1)
    cmds.append(["show", "--addr", f"{addr}:0x10000", str(SVM)])
    cmds.append(["show", "--addr", f"{addr}:0x10000", "--format", "json", str(SVM)])
    cmds.append(["diff", "--format", "json", str(BUGGY), str(FIXED)])
    cmds.append(["diff", str(BUGGY), str(FIXED)])
    return cmds


# Runs the commands in a fresh interpreter with the Python engine blocked;
# prints [[exit, stdout (base64), error, the perfetto file (base64) or None]].
_BLOCKED_RUN = """
import base64, json, sys
BLOCKED = %r
class Block:
    def find_spec(self, name, path=None, target=None):
        if name in BLOCKED or name.startswith(tuple(b + "." for b in BLOCKED)):
            raise ImportError(f"{name} is blocked: the product must not need it")
sys.meta_path.insert(0, Block())
sys.path.insert(0, %r)
from run_cli import run_all
print(json.dumps(run_all(json.loads(sys.argv[1]))))
"""


def _blocked(cmds) -> list:
    here = str(Path(__file__).resolve().parent / "engine")
    code = _BLOCKED_RUN % (BLOCKED, here)
    r = subprocess.run([sys.executable, "-c", code, json.dumps(cmds)], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_commands_run_without_the_python_engine(tmp_path):
    from run_cli import run_all

    a, b = tmp_path / "ref", tmp_path / "core"
    a.mkdir()
    b.mkdir()
    with pyref.selected():
        ref = run_all(_commands(a))
    got = _blocked(_commands(b))
    assert len(got) == len(ref) > 20
    for cmd, x, y in zip(_commands(a), ref, got):
        x = x[:1] + [base64.b64decode(x[1]).replace(str(a).encode(), b"OUT")] + x[2:]
        y = y[:1] + [base64.b64decode(y[1]).replace(str(b).encode(), b"OUT")] + y[2:]
        assert y == x, cmd
        assert y[2] is None, (cmd, y[2])
    # the perfetto traces are real (non-empty) and were compared above
    assert all(x[3] and len(base64.b64decode(x[3])) > 200 for c, x in zip(_commands(a), got)
               if any(s.startswith("perfetto:") for s in c))


def test_the_block_really_blocks():
    code = _BLOCKED_RUN % (BLOCKED, str(ROOT / "tests" / "engine"))
    code = code.replace("from run_cli import run_all\n", "import rocrtrace.inputs\n")
    r = subprocess.run([sys.executable, "-c", code, "[]"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert r.returncode != 0 and "rocrtrace.inputs is blocked" in r.stderr


@pytest.mark.parametrize("name", ["rocrtrace.events", "rocrtrace.engine", "rocrtrace.cli",
                                  "rocrtrace.tables", "rocrtrace.report.perfetto"])
def test_product_modules_import_blocked(name):
    code = _BLOCKED_RUN % (BLOCKED, str(ROOT / "tests" / "engine"))
    code = code.replace("from run_cli import run_all\n", f"import {name}\n").replace(
        "print(json.dumps(run_all(json.loads(sys.argv[1]))))", "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
