"""The core's line shapes at the edges of its grammar: plain results and
their durations, deep values, mutated real lines, and a build without the
compiled core.  (The Python parser's fast paths and their equality with its
general grammar left with it; the core's tokenizer pins its own shapes in
src/parse/tokens/tests.rs and src/parse/values.rs.)  SPECIAL, LINES and
corpus() are the line generators test_engine_parse.py shares."""

from __future__ import annotations

import glob
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st

from rocrtrace._engine import parse_lines
from vocab import kind

ROOT = Path(__file__).resolve().parent.parent

# Argument text made of the characters the scanners treat specially.
SPECIAL = st.lists(
    st.sampled_from(
        list('",(){}[]<>/*\\-=. ax0:|') + ["...", "->", "/*", "*/", "(deleted)", "<char 1:2>", "</dev/kfd>", '"a,b"']
    ),
    max_size=30,
).map("".join)


def corpus() -> list[str]:
    files = sorted(glob.glob(str(ROOT / "fixtures/strace/*.log")) + glob.glob(str(ROOT / "fixtures/scenarios/*/*.log")))
    assert len(files) > 40, files
    return files


PREFIXES = st.sampled_from(
    [
        "4242  1764435600.000013 ",
        "7 1764435600.5 ",
        "4242 12:34:56.789 ",
        "12345678 1764435600.1 ",
        "42  1764435600 ",
        "42 1:2:3.4 ",
        "",
        "[pid 42] ",
        "42 1764435600.1  ",
    ]
)
NAMES = st.sampled_from(
    [
        "ioctl",
        "close",
        "openat",
        "read",
        "mmap",
        "clone3",
        "execve",
        "syscall_0x1b3",
        "exit_group",
        "x#y:z",
        "9bad",
        "getpid",
    ]
)
RESULTS = st.sampled_from(
    [
        "",
        ") = 0",
        ") = 3</dev/kfd<char 238:0>>",
        ") = -1 EBADF (Bad fd)",
        ") = -1 (errno 123)",
        ") = ?",
        ") = ? <unavailable>",
        ") = 0x10 <1.5>",
        ") = 7</x>(deleted)",
        ") = 7</x (deleted)>",
        ") = 0123",
        ") = -1 EAGAIN (Resource temporarily unavailable) <0.000010>",
        ") = 5 <0.000020>",
        ") =0",
        ")=  -1  E2BIG",
        " <unfinished ...>",
        "<unfinished ...>",
        " <detached ...>",
        ") = 0 (Timeout) <1.>",
        ") = 3<>",
        ") = 3</a<b<c>>>",
        ") = 3</a->b>",
        ") = 1 <x>",
        ") = 1 <0.5> ",
        ") = 1 <0.5>>",
        "\t) = 0",
        ") = -1 E (one letter)",
        ") = ? Z",
        ") = -1 eagain",
        ") = -1 E_1\x1c<2>",
        ") = 0x",
    ]
)
LINES = st.one_of(
    st.tuples(PREFIXES, NAMES, SPECIAL, RESULTS).map(lambda t: f"{t[0]}{t[1]}({t[2]}{t[3]}"),
    st.tuples(PREFIXES, NAMES, SPECIAL, RESULTS).map(lambda t: f"{t[0]}<... {t[1]} resumed>{t[2]}{t[3]}"),
    st.tuples(
        PREFIXES,
        st.sampled_from(["+++ exited with 0 +++", "--- SIGCHLD {} ---", "<... x resumed> <unfinished ...>) = ?"]),
    ).map("".join),
)


def check_accounting(lines, evs, info):
    """What holds for any lines: every line counted, every event on one of
    them, no more unparsed lines than lines, each sample on one of them."""
    n = len(lines)
    assert info["lines"] == n
    assert info["events"] == len(evs)
    assert 0 <= info["unparsed"] <= n
    assert all(1 <= e.line <= n for e in evs), [(e.line, n) for e in evs]
    assert all(1 <= ln <= n for ln, _ in info["unparsed_samples"])


# --- results: value, error name, path, duration ------------------------------

# (text after "= ", what the core makes of it: ret, err, dur); derived
# from strace's printing (print_syscall_resume/tail: "= VALUE [ERRNAME (text)]
# [<secs>]", octal for umask/mode results, "?" for an unknown value).
RESULT_CASES = [
    ("0", (0, None, None)),
    ("42", (42, None, None)),
    ("0x7f00", (0x7F00, None, None)),
    ("-1", (-1, "EUNKNOWN", None)),  # failed, errno not named
    ("?", (None, None, None)),
    ("0644", (0o644, None, None)),  # umask's octal
    ("10</x>", (10, None, None)),  # -y: the path of the fd returned
    ("0 <0.000041>", (0, None, 0.000041)),
    ("0 <1.>", (0, None, 1.0)),
    ("0 <unavailable>", (0, None, None)),
    ("0 (Timeout)", (0, None, None)),
    ("-1 ENOENT (No such file)", (-1, "ENOENT", None)),
    ("-1 ENOENT (No such file) <0.000002>", (-1, "ENOENT", 0.000002)),
    ("? ERESTARTSYS (To be restarted if SA_RESTART is set)", (None, "ERESTARTSYS", None)),
    ("10</x> <0.5>", (10, None, 0.5)),
    ("0  ", (0, None, None)),
]


@pytest.mark.parametrize("text,want", RESULT_CASES, ids=[c[0] for c in RESULT_CASES])
def test_plain_results(text, want):
    (ev,), info = parse_lines("strace", "t.log", [f"x() = {text}"])
    assert info["unparsed"] == 0
    assert (ev.ret, ev.err, ev.dur) == want
    assert info["has_durations"] == (want[2] is not None)


# --- deep values ---------------------------------------------------------------

DEEP = [
    "{a=" * 5000 + "1" + "}" * 5000,
    "[" * 3000 + "]" * 3000,
    "{a=1} => " * 3000 + "{}",
    "1 => " * 3000 + "1",
    "{a=1 => " * 2000 + "2" + "}" * 2000,
    "[{x=" * 1500 + "0" + "}]" * 1500,
]
DEEP += ["{a=" * n + "1" + "}" * n for n in range(60, 70)]


@pytest.mark.parametrize("tok", DEEP, ids=lambda t: f"{t[:12]}…{len(t)}")
def test_deep_values_stay_bounded(tok):
    """Untrusted nesting and '=>' chains as the struct of an SVM ioctl: no
    crash and no recursion limit, one event for the line."""
    line = f"5000  1764435600.000028 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {tok}) = 0"
    evs, info = parse_lines("preload", "deep.log", [line])
    assert [kind(e) for e in evs] == ["Ioctl"] and evs[0].ioctl == "AMDKFD_IOC_SVM"
    assert evs[0].fd == 3 and evs[0].ret == 0 and info["lines"] == 1


def test_unclosed_brackets_are_one_unparsed_line():
    line = "5000  1764435600.000028 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, " + "{" * 20000 + ") = 0"
    evs, info = parse_lines("preload", "deep.log", ["5000 close(3) = 0", line])
    # the line is counted unparsed; the call is kept without its argument
    # (issue 33: one bad line never loses the call)
    assert [kind(e) for e in evs] == ["Close", "Ioctl"] and info["unparsed"] == 1
    assert (evs[1].fd, evs[1].ret, evs[1].arg) == (3, 0, None)
    assert [n for n, _ in info["unparsed_samples"]] == [2]


def test_deep_struct_in_a_trace_is_not_a_crash(tmp_path):
    """A preload line with a struct nested thousands deep: analyze reads it
    (the deep part as text) and exits normally."""
    log = tmp_path / "deep.log"
    log.write_text(
        "# rocrtrace-log 1\n# pid=5000 ppid=1 exe=/x page_size=4096 start=1764435600.0\n"
        "5000  1764435600.000028 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, " + "{a=" * 3000 + "1" + "}" * 3000 + ") = 0\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", str(log)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr and "0 unparsed" in r.stdout


# --- a source tree without the compiled core ------------------------------------


def test_compiled_core_is_built():
    """The install builds the extension (maturin, cargo): the tests must not
    run on a tree where it is missing."""
    import rocrtrace._engine as core

    assert callable(core.analyze) and callable(core.trace_events)


_NO_CORE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "rocrtrace._engine":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
from rocrtrace.cli import main
sys.exit(main())
"""


def test_unbuilt_core_is_one_line_exit_2():
    """Where the extension does not load (a source tree used without
    building it), analyze says so in one line and exits 2, no traceback."""
    fixture = str(ROOT / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log")
    r = subprocess.run(
        [sys.executable, "-c", _NO_CORE, "analyze", fixture], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "rocrtrace._engine" in r.stderr
    assert "Traceback" not in r.stderr


# --- mutated real lines ------------------------------------------------------------

MUTATIONS = list('",(){}[]<>/*\\-=. ax0:|?') + [
    "...",
    "->",
    "/*",
    "*/",
    "(deleted)",
    " <unfinished ...>",
    "<... ",
    " resumed>",
    " = ",
    " = -1 ",
    " <0.1>",
    "é",
    "\t",
    "\x1c",
]


def test_mutated_real_lines_are_events_or_counted(tmp_path):
    """Lines of the fixture corpus and a generated trace, mutated (inserted
    special text, cuts, repeats, splices), in batches through both grammars:
    never an exception, every line accounted for.  (A seeded 1,500 batches.)"""
    gen = tmp_path / "g.log"
    subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), "preload", "2000", str(gen)], check=True)
    rnd = random.Random(11)
    seeds = []
    for f in corpus() + [str(gen)]:
        with open(f, errors="surrogateescape") as fh:
            lines = fh.read().split("\n")
        seeds += rnd.sample(lines, min(len(lines), 60))

    def mutate(s):
        for _ in range(rnd.randint(1, 4)):
            k, i = rnd.random(), rnd.randint(0, len(s))
            if k < 0.3:
                s = s[:i] + rnd.choice(MUTATIONS) + s[i:]
            elif k < 0.5:
                s = s[:i] + s[i + rnd.randint(1, 5) :]
            elif k < 0.6:
                s = s[:i]
            elif k < 0.8:
                j = rnd.randint(0, len(s))
                s = s[:i] + s[min(i, j) : max(i, j)] + s[i:]
            else:
                s = s[:i] + rnd.choice(seeds)[rnd.randint(0, 40) :]
        return s

    parsed = 0
    for _ in range(1500):
        batch = [mutate(rnd.choice(seeds)) for _ in range(rnd.randint(1, 8))]
        for fmt in ("strace", "preload"):
            evs, info = parse_lines(fmt, "m.log", batch)
            check_accounting(batch, evs, info)
            parsed += len(evs)
    assert parsed > 1500  # mutated lines still parse, mostly
