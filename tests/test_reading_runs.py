"""Reading rules (issues 33, 35, 37): several inputs in one
run (one bad input never stops the others; a non-trace beside the logs is
skipped with a note), runs kept apart (equal pids of two runs are two
processes), strace logs with no complete call, and intent arguments in
strace's struct notation."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from rocrtrace.engine import analyze

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "fixtures" / "scenarios"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rocrtrace", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def _key(f) -> str:
    d = f.to_dict()
    return json.dumps(
        {
            "rule": d["rule"],
            "severity": d["severity"],
            "cause": d.get("cause"),
            "subject": d["subject"],
            "file": Path(f.file or "").name,
            "line": f.line,
        },
        sort_keys=True,
    )


# --- strace logs with no complete call ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "strace: Process 1234 attached\nstrace: Process 1234 detached\n",
        "1234  pread64(101</dev/dri/renderD128>, strace: Process 1234 detached\n",
        "strace: Process 1234 attached\n1234  pread64(101</dev/dri/renderD128>, \nstrace: Process 1234 detached\n",
    ],
    ids=["messages", "cut-by-detach", "cut-then-detach"],
)
def test_strace_log_with_no_complete_call_is_a_note(tmp_path, text):
    p = tmp_path / "t.log"
    p.write_text(text)
    r = _cli("analyze", p)
    assert r.returncode == 0, r.stderr
    assert "trace-incomplete" in r.stdout
    res = analyze([str(p)])
    assert [i.unparsed for i in res.inputs] == [0]
    assert [f.rule for f in res.findings] == ["trace-incomplete"]


# --- several inputs -----------------------------------------------------------


def test_a_non_trace_beside_the_logs_is_skipped_with_a_note():
    # issue 35 item 5: the directory holds .expected.json files beside the logs
    d = SCEN / "c1-enclosing-range"
    r = _cli("analyze", "-q", d)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback" not in r.stderr
    logs = sorted(d.glob("*.log"))
    res = analyze([str(d)])
    assert sorted(i.file for i in res.inputs) == sorted(map(str, logs))
    skipped = [f for f in res.findings if f.details.get("skipped")]
    assert len(skipped) == len(list(d.glob("*.json")))
    assert all(f.severity == "note" for f in skipped)


def test_a_directory_with_no_trace_is_exit_2(tmp_path):
    (tmp_path / "a.json").write_text("{}\n")
    (tmp_path / "b.txt").write_text("hello\n")
    r = _cli("analyze", tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("rocrtrace: ")


def test_a_bad_named_file_does_not_stop_the_others(tmp_path):
    good = SCEN / "xdna-gem-close" / "7660-buggy-explicit.log"
    bad = tmp_path / "garbage.log"
    bad.write_text("this is not a trace\nnor is this\n")
    alone = _cli("analyze", "-q", good)
    r = _cli("analyze", "-q", bad, good, tmp_path / "missing.log")
    assert r.returncode == 2
    # the good input is reported as alone
    assert r.stdout == alone.stdout.replace("1 input", "1 input")
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and all(x.startswith("rocrtrace: ") for x in lines)
    assert "garbage.log" in lines[0] and "missing.log" in lines[1]
    # one named input alone: the one-line error, as before
    r = _cli("analyze", bad)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1


# --- runs kept apart -------------------------------------------------------------


def _findings(paths):
    res = analyze([str(p) for p in paths])
    return Counter(_key(f) for f in res.findings)


def test_runs_of_equal_pids_are_kept_apart(tmp_path):
    # issue 35 item 2: two captures, both pid 4242
    a = shutil.copy(SCEN / "xdna-gem-close" / "7660-buggy-explicit.log", tmp_path)
    b = shutil.copy(SCEN / "vmm-export-double-close" / "v2-6471-buggy-explicit.log", tmp_path)
    alone = _findings([a]) + _findings([b])
    assert _findings([tmp_path]) == alone
    assert _findings([f"{tmp_path}/*.log"]) == alone
    assert _findings([a, b]) == alone


def test_ff_files_named_one_by_one_are_one_run(tmp_path):
    """`analyze t.*` expanded by the shell names each -ff file: still one run
    as the glob or the directory is; a file of another run named
    beside them stays apart."""
    (tmp_path / "t.100").write_text(
        '100   1.000000 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3 <0.000010>\n'
        "100   1.100000 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD) "
        "= 101 <0.000010>\n"
        "100   1.400000 read(3, 0x7ffd, 16) = -1 EBADF (Bad file descriptor) <0.000003>\n"
    )
    (tmp_path / "t.101").write_text("101   1.200000 close(3) = 0 <0.000003>\n")
    (tmp_path / "u.100").write_text(
        '100   0.500000 openat(AT_FDCWD, "/x", O_RDONLY) = 3 <0.1>\n100   0.600000 close(3) = 0 <0.1>\n'
    )
    named = analyze([str(tmp_path / "t.100"), str(tmp_path / "u.100"), str(tmp_path / "t.101")])
    glob = analyze([str(tmp_path / "t.*"), str(tmp_path / "u.100")])
    assert Counter(f.rule for f in named.findings) == Counter(f.rule for f in glob.findings)
    uac = [f for f in named.findings if f.rule == "fd-use-after-close"]
    assert len(uac) == 1 and uac[0].pid == 100  # the thread's close meets the use
    assert len(named.inputs) == 3


def test_one_ff_run_is_still_one_run(tmp_path):
    # the per-thread files of one strace -ff run share their PREFIX
    (tmp_path / "t.100").write_text(
        '100   1.000000 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3 <0.000010>\n'
        "100   1.100000 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD) "
        "= 101 <0.000010>\n"
    )
    (tmp_path / "t.101").write_text(
        "101   1.200000 close(3) = 0 <0.000003>\n101   1.300000 close(3) = -1 EBADF (Bad file descriptor) <0.000003>\n"
    )
    res = analyze([str(tmp_path)])
    assert len(res.inputs) == 2
    # the thread's close is of its process's fd 3: one table
    rules = [f.rule for f in res.findings]
    assert "fd-double-close" in rules or "fd-bad-fd" in rules, rules
    # a second run with the same pids beside it changes nothing of the first
    other = tmp_path / "other"
    other.mkdir()
    (other / "u.100").write_text((tmp_path / "t.100").read_text())
    shutil.copy(tmp_path / "t.100", other / "t.100")
    shutil.copy(tmp_path / "t.101", other / "t.101")
    (other / "u.100").write_text(
        '100   0.500000 openat(AT_FDCWD, "/x", O_RDONLY) = 3 <0.1>\n100   0.600000 close(3) = 0 <0.1>\n'
    )
    got = Counter(f.rule for f in analyze([str(other)]).findings if not f.rule.startswith("trace-"))
    want = Counter(f.rule for f in res.findings if not f.rule.startswith("trace-"))
    assert got == want


# --- intent arguments in struct notation --------------------------------------------


def _split_args(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in s:
        if c in "[{(<":
            depth += 1
        elif c in "]})>":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _h(v: str) -> str:
    """A handle as its one-field struct; a list of them elementwise."""
    if v.startswith("["):
        inner = v[1:-1].strip()
        return "[" + ", ".join(_h(x) for x in _split_args(inner)) + "]" if inner else v
    return "{handle=%s}" % v


# argument positions that are HSA handle types, per intent call
HANDLES = {
    "hsa_amd_vmem_handle_create": (0, 4),
    "hsa_amd_vmem_handle_release": (0,),
    "hsa_amd_vmem_map": (3,),
    "hsa_amd_vmem_export_shareable_handle": (1,),
    "hsa_amd_vmem_import_shareable_handle": (1,),
    "hsa_amd_vmem_retain_alloc_handle": (0,),
    "hsa_amd_memory_lock": (2,),
    "hsa_amd_memory_lock_to_pool": (2, 4),
}
CALL = re.compile(r"^(?P<pre>.*?)(?P<name>hsa_amd_\w+)\((?P<args>.*)\)(?P<post> = .*)$")


def to_struct_notation(line: str) -> str:
    m = CALL.match(line)
    if not m or m["name"] not in HANDLES and m["name"] != "hsa_amd_vmem_set_access":
        return line
    args = _split_args(m["args"])
    for i in HANDLES.get(m["name"], ()):
        if i < len(args):
            args[i] = _h(args[i])
    if m["name"] == "hsa_amd_vmem_handle_create" and len(args) > 2 and args[2] == "0":
        args[2] = "MEMORY_TYPE_NONE"
    if m["name"] == "hsa_amd_vmem_set_access" and len(args) > 2:
        args[2] = re.sub(r"agent_handle=(0x[0-9a-f]+|\d+)", r"agent_handle={handle=\1}", args[2])
    return f"{m['pre']}{m['name']}({', '.join(args)}){m['post']}"


EXPLICIT = sorted(SCEN.glob("*/*explicit*.log"))


def test_the_converter_changes_every_explicit_log():
    assert len(EXPLICIT) >= 15
    changed = 0
    for log in EXPLICIT:
        text = log.read_text()
        changed += any("{handle=" in to_struct_notation(x) for x in text.splitlines())
    assert changed >= 12


@pytest.mark.parametrize("log", EXPLICIT, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_intent_struct_notation_reads_the_same(tmp_path, log):
    text = log.read_text()
    conv = "\n".join(to_struct_notation(x) for x in text.splitlines()) + "\n"
    p = tmp_path / log.name
    p.write_text(conv)
    plain = analyze([str(log)])
    structs = analyze([str(p)])
    assert [i.unparsed for i in structs.inputs] == [0], structs.inputs[0].unparsed_samples
    assert Counter(_key(f) for f in structs.findings) == Counter(_key(f) for f in plain.findings)


# --- misread inputs (issue 37) ------------------------------------------------

PRELOAD = SCEN / "c1-enclosing-range" / "v1-buggy-explicit.log"


def test_a_utf8_bom_before_the_preload_header_still_reads_as_preload(tmp_path):
    p = tmp_path / PRELOAD.name
    p.write_bytes(b"\xef\xbb\xbf" + PRELOAD.read_bytes())
    plain, bom = analyze([str(PRELOAD)]), analyze([str(p)])
    assert [i.format for i in bom.inputs] == ["preload"]
    assert bom.inputs[0].header == plain.inputs[0].header
    assert bom.inputs[0].exit_seen and bom.inputs[0].unparsed == 0
    assert Counter(_key(f) for f in bom.findings) == Counter(_key(f) for f in plain.findings)


def test_a_utf8_bom_before_an_strace_log(tmp_path):
    p = tmp_path / "bom.log"
    p.write_bytes(b"\xef\xbb\xbf100   close(3) = 0\n100   close(3) = -1 EBADF (Bad file descriptor)\n")
    res = analyze([str(p)])
    assert [(i.format, i.unparsed, i.events) for i in res.inputs] == [("strace", 0, 2)]


@pytest.mark.parametrize("blank", [b"\n", b"  \r\n"])
def test_a_trace_after_8_mib_of_blank_lines(tmp_path, blank):
    p = tmp_path / "blank.log"
    body = PRELOAD.read_bytes()
    p.write_bytes(blank * ((8 << 20) // len(blank) + 1000) + body)
    res = analyze([str(p)])
    assert [i.format for i in res.inputs] == ["preload"]
    plain = analyze([str(PRELOAD)])
    assert res.inputs[0].events == plain.inputs[0].events
    assert Counter((f.rule, f.severity) for f in res.findings) == Counter((f.rule, f.severity) for f in plain.findings)
    # through a pipe too (the skipped lines are replayed)
    with open(p, "rb") as fh:
        r = subprocess.run(
            [sys.executable, "-m", "rocrtrace", "analyze", "-q", "-"], stdin=fh, capture_output=True, text=True
        )
    assert r.returncode in (0, 1), r.stderr


def test_lost_records_are_reported(tmp_path):
    p = tmp_path / "lost.log"
    text = PRELOAD.read_text().replace("# exit status=", "# lost 17\n# exit status=", 1)
    assert "# lost 17" in text
    p.write_text(text)
    res = analyze([str(p)])
    notes = [f for f in res.findings if f.rule == "trace-incomplete"]
    assert len(notes) == 1 and "17 record(s) lost" in notes[0].message
    assert not any(f.rule == "trace-incomplete" for f in analyze([str(PRELOAD)]).findings)


def test_a_lost_log_window_is_reported(tmp_path):
    p = tmp_path / "window.log"
    lines = PRELOAD.read_text().splitlines(keepends=True)
    cut = len(lines) // 2
    p.write_text(
        "".join(lines[:cut]) + "# capture-window-lost the program unmapped or mapped "
        "over the log's mapping: no record after this line\n"
    )
    res = analyze([str(p)])
    assert res.inputs[0].unparsed == 0
    notes = [f for f in res.findings if f.rule == "trace-incomplete"]
    assert len(notes) == 1 and "capture-window-lost" in notes[0].message
