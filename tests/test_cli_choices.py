"""Each choice list of the CLI is defined once (cli.py, report._FORMATS,
schema.TABLE_FORMATS, config.FAIL_ON) and --help, validation and the man
page follow it: a new format cannot be accepted but undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import click

from rocrtrace import cli, config, schema
from rocrtrace.report import BINARY_FORMATS, FORMATS

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "rocrtrace/cli.py").read_text()


def _option(cmd: click.Command, name: str) -> click.Option:
    return next(p for p in cmd.params if isinstance(p, click.Option) and name in p.opts)


def test_each_list_is_spelled_once_in_cli_py():
    for word in ('"tinygrad"', '"markdown"', '"never"', '"jsonl"', '"junit"', '"csv"'):
        assert SOURCE.count(word) <= 1, word


def test_the_options_take_the_lists():
    for name, cmd in cli.cli.commands.items():
        for p in cmd.params:
            if isinstance(p, click.Option) and "--input-format" in p.opts:
                assert tuple(p.type.choices) == cli.input_formats(), name
            if isinstance(p, click.Option) and "--fail-on" in p.opts:
                assert tuple(p.type.choices) == config.FAIL_ON, name
    events = _option(cli.cli.commands["events"], "--format")
    assert tuple(events.type.choices) == schema.TABLE_FORMATS
    assert tuple(_option(cli.cli.commands["diff"], "--format").type.choices) == cli.DIFF_FORMATS


def test_analyze_help_and_validation_follow_the_formats(tmp_path):
    help_text = " ".join(_option(cli.cli.commands["analyze"], "--format").help.split())
    for fmt in FORMATS:
        label = f"{fmt}:FILE" if fmt in BINARY_FORMATS else fmt
        assert re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", help_text), fmt
    assert "html" in FORMATS
    for fmt in FORMATS:
        path = None if fmt not in BINARY_FORMATS else str(tmp_path / f"out.{fmt}")
        assert cli._parse_format_specs([f"{fmt}:{path}" if path else fmt], None)[0][0] == fmt
    try:
        cli._parse_format_specs(["yaml"], None)
    except cli.UsageFail as e:
        assert all(f in e.message for f in FORMATS)
    else:
        raise AssertionError("yaml accepted")


def test_the_man_page_names_every_format():
    page = (ROOT / "man/rocrtrace.1").read_text()
    fmt_par = page.split(r".BI \-\-format " + '" FMT', 1)[1].split(".TP", 1)[0]
    for fmt in FORMATS:
        assert re.search(rf"^\.BI? {fmt}(?:: FILE)?$", fmt_par, re.M), fmt
    for fmt in cli.input_formats():
        assert fmt in page
