"""Committed fixtures for line shapes strace 6.1 cannot print: regenerate
them byte-identically and check the key events the parser must produce."""
from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys

import pytest

from rocrtrace.events import event_record
from rocrtrace.inputs import open_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures", "strace")
NAMES = sorted(f[:-4] for f in os.listdir(FIX) if f.endswith(".log"))


def test_regenerates_identically(tmp_path):
    subprocess.run([sys.executable, os.path.join(FIX, "gen_shapes.py"), str(tmp_path)],
                   check=True)
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
        return {str(k): ([list(x) if isinstance(x, tuple) else x for x in val]
                         if isinstance(val, list) else val) for k, val in v.items()}
    return v


@pytest.mark.parametrize("name", NAMES)
def test_shape(name):
    t = open_trace(os.path.join(FIX, name + ".log"))
    evs = list(t.events())
    assert t.infos[0].unparsed == 0, t.infos[0].unparsed_samples
    with open(os.path.join(FIX, name + ".events.json")) as f:
        expected = json.load(f)
    # each expected event matches a distinct later event, in order
    i = 0
    for want in expected:
        while i < len(evs):
            ev = evs[i]
            i += 1
            if type(ev).__name__ != want["event"]:
                continue
            if all(k == "event" or _value(ev, k) == v for k, v in want.items()):
                break
        else:
            pytest.fail(f"{name}: no event matching {want}\n" +
                        "\n".join(str(event_record(e)) for e in evs))
