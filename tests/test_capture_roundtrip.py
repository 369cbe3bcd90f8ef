"""Round trip: every struct the capture library decodes reads back to exactly
the values the program passed (and, after success, the values the fake
kernel wrote), for random values, through real ioctls on real fds."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakedev import devns, logread
from rocrtrace import kfd

pytestmark = pytest.mark.skipif(not devns.available(), reason="needs root and unshare")

NAMES = dict(kfd.CONSTANTS)
TESTS = Path(__file__).parent
ROOT = TESTS.parent
GPUS = [0x1A2B, 0x3C4D]

PROGRAM = r"""
import json, os, sys, ctypes
sys.path[:0] = [%(tests)r, %(root)r]
from fakedev import kfdcalls as K
cases = json.load(open(sys.argv[1]))
kfd = K.open_kfd(); render = K.open_render(); accel = K.open_accel()
out = []
for c in cases:
    k, f = c["kind"], c["f"]
    fd = {"render": render, "accel": accel}.get(c.get("dev"), kfd)
    keep = None
    if k == "svm":
        s = K.svm_struct(len(f["attrs"]))(f["start_addr"], f["size"], f["op"], len(f["attrs"]))
        for i, (t, v) in enumerate(f["attrs"]):
            s.attrs[i] = K.SvmAttr(t, v)
        req = K.svm_request(len(f["attrs"]))
    elif k in ("map", "unmap"):
        keep = (K.u32 * len(f["ids"]))(*f["ids"])
        s = K.MapMemory(f["handle"], ctypes.addressof(keep), len(f["ids"]), 0)
        req = K.MAP_MEMORY_TO_GPU if k == "map" else K.UNMAP_MEMORY_FROM_GPU
    else:
        cls, req = {"export": (K.ExportDmabuf, K.EXPORT_DMABUF), "import": (K.ImportDmabuf, K.IMPORT_DMABUF),
                    "info": (K.GetDmabufInfo, K.GET_DMABUF_INFO), "alloc": (K.AllocMemory, K.ALLOC_MEMORY_OF_GPU),
                    "free": (K.FreeMemory, K.FREE_MEMORY_OF_GPU), "h2f": (K.Prime, K.PRIME_HANDLE_TO_FD),
                    "f2h": (K.Prime, K.PRIME_FD_TO_HANDLE), "gemclose": (K.GemClose, K.GEM_CLOSE),
                    "xdna": (K.XdnaCreateBo, K.XDNA_CREATE_BO), "gemcreate": (K.GemCreate, K.AMDGPU_GEM_CREATE),
                    "heap": (K.HeapAlloc, K.DMA_HEAP_ALLOC)}[k]
        s = cls(**f)
    r = K.try_ioctl(fd, req, s)
    after = {}
    for name, *_ in s._fields_:
        v = getattr(s, name)
        after[name] = [(a.type, a.value) for a in v] if name == "attrs" else v
    out.append({"r": r, "after": after})
json.dump(out, sys.stdout)
"""

u64 = st.integers(0, 2**64 - 1)
u32 = st.integers(0, 2**32 - 1)
fdv = st.integers(0, 2**31 - 1)
page = st.integers(1, 2**35).map(lambda p: p * 4096)
attr = st.tuples(st.integers(0, 9), u32)
get_attr = st.one_of(st.tuples(st.sampled_from([0, 1, 5, 6, 7]), u32), st.tuples(st.just(2), st.sampled_from(GPUS)))


def case():
    return st.one_of(
        st.builds(
            lambda a, s, op, at: {"kind": "svm", "f": {"start_addr": a, "size": s, "op": op, "attrs": at}},
            u64,
            u64,
            st.integers(0, 3),
            st.lists(attr, max_size=8),
        ),
        st.builds(lambda h, fl: {"kind": "export", "f": {"handle": h, "flags": fl}}, u64, u32),
        st.builds(lambda v, g, d: {"kind": "import", "f": {"va_addr": v, "gpu_id": g, "dmabuf_fd": d}}, u64, u32, fdv),
        st.builds(lambda d: {"kind": "info", "f": {"dmabuf_fd": d}}, fdv),
        st.builds(
            lambda v, s, g, fl, mo: {
                "kind": "alloc",
                "f": {"va_addr": v, "size": s, "gpu_id": g, "flags": fl, "mmap_offset": mo},
            },
            u64,
            u64,
            st.one_of(u32, st.sampled_from(GPUS)),
            u32,
            u64,
        ),
        st.builds(lambda h: {"kind": "free", "f": {"handle": h}}, u64),
        st.builds(
            lambda k, h, ids: {"kind": k, "f": {"handle": h, "ids": ids}},
            st.sampled_from(["map", "unmap"]),
            u64,
            st.lists(u32, min_size=1, max_size=8),
        ),
        st.builds(lambda h, fl: {"kind": "h2f", "dev": "render", "f": {"handle": h, "flags": fl}}, u32, u32),
        st.builds(lambda d: {"kind": "f2h", "dev": "render", "f": {"fd": d}}, fdv),
        st.builds(lambda h: {"kind": "gemclose", "dev": "render", "f": {"handle": h}}, u32),
        st.builds(
            lambda fl, v, s, t: {"kind": "xdna", "dev": "accel", "f": {"flags": fl, "vaddr": v, "size": s, "type": t}},
            st.one_of(st.just(0), u64),
            u64,
            u64,
            st.integers(0, 6),
        ),
        st.builds(
            lambda s, a, d, df: {
                "kind": "gemcreate",
                "dev": "render",
                "f": {"bo_size": s, "alignment": a, "domains": d, "domain_flags": df},
            },
            u64,
            u64,
            u64,
            u64,
        ),
        st.builds(
            lambda ln, ff, hf: {"kind": "heap", "f": {"len": ln, "fd_flags": ff, "heap_flags": hf}}, u64, u32, u64
        ),
        # successes, so the `=>` half is exercised: valid allocations and GET_ATTR queries
        st.builds(
            lambda s, g, fl: {
                "kind": "alloc",
                "f": {"va_addr": 0, "size": s, "gpu_id": g, "flags": fl, "mmap_offset": 0},
            },
            page,
            st.sampled_from(GPUS),
            st.sampled_from([1, 2, 0x80000002, 0x10]),
        ),
    )


def n(s):
    return logread.num(s, NAMES)


def check_in(c, got):
    k, f = c["kind"], c["f"]
    if k == "svm":
        assert n(got["start_addr"]) == f["start_addr"] and n(got["size"]) == f["size"]
        assert n(got["op"]) == f["op"] and int(got["nattr"]) == len(f["attrs"])
        assert [(n(a["type"]), n(a["value"])) for a in got["attrs"]] == [tuple(a) for a in f["attrs"]]
    elif k in ("map", "unmap"):
        assert n(got["handle"]) == f["handle"]
        assert [n(x) for x in got["device_ids_array"]] == f["ids"]
        assert int(got["n_devices"]) == len(f["ids"])
    else:
        assert set(got) == set(f), (got, f)
        for name, v in f.items():
            assert n(got[name]) == v, (name, got[name], v)


OUT_FIELDS = {
    "export": ["dmabuf_fd"],
    "import": ["handle"],
    "info": ["size", "gpu_id", "flags"],
    "alloc": ["handle", "mmap_offset"],
    "map": ["n_success"],
    "unmap": ["n_success"],
    "h2f": ["fd"],
    "f2h": ["handle"],
    "xdna": ["handle"],
    "heap": ["fd"],
}


def check_out(c, res, out):
    k = c["kind"]
    if res["r"] < 0 or k in ("free", "gemclose"):
        assert out is None
        return
    if k == "svm":
        if c["f"]["op"] != 1:
            assert out is None
            return
        assert [(n(a["type"]), n(a["value"])) for a in out["attrs"]] == [tuple(a) for a in res["after"]["attrs"]]
        return
    if k == "gemcreate":
        assert n(out["handle"]) == res["after"]["bo_size"] & 0xFFFFFFFF
        return
    assert out is not None
    for name in OUT_FIELDS[k]:
        assert n(out[name]) == res["after"][name], (name, out, res)


def joined(path: Path) -> Path:
    """A copy of a preload log with its `#+` continuation records joined back
    into whole records (independently of rocrtrace's parser), for logread."""
    out, pend = [], {}
    for ln in path.read_text().splitlines():
        m = re.match(r"#\+ (\d+) (\d+)(\+?) ", ln)
        if not m:
            out.append(ln)
            continue
        parts = pend.setdefault(m[1], [])
        assert int(m[2]) == len(parts) + 1, ln
        parts.append(ln[m.end() :])
        if not m[3]:
            out.append("".join(pend.pop(m[1])))
    assert not pend
    dest = path.parent / "joined" / path.name
    dest.parent.mkdir(exist_ok=True)
    dest.write_text("\n".join(out) + "\n")
    return dest


def run_cases(tmp_path, cases):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM % {"tests": str(TESTS), "root": str(ROOT)})
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases))
    prefix = tmp_path / "rt"
    for old in tmp_path.glob("rt.*"):
        old.unlink()
    p = devns.run([sys.executable, str(prog), str(data)], prefix=prefix, gpus=GPUS)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads(p.stdout)
    files = list(tmp_path.glob("rt.*"))
    assert len(files) == 1
    log = logread.read(joined(files[0]))
    assert not log.bad
    ioctls = [
        e
        for e in log.events
        if e.name == "ioctl"
        and e.args.split(",")[0].split("<", 1)[-1].startswith(("/dev/kfd>", "/dev/dri/", "/dev/accel/"))
    ]
    return results, ioctls


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(case(), min_size=20, max_size=40))
def test_roundtrip_random_structs(tmp_path_factory, cases):
    tmp_path = tmp_path_factory.mktemp("rt")
    results, ioctls = run_cases(tmp_path, cases)
    assert len(ioctls) == len(cases)
    for c, res, ev in zip(cases, results, ioctls):
        assert len(ev.args) < 4096
        req, got_in, got_out = logread.ioctl_struct(ev.args)
        check_in(c, got_in)
        expect_err = None if res["r"] >= 0 else os.strerror(-res["r"])
        assert (ev.errno is None) == (expect_err is None)
        if expect_err:
            assert ev.result.endswith(f"({expect_err})")
        check_out(c, res, got_out)


def test_large_nattr_is_continued_not_cut(tmp_path):
    """A record over 4 KiB goes out as `#+` continuation records, each one
    write under 4096 bytes, that read back as the one whole record."""
    attrs = [[6, 0xFF]] * 300
    cases = [{"kind": "svm", "f": {"start_addr": 0x1000, "size": 0x1000, "op": 0, "attrs": attrs}}]
    results, ioctls = run_cases(tmp_path, cases)
    (ev,) = ioctls
    raw = next(tmp_path.glob("rt.*")).read_text().splitlines()
    pieces = [ln for ln in raw if ln.startswith("#+ ")]
    assert len(pieces) >= 4
    assert all(len(ln) < 4096 and not ln.endswith(" ") for ln in pieces)
    assert pieces[0].split()[2] == "1+" and pieces[-1].split()[2] == str(len(pieces))
    # the joined record: nattr=300, the first 256 decoded, then `...`
    assert "nattr=300" in ev.args and ev.args.count("{type=") == 256 and ev.args.endswith(", ...]}")
    assert ev.errno == "EFAULT"
    from coremodels import trace_events

    evs, infos = trace_events(str(next(tmp_path.glob("rt.*"))))
    assert infos[0].unparsed == 0
    (svm,) = [e for e in evs if e.name == "ioctl" and e.type == 0x4B and e.nr == 0x20]
    assert svm.line == raw.index(pieces[0]) + 1


def test_continued_record_keeps_its_stack_frames(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM % {"tests": str(TESTS), "root": str(ROOT)})
    data = tmp_path / "cases.json"
    data.write_text(
        json.dumps([{"kind": "svm", "f": {"start_addr": 0x1000, "size": 0x1000, "op": 0, "attrs": [[6, 0xFF]] * 300}}])
    )
    p = devns.run([sys.executable, str(prog), str(data)], prefix=tmp_path / "rt", gpus=GPUS, stack_depth=4)
    assert p.returncode == 0, p.stderr[-3000:]
    (f,) = tmp_path.glob("rt.*")
    lines = f.read_text().splitlines()
    last = max(i for i, ln in enumerate(lines) if ln.startswith("#+ "))
    assert lines[last + 1].startswith(" > ")  # the frames follow the last piece
    from coremodels import trace_events

    evs, infos = trace_events(str(f))
    (svm,) = [e for e in evs if e.name == "ioctl" and e.type == 0x4B and e.nr == 0x20]
    assert len(svm.stack) >= 1 and infos[0].unparsed == 0


def test_continuation_with_a_piece_missing_is_unparsed(tmp_path):
    """A continued record with a piece lost is counted as unparsed, never
    joined wrong or dropped silently."""
    attrs = [[6, 0xFF]] * 300
    cases = [{"kind": "svm", "f": {"start_addr": 0x1000, "size": 0x1000, "op": 0, "attrs": attrs}}]
    run_cases(tmp_path, cases)
    src = next(tmp_path.glob("rt.*"))
    lines = src.read_text().splitlines()
    second = next(i for i, ln in enumerate(lines) if ln.startswith("#+ ") and ln.split()[2] == "2+")
    broken = tmp_path / "broken.log"
    broken.write_text("\n".join(lines[:second] + lines[second + 1 :]) + "\n")
    from coremodels import trace_events

    evs, infos = trace_events(str(broken))
    assert not [e for e in evs if e.name == "ioctl" and e.type == 0x4B and e.nr == 0x20]
    assert infos[0].unparsed >= 2


THREADED = r"""
import sys, threading
sys.path[:0] = [%(tests)r, %(root)r]
from fakedev import kfdcalls as K
kfd = K.open_kfd()
def big():
    for i in range(40):
        K.svm(kfd, 0x100000 * (i + 1), 0x1000, [(6, 0xFF)] * 300, raise_=False)
def small():
    for i in range(400):
        K.try_ioctl(kfd, K.GET_VERSION, None)
ts = [threading.Thread(target=big), threading.Thread(target=small), threading.Thread(target=small)]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def test_continued_records_between_other_threads_parse_the_same_chunked(tmp_path):
    """Pieces of long records with other threads' records between them: one
    event each, and chunked parsing (--jobs) gives exactly the sequential
    result whatever the chunk boundaries."""
    prog = tmp_path / "threads.py"
    prog.write_text(THREADED % {"tests": str(TESTS), "root": str(ROOT)})
    p = devns.run([sys.executable, str(prog)], prefix=tmp_path / "rt", gpus=GPUS)
    assert p.returncode == 0, p.stderr[-3000:]
    (f,) = tmp_path.glob("rt.*")
    lines = f.read_text().splitlines()
    assert all(len(ln) < 4096 for ln in lines)
    from coremodels import trace_events

    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0
    svm = [e for e in evs if e.name == "ioctl" and e.type == 0x4B and e.nr == 0x20]
    assert len(svm) == 40
    # Threads interleave the pieces only now and then; the same bytes with
    # the next other-thread record moved in after each first piece are what
    # a busier run writes, so both files are checked.
    spliced, i = list(lines), 0
    while i < len(spliced):
        if spliced[i].startswith("#+ ") and spliced[i].split()[2] == "1+":
            tid = spliced[i].split()[1]
            j = next(
                (k for k in range(i + 1, len(spliced)) if spliced[k][:1].isdigit() and spliced[k].split()[0] != tid),
                None,
            )
            if j is not None:
                spliced.insert(i + 1, spliced.pop(j))
        i += 1
    mixed = tmp_path / "mixed" / f.name
    mixed.parent.mkdir()
    mixed.write_text("\n".join(spliced) + "\n")
    evs, infos = trace_events(str(mixed))
    assert len([e for e in evs if e.name == "ioctl" and e.nr == 0x20]) == 40
    assert infos[0].unparsed == 0
    import test_chunked

    for path in (f, mixed):
        test_chunked._check_all(str(path), ks=(1, 3, 50), both=False)
