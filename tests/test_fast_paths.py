"""The parser's fast paths (regexes for well-formed argument lists, the
common line prefix, plain results, ASCII field names, and the caches) must
give exactly what the general grammar gives.  Each is checked against its
general counterpart on generated text, and the whole fixture corpus is parsed
with the fast paths switched off and on: the event streams must be equal."""
from __future__ import annotations

import contextlib
import glob
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from rocrtrace.inputs import open_trace
from rocrtrace.parse import strace, syscalls, tokens

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = settings(max_examples=600, deadline=None)
needs_fast = pytest.mark.skipif(tokens._WELL_FORMED is None,
                                reason="fast paths need Python 3.11")

# Argument text made of the characters the scanners treat specially.
SPECIAL = st.lists(st.sampled_from(list('",(){}[]<>/*\\-=. ax0:|')
                                   + ["...", "->", "/*", "*/", "(deleted)", "<char 1:2>",
                                      "</dev/kfd>", '"a,b"']),
                   max_size=30).map("".join)


def corpus() -> list[str]:
    files = sorted(glob.glob(str(ROOT / "fixtures/strace/*.log"))
                   + glob.glob(str(ROOT / "fixtures/scenarios/*/*.log")))
    assert len(files) > 40, files
    return files


@needs_fast
@SETTINGS
@given(SPECIAL, st.sampled_from(["", ")", ") = 0", " <unfinished ...>"]))
@example('3</a<b>>, _IOC(1, 2), "x\\"y"..., {a=[1, 2]}', ") = 0")
@example("a, ]b, c", ")")
@example("<TCP:[1->2]>, 3", ")")
@example("<x->1, y>, 3", ")")      # "->" before a digit closes no decoration
def test_scan_args_regex_equals_scanner(text, tail):
    s = text + tail
    assert tokens.scan_args(s, 0) == tokens._scan_args(s, 0)


@needs_fast
@SETTINGS
@given(SPECIAL)
def test_matching_regex_equals_scanner(text):
    for s in ("{" + text + "}", "[" + text, "(" + text + "))"):
        assert tokens._matching(s, 0) == tokens._matching_scan(s, 0), s


@needs_fast
@SETTINGS
@given(SPECIAL)
def test_items_equals_split_top(text):
    tok = "{" + text + "}"
    end = tokens._matching_scan(tok, 0)
    if end == len(tok) - 1:
        assert tokens._items(tok, end) == tokens.split_top(tok[1:end])


@SETTINGS
@given(st.lists(st.sampled_from(list("ab_Z09=>é ") + ["=>", "==", "x" * 39]),
                max_size=12).map("".join))
def test_strip_name_fast_equals_scan(arg):
    assert tokens.strip_name(arg) == tokens._strip_name_scan(arg)


@SETTINGS
@given(st.sampled_from(["0", "42", "0x7f00", "-1", "?", "0644", "10</x>"]),
       st.sampled_from(["", " <0.000041>", " <1.>", " <unavailable>", " (Timeout)",
                        " ENOENT (No such file)", "  "]))
def test_plain_result_equals_general(val, rest):
    body = f"x() = {val}{rest}"
    fast, slow = strace.Parser("a"), strace.Parser("b")
    want = _general_result(slow, body)
    assert fast._result(body, 3) == want
    assert fast.info.has_durations == slow.info.has_durations


def _general_result(parser, body):
    saved = strace._PLAIN_RESULT
    strace._PLAIN_RESULT = re.compile(r"(?!)")
    try:
        return parser._result(body, 3)
    finally:
        strace._PLAIN_RESULT = saved


def _clear_caches():
    tokens.parse_fd.cache_clear()
    tokens._scalar.cache_clear()
    syscalls._request_of.cache_clear()
    syscalls._int_token.cache_clear()


def _events(path: str) -> list[str]:
    _clear_caches()
    trace = open_trace(path)
    out = [repr(ev) for ev in trace.events()]
    out += [repr(i) for i in trace.infos]
    return out


@pytest.fixture
def general_only(monkeypatch):
    """Every fast path off: only the general grammar runs."""
    never = re.compile(r"(?!)")

    def off():
        monkeypatch.setattr(tokens, "_WELL_FORMED", None)
        monkeypatch.setattr(tokens, "_ASCII_NAME", never)
        monkeypatch.setattr(strace, "_COMMON_PREFIX", never)
        monkeypatch.setattr(strace, "_PLAIN_RESULT", never)
        monkeypatch.setattr(strace, "_SCAN", None)
        monkeypatch.setattr(tokens, "_BRACKETED", None)
    return off


def test_corpus_fast_paths_equal_general_grammar(general_only, tmp_path):
    files = corpus()
    for kind in ("strace", "preload"):
        gen = tmp_path / f"{kind}.log"
        subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), kind, "3000",
                        str(gen)], check=True)
        files.append(str(gen))
    fast = {f: _events(f) for f in files}
    general_only()
    for f in files:
        assert _events(f) == fast[f], f


# --- the compiled tokenizer (rocrtrace._engine, src/parse/tokens.rs) -----------

needs_scan = pytest.mark.skipif(strace._SCAN is None, reason="compiled tokenizer not built")


@contextlib.contextmanager
def _compiled_off():
    """The Python grammar alone (the tokenizer and the bracketed walk off),
    caches cleared so nothing computed with them is reused."""
    saved = strace._SCAN, tokens._BRACKETED
    strace._SCAN = tokens._BRACKETED = None
    _clear_caches()
    try:
        yield
    finally:
        strace._SCAN, tokens._BRACKETED = saved

PREFIXES = st.sampled_from(["4242  1764435600.000013 ", "7 1764435600.5 ", "4242 12:34:56.789 ",
                            "12345678 1764435600.1 ", "42  1764435600 ", "42 1:2:3.4 ",
                            "", "[pid 42] ", "42 1764435600.1  "])
NAMES = st.sampled_from(["ioctl", "close", "openat", "read", "mmap", "clone3", "execve",
                         "syscall_0x1b3", "exit_group", "x#y:z", "9bad", "getpid"])
RESULTS = st.sampled_from(["", ") = 0", ") = 3</dev/kfd<char 238:0>>", ") = -1 EBADF (Bad fd)",
                           ") = -1 (errno 123)", ") = ?", ") = ? <unavailable>", ") = 0x10 <1.5>",
                           ") = 7</x>(deleted)", ") = 7</x (deleted)>", ") = 0123",
                           ") = -1 EAGAIN (Resource temporarily unavailable) <0.000010>",
                           ") = 5 <0.000020>", ") =0", ")=  -1  E2BIG", " <unfinished ...>",
                           "<unfinished ...>", " <detached ...>", ") = 0 (Timeout) <1.>",
                           ") = 3<>", ") = 3</a<b<c>>>", ") = 3</a->b>", ") = 1 <x>",
                           ") = 1 <0.5> ", ") = 1 <0.5>>", "\t) = 0", ") = -1 E (one letter)",
                           ") = ? Z", ") = -1 eagain", ") = -1 E_1\x1c<2>", ") = 0x"])
LINES = st.one_of(
    st.tuples(PREFIXES, NAMES, SPECIAL, RESULTS).map(lambda t: f"{t[0]}{t[1]}({t[2]}{t[3]}"),
    st.tuples(PREFIXES, NAMES, SPECIAL, RESULTS).map(
        lambda t: f"{t[0]}<... {t[1]} resumed>{t[2]}{t[3]}"),
    st.tuples(PREFIXES, st.sampled_from(["+++ exited with 0 +++", "--- SIGCHLD {} ---",
                                         "<... x resumed> <unfinished ...>) = ?"])).map("".join),
)


def _parse_lines(lines: list[str]) -> list[str]:
    _clear_caches()
    p = strace.Parser("t.log")
    out = []
    for i, line in enumerate(lines, 1):
        out += p.feed(i, line)
    out += p.finish()
    return [repr(ev) for ev in out] + [repr(p.info), repr(p.tgid), repr(sorted(p.live))]


@needs_scan
@SETTINGS
@given(st.lists(LINES, min_size=1, max_size=12))
@example(["42 1764435600.1 ioctl(3, 0x1 <unfinished ...>",
          "43 1764435600.2 <... ioctl resumed>, 0x2) = -1 ENOTTY (x) <0.1>"])
@example(['42 1764435600.1 read(3, "\\"..., 4) = 4'])
def test_compiled_tokenizer_equals_python_grammar(lines):
    """Line soups of prefixes, names, special argument text and result
    shapes: the Parser gives the same events and state with the compiled
    tokenizer on and off."""
    with_scan = _parse_lines(lines)
    with _compiled_off():
        assert _parse_lines(lines) == with_scan


@needs_scan
def test_compiled_tokenizer_takes_the_common_lines(tmp_path):
    """The equality tests would pass with a tokenizer that refuses every
    line: check it takes the line shapes it is for, with the right tokens."""
    scan = strace._SCAN
    assert scan('4242  1764435600.000026 openat(AT_FDCWD</work>, "/dev/kfd", O_RDWR) '
                '= 3</dev/kfd<char 238:0>> <0.000020>') == (
        0, 4242, 1764435600.000026, "openat", ["AT_FDCWD</work>", '"/dev/kfd"', "O_RDWR"],
        3, None, "/dev/kfd", 0.00002)
    assert scan("7 10:00:01.250 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>"
                ) == (1, 7, 36001.25, "ioctl", ["3</dev/kfd>", "AMDKFD_IOC_WAIT_EVENTS", "0x7f"],
                      None, None, None, None)
    assert scan("7 1764435600.5 <... ioctl resumed>) = -1 EINTR (Interrupted) <0.5>") == (
        2, 7, 1764435600.5, "ioctl", [], -1, "EINTR", None, 0.5)
    assert scan("7 1764435600.5 close(3) = -1 (errno 500)") is None     # Python names it
    assert scan("[pid 7] close(3) = 0") is None                          # general prefix
    gen = tmp_path / "g.log"
    subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), "strace", "5000",
                    str(gen)], check=True)
    lines = gen.read_text().splitlines()
    taken = sum(scan(line) is not None for line in lines)
    assert taken / len(lines) > 0.95, (taken, len(lines))


def test_compiled_tokenizer_is_built():
    """The install builds the extension (maturin, cargo): the tests must not
    run on a tree where it is missing and the Python grammar does it all."""
    import os
    if os.environ.get("ROCRTRACE_ALLOW_PURE_PYTHON"):
        pytest.skip("pure-Python install allowed")
    assert strace._SCAN is not None, "rocrtrace._engine (src/) was not built at install"


SCALARS = st.one_of(SPECIAL, st.sampled_from(["0x1a2b", "3", "-1", "NULL", "KFD_IOCTL_SVM_OP_SET_ATTR",
                                              '"s{t}r"', "3</dev/kfd>", "_IOC(1, 2, 3, 4)",
                                              "A|B", "...", "", " 5 ", "1 /* x */", "é"]))
FIELD_NAMES = st.sampled_from(["a", "attrs", "_x", "x" * 40, "x" * 41, "9a", "a b", "", "a=", "a>"])


def _struct(children):
    items = st.lists(st.one_of(children, st.tuples(FIELD_NAMES, children).map("=".join),
                               st.tuples(FIELD_NAMES, children).map("=>".join)), max_size=5)
    return st.one_of(items.map(lambda xs: "{" + ", ".join(xs) + "}"),
                     items.map(lambda xs: "[" + ",".join(xs) + "]"),
                     st.tuples(children, children).map(" => ".join))


VALUES = st.recursive(SCALARS, _struct, max_leaves=25)


@pytest.mark.skipif(tokens._BRACKETED is None, reason="compiled tokenizer not built")
@SETTINGS
@given(VALUES, st.sampled_from(["", " ", "  \t", "} ", "]", " x"]))
@example("{a=1, attrs=[{type=1, value=0x2}, ...]} => {b=2}", "")
@example("{" * 7 + "}" * 7, "")
def test_compiled_bracketed_equals_parse_value(text, tail):
    tok = text + tail
    _clear_caches()
    fast = repr(tokens.parse_value(tok))       # repr: dict order and types count
    with _compiled_off():
        assert repr(tokens.parse_value(tok)) == fast


DEEP = ["{a=" * 5000 + "1" + "}" * 5000, "[" * 3000 + "]" * 3000,
        "{a=1} => " * 3000 + "{}", "1 => " * 3000 + "1", "{a=1 => " * 2000 + "2" + "}" * 2000,
        "[{x=" * 1500 + "0" + "}]" * 1500, "{" * 20000]
DEEP += ["{a=" * n + "1" + "}" * n for n in range(60, 70)]


@pytest.mark.parametrize("tok", DEEP, ids=lambda t: f"{t[:12]}…{len(t)}")
def test_deep_values_stay_bounded(tok):
    """Untrusted nesting and '=>' chains: no RecursionError, the deep part
    stays text (MAX_NESTING), and the compiled walk agrees with Python."""
    _clear_caches()
    fast = repr(tokens.parse_value(tok))
    with _compiled_off():
        assert repr(tokens.parse_value(tok)) == fast


def test_deep_struct_in_a_trace_is_not_a_crash(tmp_path):
    """A preload line with a struct nested thousands deep: analyze reads it
    (the deep part as text) and exits normally."""
    log = tmp_path / "deep.log"
    log.write_text("# rocrtrace-log 1\n# pid=5000 ppid=1 exe=/x page_size=4096 start=1764435600.0\n"
                   "5000  1764435600.000028 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, "
                   + "{a=" * 3000 + "1" + "}" * 3000 + ") = 0\n")
    r = subprocess.run([sys.executable, "-m", "rocrtrace", "analyze", str(log)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr and "0 unparsed" in r.stdout


_NO_SCAN = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "rocrtrace._engine":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
from rocrtrace.cli import main
sys.exit(main())
"""


def test_pure_python_install_gives_the_same_report(tmp_path):
    """Where the extension does not load (a source tree used without
    building it): --version says so, analyze says in one line how to get the
    core, and the reference engine (ROCRTRACE_ENGINE=python) gives the same
    JSON report as the core."""
    fixture = str(ROOT / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log")
    gen = tmp_path / "g.log"
    subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), "strace", "3000",
                    str(gen)], check=True)

    def run(pure, *args, engine="python"):
        cmd = [sys.executable, "-c", _NO_SCAN] if pure else [sys.executable, "-m", "rocrtrace"]
        env = {**os.environ, "ROCRTRACE_ENGINE": engine} if pure else None
        return subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env=env)

    assert "engine: Python reference" in run(True, "--version").stdout
    assert "engine: compiled core not built" in run(True, "--version", engine="rust").stdout
    unbuilt = run(True, "analyze", fixture, engine="rust")
    assert unbuilt.returncode == 2 and "rocrtrace._engine does not load" in unbuilt.stderr
    assert len(unbuilt.stderr.strip().splitlines()) == 1
    assert "engine: compiled core (Rust)" in run(False, "--version").stdout
    for trace in (fixture, str(gen)):
        pure = run(True, "analyze", "--format", "json", "--fail-on", "never", trace)
        built = run(False, "analyze", "--format", "json", "--fail-on", "never", trace)
        assert pure.returncode == built.returncode == 0, pure.stderr
        assert pure.stdout == built.stdout and len(pure.stdout) > 1000


MUTATIONS = list('",(){}[]<>/*\\-=. ax0:|?') + [
    "...", "->", "/*", "*/", "(deleted)", " <unfinished ...>", "<... ", " resumed>", " = ",
    " = -1 ", " <0.1>", "é", "\t", "\x1c"]


@needs_scan
def test_mutated_real_lines_equal(tmp_path):
    """Lines of the fixture corpus and a generated trace, mutated (inserted
    special text, cuts, repeats, splices): the same events and state with the
    compiled parts on and off, and no exception either way.  (Run once with
    140,000 batches; here a seeded 1,500.)"""
    import random
    gen = tmp_path / "g.log"
    subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), "preload", "2000",
                    str(gen)], check=True)
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
                s = s[:i] + s[i + rnd.randint(1, 5):]
            elif k < 0.6:
                s = s[:i]
            elif k < 0.8:
                j = rnd.randint(0, len(s))
                s = s[:i] + s[min(i, j):max(i, j)] + s[i:]
            else:
                s = s[:i] + rnd.choice(seeds)[rnd.randint(0, 40):]
        return s

    for _ in range(1500):
        batch = [mutate(rnd.choice(seeds)) for _ in range(rnd.randint(1, 8))]
        want = _parse_lines(batch)
        with _compiled_off():
            assert _parse_lines(batch) == want, batch
