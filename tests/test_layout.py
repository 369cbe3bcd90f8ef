"""The layout says the flow: no module of the Rust core and no module of the
Python package depends on itself through others.  Data flows one way
(read -> parse -> events -> models -> findings -> reports); a cycle is two
modules that must change together.  A module's own parts (`fds/close.rs`
using `super::*`, a parent naming its children) are one module here.

Rust: every `crate::`/`super::`/`self::` path outside `#[cfg(test)]`, resolved
to the longest module it names.  Python: every import of a `rocrtrace`
module, at any level (a function-level import hides a cycle, it does not
remove it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cycles(edges: dict) -> list[list]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list = []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def _related(a: tuple, b: tuple) -> bool:
    return a[: len(b)] == b or b[: len(a)] == a


def rust_edges() -> dict:
    src = ROOT / "src"
    mods = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        if parts and parts[-1] == "tests":
            continue
        mods[tuple(parts)] = f

    def resolve(cur, path):
        segs = path.split("::")
        if segs[0] == "crate":
            base, segs = [], segs[1:]
        elif segs[0] == "self":
            base, segs = list(cur), segs[1:]
        else:
            base = list(cur[:-1])
            segs = segs[1:]
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        for k in range(len(segs), -1, -1):
            if tuple(base + segs[:k]) in mods:
                return tuple(base + segs[:k])
        return None

    edges = {}
    for m, f in mods.items():
        text = f.read_text().split("#[cfg(test)]")[0]
        deps = set()
        for path in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text):
            d = resolve(m, path)
            if d is not None and not _related(d, m):
                deps.add(d)
        edges[m] = deps
    return edges


def python_edges() -> dict:
    pkg = ROOT / "rocrtrace"
    mods = {}
    for f in pkg.rglob("*.py"):
        parts = ("rocrtrace", *f.relative_to(pkg).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[parts] = f
    edges = {}
    for m, f in mods.items():
        pkg_of = m if f.name == "__init__.py" else m[:-1]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = pkg_of[: len(pkg_of) - node.level + 1] if node.level else ()
                mod = tuple(node.module.split(".")) if node.module else ()
                full = base + mod
                names = [".".join(full + (a.name,)) for a in node.names] + [".".join(full)]
            for n in names:
                t = tuple(n.split("."))
                for k in range(len(t), 0, -1):
                    if t[:k] in mods:
                        if not _related(t[:k], m):
                            deps.add(t[:k])
                        break
        edges[m] = deps
    return edges


def test_the_rust_core_has_no_module_cycle():
    edges = rust_edges()
    assert ("parse", "values") in edges and ("models", "svm") in edges
    assert ("parse", "lex") in edges[("parse", "values")]  # the walk sees imports
    assert _cycles(edges) == []


def test_read_yields_lines_and_parse_knows_the_dialects():
    """read/ imports nothing of parse/ (which dialect a line is in reaches it
    as open::Detect and chunked::PreParse); detection and the dialect
    registry are parse's."""
    edges = rust_edges()
    reads = [m for m in edges if m[:1] == ("read",)]
    assert ("read", "open") in reads and ("parse", "detect") in edges
    assert ("read", "open") in edges[("parse", "detect")]  # parse uses read
    assert {m: sorted(d for d in edges[m] if d[:1] == ("parse",)) for m in reads} == {m: [] for m in reads}
    assert not (ROOT / "src/read/detect.rs").exists()


def test_the_python_package_has_no_import_cycle():
    edges = python_edges()
    assert ("rocrtrace", "tables") in edges[("rocrtrace", "cli")] or any(
        ("rocrtrace", "tables") in d for d in edges.values()
    )
    assert _cycles(edges) == []


def test_a_cycle_is_found():
    """The check itself: a -> b -> c -> a is one cycle, d alone none."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
