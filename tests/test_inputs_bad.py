"""Bad input never crashes: it is an InputError naming the file, or parsed
with the bad lines counted."""

from __future__ import annotations

import gzip
import lzma
import os
import random

import pytest

from rocrtrace._engine import parse_lines
from coremodels import trace_events
from rocrtrace.paths import InputError

GOOD = (
    b'100   1795973828.954411 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3 <0.000010>\n'
    b"100   1795973828.954511 close(3) = 0 <0.000003>\n"
)


def _one_line_error(path, match):
    with pytest.raises(InputError) as ei:
        trace_events(str(path))
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("rocrtrace: ") and match in msg
    return msg


def test_missing_empty_and_dirs(tmp_path):
    _one_line_error(tmp_path / "nope.log", "nope.log")
    (tmp_path / "zero.log").write_bytes(b"")
    _one_line_error(tmp_path / "zero.log", "empty")
    (tmp_path / "d").mkdir()
    _one_line_error(tmp_path / "d", "empty directory")


def test_random_and_binary_junk(tmp_path):
    rnd = random.Random(7)
    p = tmp_path / "rand.bin"
    p.write_bytes(bytes(rnd.randrange(256) for _ in range(20000)))
    _one_line_error(p, "not an strace, preload or tinygrad log")
    p2 = tmp_path / "text.txt"
    p2.write_text("hello world\nthis is not a trace\n" * 20)
    _one_line_error(p2, "text.txt")


def test_junk_inside_real_log(tmp_path):
    p = tmp_path / "mixed.log"
    p.write_bytes(
        GOOD + b"\xff\xfe\x00garbage\x00\n" + b"caf\xc3 invalid utf8\n" + GOOD + b"100   close(4"
    )  # truncated last line, no newline
    evs, infos = trace_events(str(p))
    info = infos[0]
    # the log ends inside a call (strace killed while printing it): the call
    # is kept, never completed, not an unparsed line (issue 33)
    assert [e.name for e in evs] == ["openat", "close", "openat", "close", "close"]
    assert evs[-1].partial and evs[-1].ret is None and evs[-1].fd == 4
    assert info.unparsed == 2 and info.ends_mid_line and info.unfinished == 1
    assert [ln for ln, _ in info.unparsed_samples] == [3, 4]


def test_compressed(tmp_path):
    for name, data in (("t.log.gz", gzip.compress(GOOD)), ("t.log.xz", lzma.compress(GOOD))):
        p = tmp_path / name
        p.write_bytes(data)
        evs, _ = trace_events(str(p))
        assert [e.name for e in evs] == ["openat", "close"]


def test_ff_glob_merges(tmp_path):
    (tmp_path / "tr.100").write_bytes(
        b"1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0} => "
        b"{parent_tid=[101]}, 88) = 101 <0.000500>\n1.002000 close(3) = 0 <0.000001>\n"
    )
    (tmp_path / "tr.101").write_bytes(b"1.000100 close(4) = 0 <0.000001>\n")
    evs, infos = trace_events(str(tmp_path / "tr.*"))
    assert [(e.name, e.tid, e.pid) for e in evs] == [("close", 101, 100), ("clone3", 100, 100), ("close", 100, 100)]
    assert [e.seq for e in evs] == [0, 1, 2] and len(infos) == 2


_HUGE = r"""
import os, sys, threading
from rocrtrace import _engine
r, w = os.pipe()
def writer():
    block = b"x" * (1 << 20)
    with os.fdopen(w, "wb") as f:
        for _ in range(1 << 10):           # 1 GiB, no newline
            f.write(block)
threading.Thread(target=writer, daemon=True).start()
(got,) = _engine.read_input(f"/dev/fd/{r}", "strace", 1 << 20)
i = got["info"]
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0].split()[1]
print(got["lines"], i.too_long, i.unparsed, i.ends_mid_line, got["error"], hwm)
"""


def test_gigabyte_line_bounded_memory():
    """One 1 GiB line with no newline, from a pipe: skipped as too long and
    counted, in bounded memory (this process's own peak, VmHWM)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _HUGE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    *head, rss_kb = r.stdout.split()
    assert " ".join(head) == "[(1, None)] 1 1 True None"
    assert int(rss_kb) < 150 * 1024


def test_long_line_in_file_is_skipped(tmp_path):
    p = tmp_path / "long.log"
    p.write_bytes(GOOD + b'100   write(1, "' + b"a" * 5000 + b'", 5000) = 5000\n' + GOOD)
    evs, infos = trace_events(str(p), max_line=1000)
    assert len(evs) == 4 and infos[0].too_long == 1 and infos[0].unparsed == 1


# --- what real logs look like (issue 13) ---------------------------------------


def test_first_line_of_any_length(tmp_path):
    p = tmp_path / "long-first.log"
    p.write_bytes(b'100   write(1, "' + b"a" * 200000 + b'"..., 200000) = 200000\n' + GOOD)
    evs, infos = trace_events(str(p))
    assert [e.name for e in evs] == ["write", "openat", "close"]
    assert infos[0].unparsed == 0


def test_long_hash_header_is_a_preamble(tmp_path):
    p = tmp_path / "hdr.log"
    p.write_bytes(
        b"".join(b"# header line %d of the strace test suite\n" % i for i in range(500)) + b"$ strace -f ./x\n" + GOOD
    )
    evs, infos = trace_events(str(p))
    assert [e.name for e in evs] == ["openat", "close"] and evs[0].line == 502
    assert infos[0].preamble == 501 and infos[0].unparsed == 0


def test_indented_and_quoted_two_line_logs(tmp_path):
    for name, pre in (("ind.log", b"    "), ("tab.log", b"\t"), ("q.log", b"> "), ("qq.log", b"> > ")):
        p = tmp_path / name
        p.write_bytes(b"".join(pre + ln + b"\n" for ln in GOOD.splitlines()))
        evs, _ = trace_events(str(p))
        assert [(e.name, e.tid, e.dur) for e in evs] == [("openat", 100, 1e-05), ("close", 100, 3e-06)], name


def test_relative_timestamps_are_not_an_indentation(tmp_path):
    p = tmp_path / "r.log"
    p.write_text('     0.000000 openat(AT_FDCWD, "/x", O_RDONLY) = 3\n     0.000034 close(3)                = 0\n')
    evs, infos = trace_events(str(p))
    assert [e.name for e in evs] == ["openat", "close"] and infos[0].layout == ""
    assert evs[1].time == pytest.approx(0.000034)


def test_crlf_keeps_durations(tmp_path):
    p = tmp_path / "crlf.log"
    p.write_bytes(GOOD.replace(b"\n", b"\r\n"))
    evs, infos = trace_events(str(p))
    assert [e.dur for e in evs] == [1e-05, 3e-06] and infos[0].crlf


def test_forced_format_reads_the_same_and_refuses_what_does_not_fit(tmp_path):
    p = tmp_path / "pasted.log"
    p.write_bytes(b"Here is my log:\n\n" + b"".join(b"    " + ln + b"\n" for ln in GOOD.splitlines()))
    auto = [repr(e) for e in trace_events(str(p))[0]]
    forced = [repr(e) for e in trace_events(str(p), input_format="strace")[0]]
    assert auto == forced and len(auto) == 2
    with pytest.raises(InputError) as ei:
        trace_events(str(p), input_format="tinygrad")
    assert "no line parses as a tinygrad log" in str(ei.value) and "\n" not in str(ei.value)


def test_fifo_and_process_substitution(tmp_path):
    import subprocess
    import sys
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(gzip.compress(GOOD))

    th = threading.Thread(target=writer)
    th.start()
    evs, _ = trace_events(str(fifo))
    th.join()
    assert [e.name for e in evs] == ["openat", "close"]
    (tmp_path / "x.log").write_bytes(GOOD)
    r = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m rocrtrace analyze <(cat x.log)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "2 events, 0 unparsed" in r.stdout


# --- issue 14: bad values are data, never a crash ----------------------------------


def test_numbers_of_any_size(tmp_path):
    big = b"9" * 5000
    p = tmp_path / "big.log"
    p.write_bytes(
        GOOD
        + b"100   read(3, 0x1, "
        + big
        + b") = "
        + big
        + b"\n"
        + b"100   lseek(3, "
        + big
        + b", SEEK_SET) = 0\n"
        + b"100   close(4) = 0x"
        + b"f" * 5000
        + b"\n"
        + GOOD
    )
    evs, infos = trace_events(str(p))
    assert [e.name for e in evs] == ["openat", "close", "lseek", "openat", "close"]
    assert infos[0].unparsed == 2
    # ... in every other place a number can be: pids, statuses, messages,
    # frame lines, tinygrad fields
    p.write_bytes(
        GOOD + b"100   +++ exited with " + big + b" +++\n[pid " + big + b"] close(3) = 0\n"
        b"strace: Process "
        + big
        + b" attached\n100   +++ superseded by execve in pid "
        + big
        + b" +++\n > /x(f+0x1) [0x1] a.c:"
        + big
        + b"\n"
        + GOOD
    )
    evs, infos = trace_events(str(p))
    assert len(evs) == 4 and infos[0].unparsed == 3
    tg = tmp_path / "tg.log"
    tg.write_bytes(
        b"   1.00 ms +   0.01 ms : " + big + b" = AMDKFD_IOC_GET_VERSION major_version:0x1\n"
        b"ioctl idir=3 size=" + big + b" itype=75 nr=1 fd=3 ret=0 /dev/kfd\n"
        b"   1.00 ms +   0.01 ms :  0 = AMDKFD_IOC_GET_VERSION major_version:0x" + b"f" * 5000 + b"\n"
        b"   1.00 ms +   0.01 ms :  0 = AMDKFD_IOC_GET_VERSION major_version:0x1\n"
    )
    evs, infos = trace_events(str(tg))
    assert [e.out for e in evs] == [None, {"major_version": 1}] and infos[0].unparsed == 3


def test_bad_frames(tmp_path):
    p = tmp_path / "frames.log"
    p.write_bytes(
        GOOD + b" > /lib/x.so(f+0xZZ) [0x10]\n > /lib/x\xff\xfe.so(f\xc3+0x10) [0x10]\n > /lib/y.so(+0x) [0x20]\n"
    )
    evs, _ = trace_events(str(p))
    st = evs[-1].stack
    assert [(f.module, f.symbol, f.sym_offset, f.addr) for f in st] == [
        ("/lib/x.so", "f+0xZZ", None, 0x10),
        ("/lib/x\\xff\\xfe.so", "f\\xc3", 0x10, 0x10),
        ("/lib/y.so", None, None, 0x20),
    ]
    for f in st:
        f.module.encode("utf-8")  # what reports and fingerprints do


PRE = b"# rocrtrace-log 1\n# pid=10 ppid=1 exe=/x page_size=4096\n"


def _svm(fields: bytes) -> bytes:
    return b"10    1.000000 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {" + fields + b"}) = 0 <0.000001>\n"


def test_struct_field_types_are_validated(tmp_path):
    good = (
        b"start_addr=0x1000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=1, "
        b"attrs=[{type=KFD_IOCTL_SVM_ATTR_ACCESS, value=0x1}]"
    )
    p = tmp_path / "svm.log"
    p.write_bytes(
        PRE
        + _svm(good)
        + _svm(good.replace(b"start_addr=0x1000", b"start_addr=zz"))
        + _svm(good.split(b", attrs=")[0] + b", attrs=7")
        + _svm(good.split(b", attrs=")[0] + b", attrs=x")
        + _svm(good.replace(b"value=0x1", b"value={a=1}"))
        + b"10    1.100000 hsa_amd_memory_unlock({a=1}) = 0 <0.000090>\n"
        + b"10    1.200000 hsa_amd_memory_unlock(0x1000) = 0 <0.000090>\n"
    )
    evs, infos = trace_events(str(p))
    evs = [e for e in evs if e.name in ("ioctl", "hsa_amd_memory_unlock")]
    assert infos[0].unparsed == 5
    assert evs[0].arg["attrs"] == [(2, 1)]
    assert evs[1].arg is None  # no start_addr left
    assert "attrs" not in evs[2].arg and "attrs" not in evs[3].arg
    assert "attrs" not in evs[4].arg  # one unreadable attribute: none kept
    for ev in evs[:5]:
        for k, v in (ev.arg or {}).items():
            assert type(v) is int or k == "attrs", (k, v)
    assert evs[5].args == {} and evs[6].args == {"host_ptr": 0x1000}


def test_corrupt_compressed_input_is_one_line(tmp_path):
    data = gzip.compress(GOOD * 1000)
    for name, blob in (
        ("bad.log.gz", data[:20] + b"\x00" * 64 + data[84:]),
        ("cut.log.gz", data[: len(data) // 2]),
        ("bad.log.xz", lzma.compress(GOOD)[:30] + b"\xff" * 40),
    ):
        p = tmp_path / name
        p.write_bytes(blob)
        with pytest.raises(InputError) as ei:
            trace_events(str(p))
        assert "\n" not in str(ei.value) and name in str(ei.value)


def test_ff_clone_cycle(tmp_path):
    (tmp_path / "tr.100").write_bytes(
        b"1.000000 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[101]}, 88) = 101 <0.000500>\n"
    )
    (tmp_path / "tr.101").write_bytes(
        b"1.000100 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[100]}, 88) = 100 <0.000500>\n"
    )
    evs, _ = trace_events(str(tmp_path / "tr.*"))
    assert sorted(e.tid for e in evs) == [100, 101]


def test_ff_many_files_few_fds(tmp_path):
    """5000 -ff files under a 256-fd limit: merged through spill files with a
    bounded number open, memory flat in the file count."""
    import subprocess
    import sys

    d = tmp_path / "ff"
    d.mkdir()
    n = 5000
    lines = [
        f"1.{i:06d} clone3({{flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0}} => "
        f"{{parent_tid=[{1000 + i}]}}, 88) = {1000 + i} <0.000001>"
        for i in range(1, n)
    ]
    (d / "tr.1000").write_text("\n".join(lines) + "\n")
    for i in range(1, n):
        (d / f"tr.{1000 + i}").write_text(f"1.{i:06d} close({i % 50 + 3}) = 0 <0.000001>\n")
    prog = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
        "from rocrtrace.engine import events_frame\n"
        "df, infos = events_frame([sys.argv[1]])\n"
        "evs = len(df); pids = df['pid'].dropna().unique()\n"
        # VmHWM, not ru_maxrss: an exec'd child's ru_maxrss starts at the
        # RSS of the process that forked it (here pytest, hundreds of MB
        # late in a full run), VmHWM is this process's own peak
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "print(evs, len(pids), hwm[0].split()[1])\n"
    )
    r = subprocess.run([sys.executable, "-c", prog, str(d)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    evs, pids, rss_kb = map(int, r.stdout.split())
    assert evs == 2 * (n - 1) and pids == 1
    assert rss_kb < 400 * 1024


def _parse_time(line: str) -> float:
    import time

    t0 = time.perf_counter()
    parse_lines("strace", "x", [line])
    return time.perf_counter() - t0


def test_deep_nesting_is_linear():
    def line(n):
        return "5000  1764435600.000028 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, " + "{a=" * n + "1" + "}" * n + ") = 0"

    small = min(_parse_time(line(20000)) for _ in range(3))
    big = _parse_time(line(200000))
    assert big < 30 * small + 1.0, (small, big)  # linear: ~10x; it was ~100x
