"""The man pages: every option the CLI shows in --help is documented, and
both pages are lint-clean for mandoc."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

MAN = pathlib.Path(__file__).resolve().parent.parent / "man"
PAGES = [MAN / "rocrtrace.1", MAN / "rocrtrace-log.5"]


def _page_text(path: pathlib.Path) -> str:
    # Undo roff escapes that options are written with: \- is a hyphen, \fB…
    # font changes and \& zero-width marks may sit inside an option name.
    text = path.read_text()
    text = re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\&", "")
    return text


def _commands():
    try:
        from rocrtrace import cli
    except ImportError as e:  # pragma: no cover - the CLI is another module's job
        pytest.skip(f"rocrtrace.cli is not importable yet: {e}")
    import click

    group = next((getattr(cli, n) for n in ("cli", "main") if isinstance(getattr(cli, n, None), click.Group)), None)
    if group is None:
        pytest.skip("rocrtrace.cli defines no click group named cli or main")
    yield "", group
    for name, cmd in group.commands.items():
        yield name, cmd


def test_every_cli_option_is_in_the_man_page():
    import click

    page = _page_text(MAN / "rocrtrace.1")
    missing = []
    for name, cmd in _commands():
        if name and f"rocrtrace {name}" not in page:
            missing.append(f"command {name}")
        for p in cmd.params:
            if not isinstance(p, click.Option) or p.hidden:
                continue
            for opt in [*p.opts, *p.secondary_opts]:
                if not re.search(re.escape(opt) + r"(?![\w-])", page):
                    missing.append(f"{name or 'rocrtrace'} {opt}")
    assert not missing, "documented in --help but not in man/rocrtrace.1: " + ", ".join(missing)


@pytest.mark.parametrize(
    "section",
    [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "COMMANDS",
        "INPUTS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "SEE ALSO",
    ],
)
def test_rocrtrace_1_has_sections_in_man_pages_order(section):
    heads = re.findall(r'^\.SH "?([^"\n]+)"?$', (MAN / "rocrtrace.1").read_text(), re.M)
    order = [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "COMMANDS",
        "INPUTS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "SEE ALSO",
    ]
    assert section in heads
    assert [h for h in heads if h in order] == order


def test_exit_status_and_environment_are_complete():
    page = _page_text(MAN / "rocrtrace.1")
    exit_part = page.split(".SH EXIT STATUS")[1].split(".SH")[0]
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"^\.B {code}$", exit_part, re.M)
    env = page.split(".SH ENVIRONMENT")[1].split(".SH")[0]
    for var in ("ROCRTRACE_LOG", "ROCRTRACE_STACK_DEPTH", "ROCRTRACE_CACHE", "GITHUB_STEP_SUMMARY"):
        assert var in env


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_mandoc_lint_clean(page):
    mandoc = shutil.which("mandoc")
    if mandoc is None:
        pytest.skip("mandoc is not installed (CI installs it)")
    out = subprocess.run([mandoc, "-Tlint", "-W", "style", str(page)], capture_output=True, text=True)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out.stdout + out.stderr
