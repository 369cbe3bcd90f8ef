"""The ioctl catalogue (catalogue/ioctls.toml) and what is generated from it.

Every generated file is what the generator gives now; the catalogue's
layouts, numbers and names agree with the kernel uapi headers installed on
this machine (compiled: gcc computes offsetof, sizeof and the _IOC macros);
and every ioctl the catalogue says the capture library decodes comes out of a
real capture with exactly its declared fields, in order, holding the values
the program passed.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fakedev import devns, logread
from rocrtrace import _engine, kfd
from vocab import kind

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "catalogue" / "generate.py"
INCLUDE = Path("/usr/include")


def _load_generator():
    spec = importlib.util.spec_from_file_location("rocrtrace_catalogue_generate", GEN)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()
CAT = gen.load()


# --- generated files -------------------------------------------------------------


def test_generated_files_are_current():
    r = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr


def test_check_names_a_stale_file_and_regenerating_fixes_it(tmp_path, monkeypatch, capsys):
    for attr in ("RUST", "C_HEADER"):
        copy = tmp_path / getattr(gen, attr).name
        copy.write_text(getattr(gen, attr).read_text() + "// edited by hand\n")
        monkeypatch.setattr(gen, attr, copy)
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("stale: ") == 2 and "kfd_catalogue.rs" in err and "ioctl_table.h" in err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0


@pytest.mark.parametrize(
    "old,new,message",
    [
        (
            '{ name = "gpu_id", off = 36, type = "u32", show = "hex" },\n  { name = "queue_type"',
            '{ name = "gpu_id", off = 40, type = "u32", show = "hex" },\n  { name = "queue_type"',
            "ioctl.AMDKFD_IOC_CREATE_QUEUE.gpu_id: offset 40, C puts it at 36",
        ),
        (
            'log_out = ["dmabuf_fd"]\n\n# --- DRM',
            'log_out = ["dma_fd"]\n\n# --- DRM',
            "ioctl.AMDKFD_IOC_EXPORT_DMABUF: log field 'dma_fd' is no member",
        ),
        (
            'show = "enum:QUEUE_TYPE"',
            'show = "enum:QUEUE_KIND"',
            "ioctl.AMDKFD_IOC_CREATE_QUEUE.queue_type: show 'enum:QUEUE_KIND' names no enum table",
        ),
        (
            '[0x03, "AMDKFD_IOC_DESTROY_QUEUE", "RW", 8]',
            '[0x03, "AMDKFD_IOC_GET_VERSION", "RW", 8]',
            "AMDKFD_IOC_GET_VERSION: in tables KFD and KFD",
        ),
        (
            '[0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", "RW", 16]',
            '[0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", "RW", 24]',
            "ioctl.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: members end at 16, the struct is 24 bytes",
        ),
        (
            'out_if = ["op", "KFD_IOCTL_SVM_OP_GET_ATTR"]',
            'out_if = ["op", "KFD_IOCTL_SVM_ATTR_ACCESS"]',
            "ioctl.AMDKFD_IOC_SVM: out_if KFD_IOCTL_SVM_ATTR_ACCESS is no value of op",
        ),
        ('  "start_addr", "size", "op",', '  "start_adr", "size", "op",', "parse.ints: start_adr is no struct member"),
        (
            '"permissions", "agent_handle"]',
            '"permissions", "agent handle"]',
            "parse: member name 'agent handle' is no identifier of 1 to 32 characters",
        ),
    ],
)
def test_a_fault_is_one_line_naming_the_ioctl(tmp_path, monkeypatch, capsys, old, new, message):
    text = gen.SOURCE.read_text()
    assert text.count(old) == 1, old
    bad = tmp_path / "ioctls.toml"
    bad.write_text(text.replace(old, new))
    monkeypatch.setattr(gen, "SOURCE", bad)
    assert gen.main(["--check"]) == 2
    err = capsys.readouterr().err
    assert err == f"{bad}: {message}\n"


def test_the_package_reads_the_catalogue():
    """What rocrtrace.kfd holds is the catalogue's (one spot check per kind
    of table; the generated block as a whole is checked above)."""
    by_name = {io.name: io for io in CAT.ioctls}
    for type_, table in kfd.TABLES:
        for nr, (name, d, size) in table.items():
            io = by_name[name]
            assert (type_, nr, d, size) == (CAT.types[io.type][0], io.nr, gen.DIRS[io.dir], io.size)
    assert len(kfd.REQUEST_BY_NAME) == len(CAT.ioctls) + sum(len(i.aliases) for i in CAT.ioctls)
    assert set(kfd.DECODED) == {io.name for io in CAT.decoded}
    assert kfd.CONSTANTS["KFD_IOCTL_SVM_ATTR_GRANULARITY"] == kfd.ATTR_GRANULARITY == 7


# --- the kernel's own headers ---------------------------------------------------


def _header_program() -> tuple[str, int]:
    """A C program of _Static_asserts, one per fact an installed uapi header
    can confirm, and how many there are."""
    lines = ["#include <stddef.h>", "#include <fcntl.h>", "#include <linux/ioctl.h>"]
    asserts: list[str] = []
    texts = []
    structs: dict[str, tuple[object, list[int]]] = {}
    for t in CAT.tables:
        h = INCLUDE / t.header
        if not h.exists():
            continue
        text = h.read_text()
        texts.append(text)
        lines.append(f"#include <{t.header}>")
        type_ = CAT.types[t.type][0]
        for io in t.ioctls:
            if re.search(rf"#define\s+{io.name}\b", text):
                sizes = " || ".join(f"_IOC_SIZE({io.name}) == {s}" for s in [io.size, *io.old_sizes])
                asserts.append(
                    f"_IOC_TYPE({io.name}) == {type_} && _IOC_NR({io.name}) == {io.nr} && "
                    f"_IOC_DIR({io.name}) == {gen.DIRS[io.dir]} && ({sizes})"
                )
            if io.struct and re.search(rf"struct\s+{io.struct.name}\s*\{{", text):
                structs[io.struct.name] = (io.struct, [io.size, *io.old_sizes])
        for s in CAT.structs.values():
            if re.search(rf"struct\s+{s.name}\s*\{{", text):
                structs[s.name] = (s, [s.size])
    alltext = "\n".join(texts)
    for name, (s, sizes) in structs.items():
        body = re.search(rf"struct\s+{name}\s*\{{(.*?)\n\}};", alltext, re.S)[1]
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        members = set(re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body))
        if s.tail:
            sizes = [s.tail.off]
        asserts.append(" || ".join(f"sizeof(struct {name}) == {n}" for n in sizes))
        for f in s.fields:
            if f.view or f.name not in members:
                continue  # another union member, or a member newer than this header
            asserts.append(f"offsetof(struct {name}, {f.name}) == {f.off}")
            if not f.flexible:
                asserts.append(f"sizeof(((struct {name} *)0)->{f.name}) == {f.width}")
    for t in CAT.names.values():
        for v, n in t.values:
            if n.startswith("O_") or re.search(rf"\b{n}\b", alltext):
                asserts.append(f"(unsigned){n} == {v}u")  # (1 << 31) is an int
    lines += [f'_Static_assert({a}, "{a.replace(chr(34), "")}");' for a in asserts]
    return "\n".join(lines) + "\n", len(asserts)


def test_layouts_numbers_and_names_match_the_installed_uapi_headers(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not (INCLUDE / "linux" / "kfd_ioctl.h").exists():
        pytest.skip("needs a C compiler and the kernel uapi headers (linux-libc-dev)")
    program, n = _header_program()
    src = tmp_path / "uapi_check.c"
    src.write_text(program)
    if not (INCLUDE / "drm" / "drm.h").exists():
        # linux/kfd_ioctl.h includes drm/drm.h (libdrm-dev's on Debian) for
        # nothing it declares: the kernel types stand in
        (tmp_path / "drm").mkdir()
        (tmp_path / "drm" / "drm.h").write_text("#include <linux/types.h>\n#include <linux/ioctl.h>\n")
    r = subprocess.run([cc, "-fsyntax-only", "-idirafter", str(tmp_path), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    # linux/kfd_ioctl.h alone confirms its ioctls' numbers and the decoded
    # structs' members: far more than a handful of facts
    assert n > 150, program


# --- the capture library writes what the catalogue says ------------------------

ARENA = 0x200000000000
PROGRAM = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
A = %(arena)d
assert libc.mmap(A, 1 << 20, 3, 0x22 | 0x100000, -1, 0) == A   # MAP_FIXED_NOREPLACE
fds = {"kfd": os.open("/dev/kfd", os.O_RDWR), "render": os.open("/dev/dri/renderD128", os.O_RDWR),
       "accel": os.open("/dev/accel/accel0", os.O_RDWR)}
for c in json.load(open(sys.argv[1])):
    for at, data in c["mem"]:
        ctypes.memmove(at, bytes.fromhex(data), len(data) // 2)
    libc.ioctl(fds[c["fd"]], c["req"], c["at"])
"""

PACK = {"u32": "<I", "s32": "<i", "u64": "<Q"}


def _value(r: random.Random, f, names) -> int:
    if f.type == "s32":
        return r.choice([-1, 0, 1, r.randrange(-(2**31), 2**31)])
    top = 2 ** (8 * f.width)
    if f.show and f.show.startswith("enum:") and r.random() < 0.7:
        return r.randrange(len(names[f.show[5:]].values))
    if f.show == "fd":
        return r.choice([0, 1, 2, 3, 5, 99, top - 1])
    return r.choice([0, r.randrange(top), r.randrange(1 << 12), top - 1])


def _case(r: random.Random, io, slot: int) -> tuple[dict, dict]:
    """One call of `io` with random member values: (the program's case, the
    value the log must show per in-field label)."""
    s = io.struct
    base = ARENA + slot * 0x1000  # the struct; arrays it points to 0x800 on
    buf = bytearray(io.size)
    vals: dict[str, object] = {}
    counts = {f.count for f in s.fields if f.count}
    for f in s.fields:
        if f.view or f.flexible:
            continue
        v = r.randrange(7) if f.name in counts else _value(r, f, CAT.names)
        vals[f.name] = v
        struct.pack_into(PACK[f.type], buf, f.off, v)
    mem, size = [], io.size
    for f in s.fields:
        if f.show == "ptr":
            n = vals[f.count]
            elems = [r.randrange(2**32) for _ in range(n)]
            at = 0 if r.random() < 0.2 else base + 0x800
            struct.pack_into("<Q", buf, f.off, at)
            mem.append((base + 0x800, b"".join(struct.pack(PACK[f.array], e) for e in elems).hex()))
            vals[f.name] = None if not at else elems
        elif f.flexible:
            sub = CAT.structs[f.flexible]
            elems = [
                {g.name: (r.randrange(10) if g.name == "type" else _value(r, g, CAT.names)) for g in sub.fields}
                for _ in range(vals[f.count])
            ]
            for e in elems:
                eb = bytearray(sub.size)
                for g in sub.fields:
                    struct.pack_into(PACK[g.type], eb, g.off, e[g.name])
                buf += eb
            size = len(buf)
            vals[f.name] = elems
    if io.old_sizes and r.random() < 0.5:
        size = min(io.old_sizes)
    mem.insert(0, (base, bytes(buf).hex()))
    fd = {"AMDXDNA": "accel", "KFD": "kfd"}.get(io.table, "render")
    req = kfd.ioc(gen.DIRS[io.dir], CAT.types[io.type][0], io.nr, size)
    shown = {s.get(m).label: _signed(vals[m]) if s.get(m).show == "fd" else vals[m] for m in io.log_in}
    return {"fd": fd, "req": req, "mem": mem, "at": base}, shown


def _signed(v: int) -> int:
    """An fd as the kernel reads it: a 32-bit int."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _num(s: str) -> int:
    return logread.num(s, kfd.CONSTANTS)


def _check_shown(name: str, got: dict, want: dict) -> None:
    assert list(got) == list(want), (name, got, want)
    for label, w in want.items():
        g = got[label]
        if w is None:
            assert g == "NULL", (name, label, g)
        elif isinstance(w, list) and w and isinstance(w[0], dict):
            assert [{k: _num(v) for k, v in e.items()} for e in g] == w, (name, label, g, w)
        elif isinstance(w, list):
            assert [_num(x) for x in g] == w, (name, label, g, w)
        else:
            assert _num(g) == w, (name, label, g, w)


@pytest.mark.skipif(not devns.available(), reason="needs root and unshare")
def test_every_decoded_ioctl_writes_its_declared_fields(tmp_path):
    """Each decoded ioctl, called with random member values (enums in and out
    of range, NULL and real arrays, old sizes), logs exactly the catalogue's
    input fields in its order, with the values passed (read back by the
    test's own reader), and the core reads the line as that ioctl.  The null
    devices answer ENOTTY, so only the input half is written here; the
    `=>` half is test_capture_roundtrip's, against the fake kernel."""
    r = random.Random(34)
    cases, want = [], []
    for io in CAT.decoded:
        for _ in range(6):
            c, shown = _case(r, io, len(cases))
            cases.append(c)
            want.append((io.name, shown))
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases))
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM % {"arena": ARENA})
    p = devns.run([sys.executable, str(prog), str(data)], prefix=tmp_path / "rt", fake=False)
    assert p.returncode == 0, p.stderr[-3000:]
    (log,) = tmp_path.glob("rt.*")
    evs = [e for e in logread.read(log).events if e.name == "ioctl" and re.match(r"\d+</dev/(kfd|dri/|accel/)", e.args)]
    assert len(evs) == len(want)
    for ev, (name, shown) in zip(evs, want):
        req, got_in, got_out = logread.ioctl_struct(ev.args)
        assert req == name and got_out is None and ev.errno == "ENOTTY", ev.args
        _check_shown(name, got_in, shown)
    core = [e.ioctl for e in _engine.trace_events(str(log))[0] if kind(e) == "Ioctl" and e.ioctl in kfd.DECODED]
    assert core == [name for name, _ in want]
