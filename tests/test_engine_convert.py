"""The core's event conversions (src/py/convert.rs): every event of every
fixture goes Rust -> Python record -> Rust -> Python unchanged, and so do
events built with the vocabulary (tests/vocab.py).  The tests that feed
constructed events to the core's models rest on these conversions."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocrtrace import _engine
from vocab import Close, FdCreate, Frame, Intent, Ioctl, Mmap, kind

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(
    p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".log", ".txt") and "expected" not in p.parts
)


def test_fixture_corpus_is_there():
    assert len(LOGS) > 40


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_events_round_trip(path):
    evs, _infos = _engine.trace_events(str(path))
    assert evs
    back = _engine.roundtrip_events(evs)
    assert back == evs
    assert [kind(e) for e in back] == [kind(e) for e in evs]
    assert [e.fields() for e in back] == [e.fields() for e in evs]


def test_edge_values_round_trip():
    evs = [
        # an address above 2^63, a surrogate-escaped path, a frame
        Mmap(
            file="a\udcff.log",
            line=1,
            seq=1,
            pid=1,
            tid=1,
            ret=0xFFFF800000000000,
            length=4096,
            fd=3,
            path="/tmp/\udcfe",
            text="mmap(...)",
            stack=(Frame(module="/lib/x.so", symbol="f", sym_offset=0x10, addr=0x20),),
        ),
        Close(file="t", line=2, seq=2, pid=1, tid=1, ret=-1, err="EBADF", fd=7),
        FdCreate(
            file="t",
            line=3,
            seq=3,
            pid=1,
            tid=1,
            ret=-1,
            err="EBADF",
            name="dup2",
            origin="dup",
            src_fd=3,
            replace=True,
            new_fd=9,
        ),
        Ioctl(
            file="t",
            line=4,
            seq=4,
            pid=1,
            tid=1,
            ret=0,
            fd=3,
            path="/dev/kfd",
            request=0xC0184B20,
            dir=3,
            type=0x4B,
            nr=0x20,
            size=24,
            ioctl="AMDKFD_IOC_SVM",
            arg={"start_addr": 1 << 63, "size": 4096, "op": 0, "attrs": [(4, 0), (6, 1)]},
            out={"op": (0, 1), "big": str(1 << 70)},
        ),
        Intent(
            file="t",
            line=5,
            seq=5,
            pid=1,
            tid=1,
            ret=0,
            name="hsa_amd_memory_lock",
            args={"ptr": 0x1000, "size": 8192, "agents": [1, 2]},
            outs={"agent_ptr": 0x2000},
        ),
    ]
    assert _engine.roundtrip_events(evs) == evs
    assert [kind(e) for e in evs] == ["Mmap", "Close", "FdCreate", "Ioctl", "Intent"]


def test_record_fields_and_defaults():
    ev = _engine.roundtrip_events([Close(fd=4)])[0]
    assert kind(ev) == "Close" and ev.fd == 4 and ev.name == "close" and ev.path is None
    assert getattr(ev, "fds", "absent") == "absent"  # a field Close does not have
    with pytest.raises(AttributeError):
        ev.origin
    assert ev != Close(fd=5) and ev != FdCreate(fds=(4,))
    assert repr(ev).startswith("Close(file='-', line=0,")


def test_not_an_event_is_a_type_error():
    with pytest.raises(TypeError):
        _engine.roundtrip_events([object()])
    with pytest.raises(TypeError):
        Close(fds=(1,))  # not a Close field: as a dataclass would refuse it
