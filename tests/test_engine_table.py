"""The core's event table (src/table.rs, tables.frame_from_columns) equals
the table built row by row from the events' records (the Python engine's
way, kept in tests/engine/rowtable.py) on every fixture's events and on edge values."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from rocrtrace import _engine
from rocrtrace.tables import frame_from_columns, stats
from vocab import Close, FdCreate, Ioctl, Mmap

sys.path.insert(0, str(Path(__file__).resolve().parent / "engine"))
from rowtable import events_frame_of  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(p for p in FIXTURES.rglob("*.log"))


def both(evs):
    return events_frame_of(evs), frame_from_columns(_engine.table_of_events(evs))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_tables_equal(path):
    evs, _infos = _engine.trace_events(str(path))
    assert evs
    py, rs = both(evs)
    pd.testing.assert_frame_equal(py, rs)
    a, b = stats(py), stats(rs)
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], pd.DataFrame):
            pd.testing.assert_frame_equal(a[k], b[k])
        else:
            assert a[k] == b[k]


def test_edge_values():
    evs = [
        Mmap(file="a\udcff.log", line=1, seq=0, pid=1, tid=1, ret=0xFFFF800000000000, length=4096, fd=-1),
        Close(file="t", line=2, seq=1, pid=None, tid=None, ret=-1, err="EBADF", fd=7),
        FdCreate(file="t", line=3, seq=2, pid=1, tid=1, ret=None, name="dup2", origin="dup"),
        Ioctl(
            file="t",
            line=4,
            seq=3,
            pid=1,
            tid=1,
            ret=0,
            fd=3,
            type=0x4B,
            nr=0x20,
            size=40,
            request=0xC0284B20,
            ioctl=None,
        ),
        Ioctl(
            file="t",
            line=5,
            seq=4,
            pid=1,
            tid=1,
            ret=0,
            fd=3,
            type=0x4B,
            nr=0x20,
            size=24,
            ioctl="AMDKFD_IOC_SVM",
            arg={"op": 7, "attrs": [(9, 0), (4, 0), (4, 1)]},
        ),
        Ioctl(file="t", line=6, seq=5, pid=1, tid=1, ret=0, fd=3, ioctl=None),
    ]
    py, rs = both(evs)
    pd.testing.assert_frame_equal(py, rs)


def test_empty():
    py, rs = both([])
    assert list(py.columns) == list(rs.columns) and len(rs) == 0
