"""The parser's fast paths (regexes for well-formed argument lists, the
common line prefix, plain results, ASCII field names, and the caches) must
give exactly what the general grammar gives.  Each is checked against its
general counterpart on generated text, and the whole fixture corpus is parsed
with the fast paths switched off and on: the event streams must be equal."""
from __future__ import annotations

import glob
import re
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
    try:
        want = _general_result(slow, body)
    except ValueError:          # int("0644", 0): both paths raise alike
        with pytest.raises(ValueError):
            fast._result(body, 3)
        return
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
