"""The boundary between the package and its compiled core: rocrtrace/_engine.pyi
declares what the package calls, and the module holds exactly that (plus the
test and benchmark entry points of the ``hooks`` feature, which .ci/run
builds and the package build leaves out)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import rocrtrace
from rocrtrace import _engine

STUB = Path(rocrtrace.__file__).with_name("_engine.pyi")


def _declared():
    tree = ast.parse(STUB.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    types = {
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "TypedDict" for b in n.bases)
    }
    hooks = set()
    for line in STUB.read_text().splitlines():
        if line.startswith("# hooks:"):
            hooks |= {x.strip() for x in line.split(":", 1)[1].split(",") if x.strip()}
    return names - types, hooks


def test_the_module_holds_what_the_stub_declares():
    declared, hooks = _declared()
    have = {n for n in dir(_engine) if not n.startswith("_")}
    assert declared <= have, declared - have
    assert have - declared <= hooks, have - declared - hooks
    # this suite runs on a build with the hooks (conftest.py makes sure)
    assert hooks <= have, hooks - have


def test_stub_signatures_match_the_core():
    """Every declared function's parameters, in order, with the core's
    defaults where the stub gives one."""
    tree = ast.parse(STUB.read_text())
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        sig = inspect.signature(getattr(_engine, fn.name))
        stub = [a.arg for a in fn.args.args]
        assert stub == list(sig.parameters), (fn.name, stub, list(sig.parameters))
        defaults = fn.args.defaults
        params = list(sig.parameters.values())[len(stub) - len(defaults) :]
        for p, d in zip(params, defaults):
            assert p.default is not inspect.Parameter.empty, (fn.name, p.name)
            if isinstance(d, ast.Constant) and d.value is not Ellipsis:
                assert p.default == d.value, (fn.name, p.name, p.default, d.value)


def test_the_package_calls_only_declared_names():
    declared, hooks = _declared()
    pkg = Path(rocrtrace.__file__).parent
    used = set()
    for f in pkg.rglob("*.py"):
        used |= set(re.findall(r"\b(?:eng|_engine|core\(\))\.([A-Za-z_]\w*)", f.read_text()))
    assert used <= declared, used - declared
