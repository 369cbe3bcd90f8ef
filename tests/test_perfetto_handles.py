"""Issue 35: the Perfetto trace draws every buffer handle's
lifetime.  KFD handles (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU's handle to
AMDKFD_IOC_FREE_MEMORY_OF_GPU) per process, GEM handles (a GEM create or
DRM_IOCTL_PRIME_FD_TO_HANDLE to DRM_IOCTL_GEM_CLOSE) per DRM file, a flow
from a handle's slice to the dma-buf fd an export made of it, a double free
as an instant on the handle's track, and a handle never freed ending at its
own run's last timestamp.  Read back with the perfetto package's own trace
protos (trace_processor_shell cannot be fetched here)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_perfetto_runs import TE, XDNA, VMM, perfetto, slices, tracks  # noqa: E402


def _times(line: str) -> tuple[int, int]:
    """(entry, return) of a log line, in ns as the writer rounds them."""
    t = float(re.match(r"\d+\s+(\d+\.\d+)", line).group(1))
    dur = float(re.search(r"<(\d+\.\d+)>$", line).group(1))
    us = lambda s: int(round(s * 1e6)) * 1000  # noqa: E731
    return us(t), us(t) + us(dur)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _track(packets, name: str) -> int:
    (u,) = [u for u, td in tracks(packets).items() if td.name == name]
    return u


def _events(packets, uuid, kind) -> list:
    return [
        p
        for p in packets
        if p.HasField("track_event") and p.track_event.track_uuid == uuid and p.track_event.type == kind
    ]


def _annotations(te) -> dict:
    return {a.name: a.string_value or [x.string_value for x in a.array_values] for a in te.debug_annotations}


def test_gem_handle_of_the_xdna_double_close(tmp_path):
    packets = perfetto(tmp_path, XDNA)
    lines = _lines(XDNA)
    # line 8 creates GEM handle 0x1 on fd 3, line 16 closes it; lines 19
    # and 22 close it again (EINVAL: the two bo-double-free findings)
    assert "AMDXDNA_CREATE_BO" in lines[7] and "handle=0x1" in lines[7]
    assert "GEM_CLOSE" in lines[15] and lines[15].endswith("= 0 <0.000010>")
    assert all("GEM_CLOSE" in lines[i] and "EINVAL" in lines[i] for i in (18, 21))
    handles = [td.name for td in tracks(packets).values() if td.name.startswith(("KFD handle", "GEM handle"))]
    assert handles == ["GEM handle 0x1 on fd 3"]
    u = _track(packets, "GEM handle 0x1 on fd 3")
    assert slices(packets, u) == [
        (_times(lines[7])[1], _times(lines[15])[0], "GEM handle 0x1 on fd 3 (DRM_IOCTL_AMDXDNA_CREATE_BO)")
    ]
    (begin,) = _events(packets, u, TE.TYPE_SLICE_BEGIN)
    notes = _annotations(begin.track_event)
    assert notes["at"] == f"{XDNA}:8"
    assert notes["freed at"].endswith(":16")
    # line 13's PRIME_FD_TO_HANDLE returned the handle the file held
    assert [x.rsplit(":", 1)[1] for x in notes["returned again by"]] == ["13"]
    instants = _events(packets, u, TE.TYPE_INSTANT)
    assert [(p.timestamp, p.track_event.name) for p in instants] == [
        (_times(lines[i])[0], "error[bo-double-free]") for i in (18, 21)
    ]
    assert all("already closed" in _annotations(p.track_event)["message"] for p in instants)
    # the handle's slice flows to the two dma-buf fds PRIME_HANDLE_TO_FD made
    flows = list(begin.track_event.flow_ids)
    assert len(flows) == 2
    for fd, i in (("fd 4", 8), ("fd 5", 10)):
        assert "PRIME_HANDLE_TO_FD" in lines[i]
        (fd_begin,) = _events(packets, _track(packets, fd), TE.TYPE_SLICE_BEGIN)
        assert fd_begin.timestamp == _times(lines[i])[1]
        assert len(fd_begin.track_event.terminating_flow_ids) == 1
        assert fd_begin.track_event.terminating_flow_ids[0] in flows


def test_kfd_and_gem_handles_of_the_vmm_export(tmp_path):
    packets = perfetto(tmp_path, VMM)
    lines = _lines(VMM)
    kfd = _track(packets, "KFD handle 0x1a2b00000000")
    gem4 = _track(packets, "GEM handle 0x1 on fd 4")
    gem5 = _track(packets, "GEM handle 0x1 on fd 5")
    assert "ALLOC_MEMORY_OF_GPU" in lines[11] and "FREE_MEMORY_OF_GPU" in lines[15]
    assert slices(packets, kfd) == [
        (_times(lines[11])[1], _times(lines[15])[0], "KFD handle 0x1a2b00000000 (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)")
    ]
    # two DRM files, one handle number each: two tracks, each to its own close
    for track, fd, made, closed in ((gem4, 4, 13, 27), (gem5, 5, 19, 28)):
        assert f"ioctl({fd}<" in lines[made] and "PRIME_FD_TO_HANDLE" in lines[made]
        assert f"ioctl({fd}<" in lines[closed] and "GEM_CLOSE" in lines[closed]
        assert slices(packets, track) == [
            (
                _times(lines[made])[1],
                _times(lines[closed])[0],
                f"GEM handle 0x1 on fd {fd} (DRM_IOCTL_PRIME_FD_TO_HANDLE)",
            )
        ]
    # no double free in this trace: no instant on a handle track
    assert not any(_events(packets, u, TE.TYPE_INSTANT) for u in (kfd, gem4, gem5))
    # the KFD handle's slice flows to fd 6 its export made (line 13), the
    # GEM handle's on fd 4 to fd 6 PRIME_HANDLE_TO_FD made (line 17)
    fd6 = _events(packets, _track(packets, "fd 6"), TE.TYPE_SLICE_BEGIN)
    assert [p.track_event.name for p in fd6] == [
        "fd 6 (AMDKFD_IOC_EXPORT_DMABUF)",
        "fd 6 (DRM_IOCTL_PRIME_HANDLE_TO_FD)",
    ]
    for handle, fd_slice in ((kfd, fd6[0]), (gem4, fd6[1])):
        (begin,) = _events(packets, handle, TE.TYPE_SLICE_BEGIN)
        assert list(begin.track_event.flow_ids) == list(fd_slice.track_event.terminating_flow_ids)
        assert len(begin.track_event.flow_ids) == 1
    (begin5,) = _events(packets, gem5, TE.TYPE_SLICE_BEGIN)
    assert not begin5.track_event.flow_ids


def test_a_handle_never_freed_ends_at_its_own_runs_end(tmp_path):
    """The vmm trace without its GEM_CLOSEs and its exit record, given with
    a second run of the same pid a year later: each never-closed handle
    ends at its own run's last timestamp, in its own run's process."""
    text = VMM.read_text()
    unfreed = tmp_path / "unfreed.log"
    unfreed.write_text(
        "".join(ln for ln in text.splitlines(keepends=True) if "GEM_CLOSE" not in ln and not ln.startswith("# exit"))
    )
    later = tmp_path / "later.log"
    later.write_text(re.sub(r"(?m)^(\d+\s+)(\d+)\.", lambda m: f"{m[1]}{int(m[2]) + 32_000_000}.", text))
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(unfreed, both)
    shutil.copy(later, both)
    packets = perfetto(tmp_path, both)
    calls = [ln for ln in _lines(unfreed) if re.match(r"\d+\s+\d", ln)]
    run_end = max(_times(ln)[1] for ln in calls)
    tds = tracks(packets)
    gem = {u: td for u, td in tds.items() if td.name.startswith("GEM handle")}
    # two DRM files in each run
    assert sorted(td.name for td in gem.values()) == ["GEM handle 0x1 on fd 4"] * 2 + ["GEM handle 0x1 on fd 5"] * 2
    ends = {}
    for u, td in gem.items():
        ((begin, end, _),) = slices(packets, u)
        ends.setdefault(tds[td.parent_uuid].process.pid, []).append((begin, end))
    # one process per run; the unfreed run's handles end at its last
    # timestamp, the later run closed its own a year on
    assert len(ends) == 2
    first, second = sorted(ends.values())
    assert [end for _, end in first] == [run_end, run_end]
    assert min(begin for begin, _ in second) > run_end + 10**15


def test_events_in_hand_give_the_handle_tracks(tmp_path):
    """An API caller's render (the findings' own events, EventSink(ev))
    draws the double-freed handle and its instants too."""
    import rocrtrace
    from test_perfetto_runs import pb

    data = rocrtrace.analyze([XDNA]).render("perfetto")
    packets = list(pb.Trace.FromString(data).packet)
    u = _track(packets, "GEM handle 0x1 on fd 3")
    assert len(slices(packets, u)) == 1
    assert len(_events(packets, u, TE.TYPE_INSTANT)) == 2
