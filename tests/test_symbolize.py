"""Symbolizer against real frames.

The frames come from running a freshly built program under ``strace -k``, so
their brackets are genuine file offsets; binutils' addr2line and nm are the
oracle for function and source line.  The main program is linked -no-pie so
file offsets and virtual addresses differ and the PT_LOAD conversion is
really exercised.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

from vocab import Frame, ModuleMap
from rocrtrace.symbolize import Symbolizer

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("cc", "strace", "addr2line", "nm", "objcopy", "strip")),
    reason="needs cc, strace and binutils",
)

LIB_C = r"""
#include <unistd.h>
int lib_probe(int n)
{
    int r = 0;
    for (int i = 0; i < n; i++)
        r += (int)getppid();
    return r;
}
"""

MAIN_C = r"""
#include <unistd.h>
int lib_probe(int n);
static int inner(int n)
{
    return (int)getpid() + lib_probe(n);
}
int outer(int n)
{
    return inner(n) + 1;
}
int main(void)
{
    return outer(2) == 12345;
}
"""

# ` > /path/mod(sym+0xoff) [0xfileoff]` and the symbol-less forms.
FRAME_RE = re.compile(
    r"^ > (?P<mod>[^(]+)\((?P<sym>[^+)]*)(?:\+(?P<off>0x[0-9a-f]+))?\) "
    r"\[(?P<addr>0x[0-9a-f]+)\]$"
)


def _run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _build_id(path):
    out = _run("readelf", "-n", path).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("sym")
    (d / "lib.c").write_text(LIB_C)
    (d / "main.c").write_text(MAIN_C)
    lib = str(d / "libprobe.so")
    prog = str(d / "prog")
    _run("cc", "-g", "-O0", "-shared", "-fPIC", "-Wl,--build-id", "-o", lib, str(d / "lib.c"))
    _run(
        "cc",
        "-g",
        "-O0",
        "-no-pie",
        "-Wl,--build-id",
        "-o",
        prog,
        str(d / "main.c"),
        f"-L{d}",
        "-lprobe",
        f"-Wl,-rpath,{d}",
    )
    log = d / "strace.txt"
    _run("strace", "-k", "-f", "-e", "trace=getpid,getppid", "-o", str(log), prog)
    frames = []
    for line in log.read_text().splitlines():
        m = FRAME_RE.match(line)
        if m:
            frames.append((m["mod"], m["sym"] or None, int(m["off"], 16) if m["off"] else None, int(m["addr"], 16)))
    ours = [f for f in frames if f[0] in (prog, lib)]
    assert ours, "strace -k gave no frames in the test modules"
    return {"dir": d, "prog": prog, "lib": lib, "frames": ours}


def _nm(path):
    syms = {}
    for line in _run("nm", path).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    return syms


def _addr2line(path, vaddr):
    fn, where = _run("addr2line", "-f", "-e", path, hex(vaddr)).stdout.splitlines()[:2]
    where = where.split(" (discriminator")[0]
    src, _, line = where.rpartition(":")
    if line == "?":  # crt code without debug info (_start)
        return fn, None, None
    return fn, src, int(line)


def test_frames_name_function_and_line_like_addr2line(built):
    sym = Symbolizer()
    nm = {built["prog"]: _nm(built["prog"]), built["lib"]: _nm(built["lib"])}
    seen = set()
    for mod, ssym, soff, addr in built["frames"]:
        # strace's symbol+offset, through nm, gives the virtual address
        # independently of our PT_LOAD arithmetic.
        vaddr = nm[mod][ssym] + soff
        # a frame holds a return address: its call is at the address minus one
        fn, src, line = _addr2line(mod, vaddr - 1)
        f = sym.symbolize(Frame(module=mod, addr=addr))
        assert (f.function, f.source, f.source_line) == (fn, src, line), (mod, hex(addr))
        seen.add(fn)
    assert {"inner", "outer", "main", "lib_probe"} <= seen
    # -no-pie: the program's offsets really are not its addresses.
    prog_frames = [f for f in built["frames"] if f[0] == built["prog"]]
    assert any(nm[built["prog"]][s] + o != a for _, s, o, a in prog_frames)


def test_strace_symbol_is_kept(built):
    mod, ssym, soff, addr = next(f for f in built["frames"] if f[1] == "inner")
    f = Symbolizer().symbolize(Frame(module=mod, symbol="weird::name(int)", sym_offset=soff, addr=addr))
    assert f.function == "weird::name(int)" and f.symbol == "weird::name(int)"
    assert f.source.endswith("main.c")


def test_symbol_plus_offset_without_bracket(built):
    mod, ssym, soff, addr = next(f for f in built["frames"] if f[1] == "outer")
    a = Symbolizer().symbolize(Frame(module=mod, addr=addr))
    b = Symbolizer().symbolize(Frame(module=mod, symbol="outer", sym_offset=soff))
    assert (b.source, b.source_line) == (a.source, a.source_line)


def test_stripped_copy_with_debug_file_by_build_id(built, tmp_path):
    prog = built["prog"]
    stripped = str(tmp_path / "prog.stripped")
    _run("strip", "--strip-all", "-o", stripped, prog)
    bid = _build_id(prog)
    debug_dir = tmp_path / "dbg"
    target = debug_dir / ".build-id" / bid[:2] / (bid[2:] + ".debug")
    target.parent.mkdir(parents=True)
    _run("objcopy", "--only-keep-debug", prog, str(target))

    frames = [f for f in built["frames"] if f[0] == prog]
    plain = Symbolizer()
    helped = Symbolizer(debug_dirs=[str(debug_dir)], maps=[ModuleMap(module=stripped, build_id=bid)])
    for _, _, _, addr in frames:
        want = plain.symbolize(Frame(module=prog, addr=addr))
        got = helped.symbolize(Frame(module=stripped, addr=addr))
        assert (got.function, got.source, got.source_line) == (want.function, want.source, want.source_line)
    # Without the debug dir the stripped file has no .symtab and no lines.
    bare = Symbolizer().symbolize(Frame(module=stripped, addr=frames[0][3]))
    assert bare.source is None


def test_debuglink(built, tmp_path):
    prog = built["prog"]
    dbg = tmp_path / "prog.dbg"
    _run("objcopy", "--only-keep-debug", prog, str(dbg))
    linked = tmp_path / "prog.linked"
    _run("strip", "--strip-all", "-o", str(linked), prog)
    _run("objcopy", f"--add-gnu-debuglink={dbg}", str(linked), cwd=str(tmp_path))
    mod, ssym, soff, addr = next(f for f in built["frames"] if f[0] == prog and f[1] == "inner")
    f = Symbolizer().symbolize(Frame(module=str(linked), addr=addr))
    assert f.function == "inner" and f.source.endswith("main.c")


def test_unusable_modules_stay_unsymbolized(built, tmp_path):
    junk = tmp_path / "not-elf.so"
    junk.write_bytes(b"this is not an ELF file at all" * 10)
    trunc = tmp_path / "truncated.so"
    trunc.write_bytes(open(built["prog"], "rb").read()[:200])
    sym = Symbolizer(maps=[ModuleMap(module=built["lib"], build_id="00" * 20)])
    cases = [
        Frame(module="/nonexistent/libfoo.so", addr=0x1234),
        Frame(module=str(junk), addr=0x10),
        Frame(module=str(trunc), addr=0x1150),
        Frame(module=str(tmp_path), addr=0x10),  # a directory
        Frame(module=built["lib"], addr=0x1129),  # build-id mismatch
        Frame(module=built["prog"], addr=0x7FFFFFFF),  # outside every PT_LOAD
        Frame(module="", addr=None),
    ]
    for f in cases:
        out = sym.symbolize(f)
        assert out.function is None and out.source is None, f


def test_symbolize_stack_and_throughput(built):
    sym = Symbolizer()
    stack = [Frame(module=m, addr=a) for m, s, _, a in built["frames"] if s != "_start"]
    out = sym.symbolize_stack(stack)
    assert out and all(f.source for f in out)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        for m, _, _, a in built["frames"]:
            sym.symbolize(Frame(module=m, addr=a))
            n += 1
    rate = n / (time.perf_counter() - t0)
    print(f"\nsymbolize: {rate:,.0f} frames/s (warm cache)")
    assert rate > 1000


# --- call sites: the line of the call, not the line after it -------------------

DCLOSE_C = r"""
#include <fcntl.h>
#include <unistd.h>

static void twice(int fd)
{
    close(fd);                       /* FIRST */
    close(fd);                       /* SECOND */
}

int main(void)
{
    int fd = open("/etc/hostname", O_RDONLY);   /* OPEN */
    twice(fd);                       /* CALLER */
    return 0;
}
"""


def _marker_line(src: str, marker: str) -> int:
    return next(n for n, text in enumerate(src.splitlines(), 1) if f"/* {marker} */" in text)


@pytest.fixture(scope="module")
def dclose(tmp_path_factory):
    d = tmp_path_factory.mktemp("dclose")
    (d / "dclose.c").write_text(DCLOSE_C)
    prog = str(d / "dclose")
    _run("cc", "-g", "-O0", "-o", prog, str(d / "dclose.c"))
    return d, prog


def _analyze_json(paths, cwd, *extra):
    import json
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", *extra, *paths],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))},
    )
    assert out.returncode == 1, out.stderr
    return json.loads(out.stdout)


def _check_double_close(doc, prog, src):
    (f,) = [f for f in doc["findings"] if f["rule"] == "fd-double-close"]
    prog_frames = lambda st: [fr for fr in st if fr["module"] == prog]  # noqa: E731
    # the offending call's own frame: the second close, then its caller
    lines = [(fr.get("function"), fr.get("line")) for fr in prog_frames(f["stack"])]
    assert lines[:2] == [("twice", _marker_line(src, "SECOND")), ("main", _marker_line(src, "CALLER"))], lines
    prev = next(e for e in f["evidence"] if e["role"] == "previous close")
    assert prog_frames(prev["stack"])[0]["line"] == _marker_line(src, "FIRST")
    # addr2line on the return address minus one is the oracle for every frame
    for ev in f["evidence"]:
        for fr in prog_frames(ev["stack"]):
            off = int(fr["offset"], 16)
            vaddr = _vaddr_of(prog, off)
            fn, srcf, line = _addr2line(prog, vaddr - 1)
            assert (fr["function"], fr.get("line")) == (fn, line), fr
    return f


def _vaddr_of(path, off):
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        for seg in ELFFile(fh).iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_offset"] <= off < seg["p_offset"] + seg["p_filesz"]:
                return off - seg["p_offset"] + seg["p_vaddr"]
    raise AssertionError(hex(off))


def test_strace_k_call_sites_are_the_calls_lines(dclose, tmp_path):
    d, prog = dclose
    log = str(tmp_path / "st.log")
    _run("strace", "-f", "-k", "-yy", "-ttt", "-T", "-e", "trace=openat,close", "-o", log, prog)
    # run from another directory: the location is still the program's frame
    other = tmp_path / "elsewhere"
    other.mkdir()
    doc = _analyze_json([log], str(other))
    f = _check_double_close(doc, prog, DCLOSE_C)
    text = subprocess.run(
        [os.path.join(os.path.dirname(os.sys.executable), "rocrtrace"), "analyze", log],
        capture_output=True,
        text=True,
        cwd=str(other),
    ).stdout
    head = f"{d}/dclose.c:{_marker_line(DCLOSE_C, 'SECOND')}: error[fd-double-close]"
    assert head in text, text
    assert "libc_start_call_main" not in text.split("\n\n")[0]
    # SARIF and GitHub annotations point at the program's line, not glibc's
    import json

    rt = os.path.join(os.path.dirname(os.sys.executable), "rocrtrace")
    sarif = json.loads(
        subprocess.run([rt, "analyze", "--format", "sarif", log], capture_output=True, text=True, cwd=str(other)).stdout
    )
    (res,) = sarif["runs"][0]["results"]
    phys = res["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == f"file://{d}/dclose.c"
    assert phys["region"]["startLine"] == _marker_line(DCLOSE_C, "SECOND")
    gh = subprocess.run([rt, "analyze", "--format", "github", log], capture_output=True, text=True, cwd=str(d)).stdout
    assert gh.startswith(f"::error file=dclose.c,line={_marker_line(DCLOSE_C, 'SECOND')},")
    # --source-root names the tree the location is relative to
    text = subprocess.run(
        [rt, "analyze", "--source-root", str(d), log], capture_output=True, text=True, cwd=str(other)
    ).stdout
    assert text.startswith(f"dclose.c:{_marker_line(DCLOSE_C, 'SECOND')}: error[")
    # from the source directory the path is relative to it
    text = subprocess.run(
        [os.path.join(os.path.dirname(os.sys.executable), "rocrtrace"), "analyze", log],
        capture_output=True,
        text=True,
        cwd=str(d),
    ).stdout
    assert f"dclose.c:{_marker_line(DCLOSE_C, 'SECOND')}: error[fd-double-close]" in text
    assert f["fingerprint"]


def test_preload_capture_call_sites_are_the_calls_lines(dclose, tmp_path):
    d, prog = dclose
    import sys

    prefix = str(tmp_path / "cap")
    subprocess.run(
        [sys.executable, "-m", "rocrtrace", "capture", "--stack-depth", "4", "-o", prefix, "--", prog],
        check=True,
        capture_output=True,
    )
    import glob

    logs = sorted(glob.glob(prefix + ".*"))
    assert logs
    # captured from its start with one thread: the second close closed
    # nothing, a warning (strace -e trace=openat,close above shows no execve:
    # seen in part, an error)
    f = _check_double_close(_analyze_json(logs, str(tmp_path), "--fail-on", "warning"), prog, DCLOSE_C)
    assert f["severity"] == "warning"


def test_signal_frame_address_is_exact(dclose, tmp_path):
    """Past a signal trampoline the frame was interrupted, not calling: its
    address is not decremented (the interrupted instruction itself)."""
    d, prog = dclose
    log = str(tmp_path / "st.log")
    _run("strace", "-k", "-e", "trace=close", "-o", log, prog)
    first = [
        m for m in map(FRAME_RE.match, open(log).read().splitlines()) if m and m["mod"] == prog and m["sym"] == "twice"
    ][0]
    off = int(first["addr"], 16)
    vaddr = _vaddr_of(prog, off)
    exact, call = _addr2line(prog, vaddr), _addr2line(prog, vaddr - 1)
    assert exact[2] != call[2]  # the return address is on the next line
    sym = Symbolizer()
    tramp = Frame("/usr/lib/x86_64-linux-gnu/libc.so.6", symbol="__restore_rt", addr=0x10)
    a, b = Frame(module=prog, addr=off), Frame(module=prog, addr=off)
    sym.symbolize_stack((tramp, a))
    sym.symbolize_stack((b,))
    assert a.source_line == exact[2] and b.source_line == call[2] == _marker_line(DCLOSE_C, "FIRST")


def test_a_file_that_is_not_the_one_that_ran_gives_no_lines(built):
    """A pasted log's frame names `outer+OFF` at an offset where this
    machine's file has another function: its lines would be wrong, so the
    frame keeps strace's name and gets no source line."""
    mod, ssym, soff, addr = next(f for f in built["frames"] if f[1] == "outer")
    inner = next(f for f in built["frames"] if f[1] == "inner")
    f = Symbolizer().symbolize(Frame(module=mod, symbol="outer", sym_offset=soff, addr=inner[3]))
    assert f.function == "outer" and f.source is None and f.source_line is None
    ok = Symbolizer().symbolize(Frame(module=mod, symbol="outer", sym_offset=soff, addr=addr))
    assert ok.source is not None


IFUNC_C = r"""
static int impl(void) { return 7; }
static int (*pick(void))(void) { return impl; }
int chosen(void) __attribute__((ifunc("pick")));
int plain(int n) { return n + 1; }
__attribute__((weak)) int maybe(void) { return 0; }
int data_not_code = 3;
"""


def test_function_symbols_read_from_the_table_match_nm(tmp_path):
    """The symbol table is read straight from its bytes (pyelftools' own
    per-symbol parse took half a second for libc): the function symbols are
    exactly those nm lists as code (T, W, and i for an IFUNC, which
    pyelftools calls STT_LOOS in a SysV-ABI file and the old reading
    dropped), at nm's addresses; data is not a function.  On a stripped
    copy the dynamic table alone gives the same."""
    from rocrtrace.symbolize import _function_symbols, _open_elf

    src = tmp_path / "ifunc.c"
    src.write_text(IFUNC_C)
    lib = str(tmp_path / "libifunc.so")
    _run("cc", "-O1", "-shared", "-fPIC", "-o", lib, str(src))
    stripped = str(tmp_path / "libifunc.stripped.so")
    _run("strip", "-o", stripped, lib)
    for path, table, nm_args in ((lib, ".symtab", ()), (stripped, ".dynsym", ("-D",))):
        want = {}
        for line in _run("nm", *nm_args, "--defined-only", path).stdout.splitlines():
            addr, kind, name = line.split()
            if kind in "TtWi":
                want[name] = int(addr, 16)
        fh, elf = _open_elf(path)
        try:
            got = {name: start for start, _, name in _function_symbols(elf, elf.get_section_by_name(table))}
        finally:
            fh.close()
        assert {"chosen", "plain", "maybe"} <= set(want)
        assert "data_not_code" not in got
        assert got == want, (path, table)
