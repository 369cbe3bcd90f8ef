"""Committed fixtures for line shapes strace 6.1 cannot print: regenerate
them byte-identically and check the key events the parser must produce."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys

import pytest

from coremodels import trace_events
from rocrtrace.engine import analyze
from vocab import kind

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures", "strace")
NAMES = sorted(f[:-4] for f in os.listdir(FIX) if f.endswith(".log"))


def test_regenerates_identically(tmp_path):
    subprocess.run([sys.executable, os.path.join(FIX, "gen_shapes.py"), str(tmp_path)], check=True)
    made = sorted(os.listdir(tmp_path))
    committed = sorted(f for f in os.listdir(FIX) if f.endswith((".log", ".json")))
    assert made == committed
    for f in made:
        assert filecmp.cmp(tmp_path / f, os.path.join(FIX, f), shallow=False), f


def _value(ev, key):
    v = getattr(ev, key)
    if isinstance(v, tuple):
        return [list(x) if isinstance(x, tuple) else x for x in v]
    if isinstance(v, dict):
        return {
            str(k): ([list(x) if isinstance(x, tuple) else x for x in val] if isinstance(val, list) else val)
            for k, val in v.items()
        }
    return v


@pytest.mark.parametrize("name", NAMES)
def test_shape(name):
    evs, infos = trace_events(os.path.join(FIX, name + ".log"))
    assert infos[0].unparsed == 0, infos[0].unparsed_samples
    with open(os.path.join(FIX, name + ".events.json")) as f:
        expected = json.load(f)
    # each expected event matches a distinct later event, in order
    i = 0
    for want in expected:
        while i < len(evs):
            ev = evs[i]
            i += 1
            if kind(ev) != want["event"]:
                continue
            if all(k == "event" or _value(ev, k) == v for k, v in want.items()):
                break
        else:
            pytest.fail(f"{name}: no event matching {want}\n" + "\n".join(repr(e) for e in evs))


# --- logs as pasted: what reading them took ------------------------------------


@pytest.mark.parametrize(
    "name,preamble,layout,crlf",
    [
        ("pasted_preamble", 5, "", False),
        ("pasted_crlf", 0, "", True),
        ("pasted_indented", 0, "indented by 4 column(s)", False),
        ("pasted_quoted", 0, "quoted with '>'", False),
    ],
)
def test_pasted_layouts_said_in_coverage(name, preamble, layout, crlf):
    path = os.path.join(FIX, name + ".log")
    res = analyze([path])
    (info,) = res.inputs
    assert (info.preamble, info.layout, info.crlf, info.unparsed) == (preamble, layout, crlf, 0)
    said = [s for s in res.coverage["shows"] if s.startswith(info.file)]
    assert bool(said) == bool(preamble or layout or crlf)
    if preamble:
        assert f"{preamble} preamble line(s)" in said[0]
    # a forced format reads the file the same way
    forced, _ = trace_events(path, input_format="strace")
    assert forced == trace_events(path)[0] and forced


# --- tinygrad IOCTL=1 logs ----------------------------------------------------

TG = os.path.join(ROOT, "fixtures", "tinygrad")
TG_NAMES = sorted(f[:-4] for f in os.listdir(TG) if f.endswith(".log"))


def test_tinygrad_fixtures_regenerate_identically(tmp_path):
    subprocess.run([sys.executable, os.path.join(TG, "gen_tinygrad.py"), str(tmp_path)], check=True)
    made = sorted(os.listdir(tmp_path))
    assert made == sorted(f for f in os.listdir(TG) if f.endswith((".log", ".json")))
    for f in made:
        assert filecmp.cmp(tmp_path / f, os.path.join(TG, f), shallow=False), f


@pytest.mark.parametrize("name", TG_NAMES)
def test_tinygrad_events_and_findings(name):
    path = os.path.join(TG, name + ".log")
    evs, infos = trace_events(path)
    assert infos[0].format == "tinygrad"
    with open(os.path.join(TG, name + ".events.json")) as f:
        expected = json.load(f)
    i = 0
    for want in expected:
        while i < len(evs):
            ev = evs[i]
            i += 1
            if kind(ev) == want["event"] and all(k == "event" or _value(ev, k) == v for k, v in want.items()):
                break
        else:
            pytest.fail(f"{name}: no event matching {want}\n" + "\n".join(repr(e) for e in evs))
    res = analyze([path])
    with open(os.path.join(TG, name + ".findings.json")) as f:
        assert sorted({x.rule for x in res.findings}) == json.load(f)
    cannot = " ".join(res.coverage["cannot_show"])
    assert "tinygrad IOCTL=1 logs show only ioctls" in cannot and "no pids" in cannot


def test_tinygrad_svm_attrs_need_their_lines(tmp_path):
    """An SVM line whose attribute lines are missing or out of order keeps
    only what the log shows (partial), and a later line is never taken as an
    attribute of an earlier call."""
    p = tmp_path / "tg.log"
    p.write_text(
        "   1.00 ms +   0.01 ms :  0 = AMDKFD_IOC_SVM                           "
        "start_addr:0x1000 size:0x1000 op:0x0 nattr:0x2 attrs:<x object at 0x1>\n"
        "0: KFD_IOCTL_SVM_ATTR_ACCESS               : 0x1a2b\n"
        "   2.00 ms +   0.01 ms :  0 = AMDKFD_IOC_GET_VERSION                   "
        "major_version:0x1 minor_version:0xE\n"
        "1: KFD_IOCTL_SVM_ATTR_ACCESS               : 0x1a2b\n"
        "ioctl idir=9 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd\n"
    )
    evs, infos = trace_events(str(p))
    assert [(e.ioctl, e.partial) for e in evs] == [("AMDKFD_IOC_SVM", True), ("AMDKFD_IOC_GET_VERSION", False)]
    assert evs[0].arg["attrs"] == [(2, 0x1A2B)] and evs[0].size == 40
    assert infos[0].unparsed == 2  # the stray attribute line, the bad idir
