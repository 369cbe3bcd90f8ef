"""Scanning strace argument text: splitting argument lists at top-level
commas, finding a call's closing parenthesis, decoding fd decorations and
turning argument values into Python values.

Traces are untrusted input: nothing here evaluates text, and every function
returns something (possibly a raw string) instead of raising on odd input.

The scanner jumps between "interesting" characters with a compiled regex
instead of walking the string char by char, because most of a line is plain
text and the parser has to keep up with millions of lines.
"""
from __future__ import annotations

import functools
import re
import sys

from .. import kfd

# Characters that change the scanner's state outside decorations.
_SPECIAL = re.compile(r'[",(){}\[\]<>\']|/\*')
# Inside a decoration only these matter.
_DECO_SPECIAL = re.compile(r'[\\"<>]')
# The rest of a C string after its opening quote.
_STR_END = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
_OPEN = "({["
_CLOSE = ")}]"
_DELETED = "(deleted)"


def string_end(s: str, i: int) -> int:
    """Index just past the string whose opening quote is at ``i`` (and past
    a ``...`` truncation mark); ``len(s)`` when it never closes."""
    m = _STR_END.match(s, i + 1)
    if not m:
        return len(s)
    j = m.end()
    if s.startswith("...", j):
        j += 3
    return j


def deco_end(s: str, i: int) -> int:
    """Index just past the decoration whose ``<`` is at ``i`` (nested ``<…>``,
    quoted runs and ``\\`` escapes understood, ``->`` of socket peers is not
    a closer), including a following ``(deleted)``; ``len(s)`` if open."""
    depth = 0
    n = len(s)
    search = _DECO_SPECIAL.search
    j = i
    while True:
        m = search(s, j)
        if not m:
            return n
        k = m.start()
        c = s[k]
        if c == "\\":
            j = k + 2
        elif c == '"':
            j = string_end(s, k)
        elif c == "<":
            depth += 1
            j = k + 1
        else:  # '>'
            if (s[k - 1] == "-" and depth > 0 and k + 1 < n
                    and (s[k + 1].isdigit() or s[k + 1] == "[")):
                j = k + 1      # "->" inside a socket peer, not a closer
                continue
            depth -= 1
            j = k + 1
            if depth <= 0:
                if s.startswith(_DELETED, j):
                    j += len(_DELETED)
                return j


_OPAQUE = frozenset('"</\'')
# One C character literal as strace prints it: 'x', '\'', '\x0d', '\0'.
_CHAR = re.compile(r"'(?:[^'\\]|\\(?:x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.))'", re.S)
_COMMENT_MARK = re.compile(r"/\*|\*/")


def comment_end(s: str, k: int) -> int:
    """Index just past the comment opened at ``k``, comments nested inside it
    counted (``/* IOPRIO_PRIO_VALUE(0 /* X */, 8191) */``); ``len(s)`` when
    it never closes."""
    depth = 0
    search = _COMMENT_MARK.search
    j = k
    while True:
        m = search(s, j)
        if m is None:
            return len(s)
        j = m.end()
        if m.group() == "/*":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j


def _skip_opaque(s: str, k: int, c: str, n: int, flat: bool = False) -> int:
    """End of a run whose brackets and commas do not count: a quoted string,
    an fd decoration, a character literal, a /* comment */ (``c`` is its
    first character).  ``<<`` is a shift (``1<<16|0``), not a decoration."""
    if c == '"':
        return string_end(s, k)
    if c == "<":
        if s.startswith("<", k + 1):
            return k + 2
        return deco_end(s, k)
    if c == "'":
        m = _CHAR.match(s, k)
        return m.end() if m else k + 1
    if flat:
        e = s.find("*/", k + 2)
        return n if e < 0 else e + 2
    return comment_end(s, k)


def _well_formed_patterns(depth: int) -> tuple[re.Pattern, re.Pattern] | None:
    """(one argument, one bracketed group) of well-formed text, as regexes
    that run in C with no backtracking: brackets nested at most ``depth``
    deep, strings, comments, and decorations holding no quote, escape or
    ``->``.  Like the scanner, any opener pairs with any closer.  None before
    Python 3.11 (no possessive quantifiers): the scanner alone is used."""
    if sys.version_info < (3, 11):
        return None
    atom = (r'[^"<>(){}\[\],/\']++|"(?:[^"\\]|\\.)*+"(?:\.\.\.)?'
            r"|'(?:[^'\\]|\\(?:x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.))'|'"
            r'|<<'
            r'|<(?:[^<>"\\-]|-(?!>)|<(?:[^<>"\\-]|-(?!>))*+>)*+>(?:\(deleted\))?'
            r'|/\*(?:[^*/]|\*(?!/)|/(?!\*))*+\*/|/(?!\*)|>')
    nest = r'(?!)'
    for _ in range(depth):
        nest = r'[({\[](?:%s|,|%s)*+[)}\]]' % (atom, nest)
    return re.compile(r'(?:%s|%s)*+' % (atom, nest)), re.compile(nest)


_WELL_FORMED = _well_formed_patterns(6)

try:
    # parse_value for bracketed values, compiled (src/parse/tokens.rs)
    from .._engine import bracketed as _BRACKETED
except ImportError:
    _BRACKETED = None


def scan_args(s: str, pos: int = 0) -> tuple[list[str], int]:
    """Split the argument list that starts at ``pos`` (just after ``name(``)
    into top-level arguments.  Returns (args, index of the closing ``)``), the
    index being -1 when the list never closes (``<unfinished ...>``, a cut
    line).  Arguments are stripped; an empty list gives ``[]``."""
    if _WELL_FORMED is not None:
        # Well-formed lists (nearly all) are split by the regex one argument
        # at a time; anything else falls through to the scanner below.
        match = _WELL_FORMED[0].match
        args = []
        j = pos
        n = len(s)
        while True:
            m = match(s, j)
            e = m.end()
            if e >= n:
                # never closes (an unfinished call): what is left is whole
                tail = s[j:].strip()
                if tail:
                    args.append(tail)
                return args, -1
            c = s[e]
            if c == ",":
                args.append(s[j:e].strip())
                j = e + 1
            elif c == ")":
                tail = s[j:e].strip()
                if tail or args:
                    args.append(tail)
                return args, e
            else:
                break
    return _scan_args(s, pos)


def _structure(s: str, j: int, flat: bool = False):
    """(index, char) of each bracket, comma and stray '>' from ``j`` on,
    stepping over strings, decorations and comments; the general scanner
    under scan_args and _matching."""
    n = len(s)
    search = _SPECIAL.search
    while True:
        m = search(s, j)
        if not m:
            return
        k = m.start()
        c = s[k]
        if c in _OPAQUE:
            j = _skip_opaque(s, k, c, n, flat)
            continue
        yield k, c
        j = k + 1


def _scan_args(s: str, pos: int, flat: bool = False) -> tuple[list[str], int]:
    args, close = _scan_args_once(s, pos, flat)
    if close < 0 and not flat and "/*" in s:
        # comments nest in strace's output; when that reading never closes
        # the list, the one where a comment ends at the first */ may
        other = _scan_args_once(s, pos, True)
        if other[1] >= 0:
            return other
    return args, close


def _scan_args_once(s: str, pos: int, flat: bool) -> tuple[list[str], int]:
    # Nothing nested before the first ')': a plain split.
    close = s.find(")", pos)
    if close >= 0:
        seg = s[pos:close]
        if not ('"' in seg or "<" in seg or "{" in seg or "[" in seg
                or "(" in seg or "/*" in seg):
            seg = seg.strip()
            return ([a.strip() for a in seg.split(",")] if seg else []), close
    args: list[str] = []
    depth = 0
    start = pos
    for k, c in _structure(s, pos, flat):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth:
                depth -= 1
            elif c == ")":
                tail = s[start:k].strip()
                if tail or args:
                    args.append(tail)
                return args, k
            # else a stray closer: keep going
        elif c == "," and depth == 0:
            args.append(s[start:k].strip())
            start = k + 1
    tail = s[start:].strip()
    if tail:
        args.append(tail)
    return args, -1


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split ``s`` (a struct or array body) at top-level ``sep``."""
    args, close = scan_args(s + ")", 0)
    if close < 0 or close != len(s):
        # an unbalanced ')' inside: fall back to the scanner's view
        return args
    return args


# --- escapes -----------------------------------------------------------------

# An octal escape is at most three digits and at most \377: strace writes
# \ooo only when a digit follows, so "\740" is "\74" then "0", never 0o740.
_ESC = re.compile(r'\\(x[0-9a-fA-F]{1,2}|[0-3][0-7]{2}|[0-7]{1,2}|.)', re.S)
_SIMPLE_ESC = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8,
               "e": 27, "\\": 92, '"': 34, "'": 39, "?": 63}


def unescape(text: str) -> str:
    """Resolve C escapes (octal, ``\\x``, ``\\n`` …) to bytes, then decode as
    UTF-8, bytes that are not UTF-8 written ``\\xNN`` (as strace's -x would),
so the text can always be encoded again."""
    if "\\" not in text:
        return text

    out = bytearray()
    pos = 0
    for m in _ESC.finditer(text):
        out += text[pos:m.start()].encode("utf-8", "surrogateescape")
        e = m.group(1)
        if e[0] == "x" and len(e) > 1:
            out.append(int(e[1:], 16))
        elif e[0] in "01234567":
            out.append(int(e, 8))
        else:
            b = _SIMPLE_ESC.get(e)
            if b is None:
                out += e.encode("utf-8", "surrogateescape")
            else:
                out.append(b)
        pos = m.end()
    out += text[pos:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "backslashreplace")


def parse_string(tok: str) -> tuple[str, bool]:
    """(text, truncated) of a quoted C string token ``"…"`` or ``"…"...``."""
    trunc = tok.endswith("...") and not tok.endswith('\\"...')
    body = tok[:-3] if trunc else tok
    if body.startswith('"'):
        body = body[1:]
    if body.endswith('"'):
        body = body[:-1]
    return unescape(body), trunc


# --- fds and decorations ------------------------------------------------------

_FD = re.compile(r"(-?\d+|0x[0-9a-fA-F]+)(?=<|$)")


def decoration_path(inner: str) -> str:
    """The path a decoration names: escapes resolved, a trailing ``<char M:m>``
    / ``<pid comm>`` sub-decoration dropped, ``(deleted)`` normalised to the
    readlink form ``PATH (deleted)`` whichever side of ``>`` strace put it."""
    deleted = False
    if inner.endswith(" (deleted)"):
        deleted = True
        inner = inner[:-10]
    # A nested group starts at the first unquoted '<' (escaped '<' is \74).
    if "<" in inner:
        if '"' not in inner:
            cut = inner.find("<")
        else:
            cut = -1
            j = 0
            while j < len(inner):
                c = inner[j]
                if c == "\\":
                    j += 2
                    continue
                if c == '"':
                    j = string_end(inner, j)
                    continue
                if c == "<":
                    cut = j
                    break
                j += 1
        if cut > 0 and inner.endswith(">"):
            inner = inner[:cut]
    path = unescape(inner)
    if deleted:
        path += " (deleted)"
    return path


# Traces repeat the same few fd tokens (``3</dev/kfd<char 238:0>>``) on
# nearly every line; a bounded cache keeps memory flat.
@functools.lru_cache(maxsize=4096)
def parse_fd(tok: str) -> tuple[int | None, str | None]:
    """(fd, path) of ``3``, ``0x3``, ``3</dev/kfd<char 1:3>>``,
    ``6</x>(deleted)``; (None, None) when the token is not an fd."""
    return _parse_fd(tok)


def _parse_fd(tok: str) -> tuple[int | None, str | None]:
    if not tok:
        return None, None
    c = tok[0]
    if not (c.isdigit() or c == "-"):
        return None, None
    lt = tok.find("<")
    if lt < 0:
        try:
            return int(tok, 0), None
        except ValueError:
            return None, None
    num = tok[:lt]
    if tok.startswith("<", lt + 1):
        return None, None           # 1<<16: a shift, not a decorated fd
    try:
        fd = int(num, 0)
    except ValueError:
        return None, None
    rest = tok[lt:]
    deleted = False
    if rest.endswith(_DELETED):
        rest = rest[:-len(_DELETED)]
        deleted = True
    if not rest.endswith(">"):
        return fd, None
    path = decoration_path(rest[1:-1])
    if deleted and not path.endswith(" (deleted)"):
        path += " (deleted)"
    return fd, path


_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}=(?![=>])")


def strip_name(arg: str) -> tuple[str | None, str]:
    """``fd=3`` → ("fd", "3") for ``-N`` argument names at depth 0."""
    m = _ASCII_NAME.match(arg)
    if m is not None:
        eq = m.end()
        return arg[:eq - 1], arg[eq:]
    return _strip_name_scan(arg)


def _strip_name_scan(arg: str) -> tuple[str | None, str]:
    eq = arg.find("=")
    if eq <= 0 or eq > 40:
        return None, arg
    name = arg[:eq]
    if not name.replace("_", "a").isalnum() or not (name[0].isalpha() or name[0] == "_"):
        return None, arg
    if arg.startswith("=>", eq) or arg.startswith("==", eq):
        return None, arg
    return name, arg[eq + 1:]


# --- values -------------------------------------------------------------------

_INT = re.compile(r"-?(?:0x[0-9a-fA-F]{1,64}|\d{1,64})\Z")


def parse_int(tok: str) -> int | None:
    """Integers as strace prints them: decimal, ``0x`` hex, ``0644`` octal;
    None otherwise."""
    tok = tok.strip()
    if not tok:
        return None
    if _INT.match(tok):
        neg = tok[0] == "-"
        t = tok[1:] if neg else tok
        if len(t) > 1 and t[0] == "0" and t[1] != "x":
            try:
                v = int(t, 8)
            except ValueError:
                v = int(t, 10)
        else:
            v = int(t, 0)
        return -v if neg else v
    return None


def strip_comment(tok: str) -> tuple[str, str | None]:
    """(value, comment) of ``0x80084b01 /* NAME */`` (comments nested in the
    comment are part of it)."""
    i = tok.find("/*")
    if i < 0:
        return tok, None
    e = comment_end(tok, i)
    closed = tok.endswith("*/", 0, e) and e - i >= 4
    comment = tok[i + 2:e - 2 if closed else e].strip()
    rest = (tok[:i] + tok[e:]).strip()
    return rest, comment


def parse_flags(tok: str, names: dict[str, int] | None = None) -> int | None:
    """``A|B|0x100`` → int when every part is known (``names`` first, then
    kfd.CONSTANTS); None otherwise."""
    tok, _ = strip_comment(tok)
    total = 0
    for part in tok.split("|"):
        part = part.strip()
        if "<<" in part:
            # 1<<16, FUTEX_OP_SET<<28, 1<<CAP_CHOWN: a shifted name or number
            a, _, b = part.partition("<<")
            va, vb = _flag_part(a.strip(), names), _flag_part(b.strip(), names)
            if va is None or vb is None or not 0 <= vb < 128:
                return None
            total |= va << vb
            continue
        v = _flag_part(part, names)
        if v is None:
            return None
        total |= v
    return total


def _flag_part(part: str, names: dict[str, int] | None) -> int | None:
    v = parse_int(part)
    if v is None:
        if names is not None and part in names:
            v = names[part]
        else:
            v = kfd.CONSTANTS.get(part)
    return v


_IOC_DIRS = {"_IOC_NONE": 0, "_IOC_WRITE": 1, "_IOC_READ": 2}


def parse_ioc(tok: str) -> int | None:
    """The request code of ``_IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x28)``."""
    if not tok.startswith("_IOC(") or not tok.endswith(")"):
        return None
    parts = [p.strip() for p in tok[5:-1].split(",")]
    if len(parts) != 4:
        return None
    d = 0
    for p in parts[0].split("|"):
        p = p.strip()
        if p in _IOC_DIRS:
            d |= _IOC_DIRS[p]
        else:
            v = parse_int(p)
            if v is None:
                return None
            d |= v
    vals = [parse_int(p) for p in parts[1:]]
    if None in vals:
        return None
    return kfd.ioc(d & 3, vals[0] & 0xFF, vals[1] & 0xFF, vals[2] & 0x3FFF)


# Values nested deeper than this (or chains of more " => " than _MAX_CHAIN)
# stay raw text: real structs nest a few levels, and untrusted input must not
# exhaust the stack.
MAX_NESTING = 64
_MAX_CHAIN = 8


def parse_value(tok: str, names: dict[str, int] | None = None):
    """A Python value for one argument or field value.

    ints, ``NULL`` → 0, strings → str, ``{k=v, …}`` → dict, ``[…]`` → list
    (``...`` elements dropped), decorated fds → int, flag expressions → int
    where every name is known, ``_IOC(…)`` → int; anything else stays a
    string.  ``{…} => {…}`` is returned as (entry, exit) tuple."""
    return _parse(tok, names, 0)


# MAX_NESTING openers with no closer between them: nested deeper than any
# real struct.  Such a value stays text whole, so parsing stays linear in
# the line's length at any depth.
_DEEP = re.compile(r"[{\[(](?:[^{}\[\]()]*+[{\[(]){%d}" % MAX_NESTING)


def _parse(tok: str, names: dict[str, int] | None, depth: int):
    if depth == 0 and len(tok) > 4 * MAX_NESTING and _DEEP.search(tok):
        return tok.strip()
    if names is None:
        if "{" not in tok and "[" not in tok:
            return _scalar(tok)     # immutable, so it can be shared
        if _BRACKETED is not None:
            # the compiled walk over well-formed structs; scalars still come
            # from _scalar, and anything else from _value at the same depth
            return _BRACKETED(tok, _scalar, _value, depth, MAX_NESTING)
    return _value(tok, names, depth)


# Field values repeat (flag names, attribute types, small numbers).
@functools.lru_cache(maxsize=8192)
def _scalar(tok: str):
    return _value(tok, None)


def _value(tok: str, names: dict[str, int] | None, depth: int = 0):
    tok = tok.strip()
    if not tok:
        return tok
    if "/*" in tok:
        tok, _ = strip_comment(tok)
        if not tok:
            return ""
    c = tok[0]
    if c == "{" or c == "[":
        if depth > MAX_NESTING:
            return tok
        end = _matching(tok, 0)
        depth += 1
        if end == len(tok) - 1:
            items = _items(tok, end)
            if c == "[":
                return [_parse(x, names, depth) for x in items if x and x != "..."]
            d = {}
            for x in items:
                if not x or x == "...":
                    continue
                k, v = strip_name(x)
                if k is None:
                    continue
                d[k] = _parse(v, names, depth)
            return d
        if end > 0:
            rest = tok[end + 1:].strip()
            if rest.startswith("=>"):
                return (_parse(tok[:end + 1], names, depth), _parse(rest[2:], names, depth))
        return tok
    if c == '"':
        return parse_string(tok)[0]
    v = parse_int(tok)
    if v is not None:
        return v
    if tok == "NULL":
        return 0
    if "<" in tok and (c.isdigit() or c == "-"):
        fd, _ = parse_fd(tok)
        if fd is not None:
            return fd
    if tok.startswith("_IOC("):
        r = parse_ioc(tok)
        return tok if r is None else r
    if " => " in tok and tok.count(" => ") <= _MAX_CHAIN:
        # (no depth here: _scalar caches these whatever the depth)
        a, b = tok.split(" => ", 1)
        return (parse_value(a, names), parse_value(b, names))
    f = parse_flags(tok, names)
    return tok if f is None else f


def _items(tok: str, end: int) -> list[str]:
    """split_top(tok[1:end]) for the bracketed body ending at ``end``,
    without copying it."""
    if _WELL_FORMED is not None:
        match = _WELL_FORMED[0].match
        items: list[str] = []
        j = 1
        while True:
            e = match(tok, j, end).end()
            if e == end:
                tail = tok[j:e].strip()
                if tail or items:
                    items.append(tail)
                return items
            if tok[e] != ",":
                break
            items.append(tok[j:e].strip())
            j = e + 1
    return split_top(tok[1:end])


def _matching(s: str, i: int) -> int:
    """Index of the bracket closing the one at ``i``; -1 if none."""
    if _WELL_FORMED is not None:
        m = _WELL_FORMED[1].match(s, i)
        if m is not None:
            return m.end() - 1
    return _matching_scan(s, i)


def _matching_scan(s: str, i: int) -> int:
    depth = 0
    for k, c in _structure(s, i):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return k
    return -1
