"""Every report format, rendered from realistic results and read back the
way its consumer reads it: JSON and SARIF against their schemas, JUnit with
an XML parser, CSV with csv, JSONL line by line, GitHub commands as the
runner parses them."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import sys
import xml.etree.ElementTree as ET

import jsonschema
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import report_samples as S  # noqa: E402

from rocrtrace.report import FORMATS, render  # noqa: E402
from rocrtrace.result import AnalysisResult  # noqa: E402
from rocrtrace.rules import RULES  # noqa: E402

SCHEMAS = pathlib.Path(__file__).parent / "schemas"


@pytest.fixture
def result():
    return S.sample_result()


def _load(name):
    if name == "report.schema.json":
        # the copy the package ships (rocrtrace/schemas), not a test file
        from rocrtrace.schema import report_schema

        return report_schema()
    return json.loads((SCHEMAS / name).read_text())


# --- every format ------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_results_and_empty_results(fmt, result, tmp_path):
    opts = {"step_summary": str(tmp_path / "summary.md")}
    out = render(result, fmt, **opts)
    empty = render(AnalysisResult(), fmt, **opts)
    if fmt in ("perfetto", "parquet"):  # binary: bytes that parse back
        assert isinstance(out, bytes) and isinstance(empty, bytes) and len(out) > len(empty)
        return
    assert isinstance(out, str) and out.endswith("\n")
    assert isinstance(empty, str)


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "github", "junit"])
def test_no_raw_escape_sequence_from_trace_text(fmt, result, tmp_path):
    # The double close's call text carries ESC[31m: a report must never pass
    # a program's bytes to a terminal or a viewer as control characters.
    out = render(result, fmt, step_summary=str(tmp_path / "s.md"))
    assert "\x1b" not in out


def test_unknown_format_is_a_clear_error(result):
    with pytest.raises(ValueError, match="unknown report format"):
        render(result, "yaml")


# --- text ----------------------------------------------------------------------


def test_text_is_concise_headlines_then_proof_then_help(result):
    out = render(result, "text")
    lines = out.splitlines()
    heads = [
        ln
        for ln in lines
        if not ln.startswith(" ") and "[" in ln and "]" in ln and ": " in ln and not ln.startswith(("5 findings",))
    ]
    sevs = [h.split(": ", 1)[1].split("[")[0] for h in heads]
    assert sevs == sorted(sevs, key=["error", "warning", "note"].index)
    # SOURCE:LINE leads where the stack has the program's frame, else TRACE:LINE
    assert "src/sweep.cpp:42: error[svm-over-revoke] NO_ACCESS for gpu 0x1a2b" in out
    assert "vmm.log:9: error[fd-double-close] fd 7 (dmabuf) closed twice" in out
    # each proving event once, with file:line tid time, then the fix
    i = lines.index("  previous close  vmm.log:4 tid 5000 t=10.100000")
    assert lines[i + 1] == "      close(7</dmabuf:>) = 0"
    assert sum("vmm.log:9 tid 5001" in ln for ln in lines) == 1
    assert out.count("help: ") == len(heads) == 5
    # no coverage section, no fingerprints, no Python reprs by default
    assert "It cannot show:" not in out and "fingerprint" not in out
    assert "1 thing this input cannot show: --verbose lists them" in out
    assert "FAILED" in out and "{'" not in out and "['" not in out
    assert len(lines) < 40


def test_text_verbose_adds_diagnosis_coverage_and_caveats(result):
    out = render(result, "text", verbose=True)
    assert "It cannot show:" in out and "rocrtrace capture --method preload" in out
    assert "cause: enclosing-range (the victim starts left" in out
    # the range table and the symbolized stack with its source line
    assert "0x7f3a1c200000  0x7f3a1c210000" in out
    assert "/work/app/bin/sweep(main) [0x1230] src/sweep.cpp:42" in out
    assert "--> c1.log:20 pid 4242 tid 4244 t=1764435600.123500" in out
    assert out.count("fingerprint ") == 5 and "dmabuf" in out


def test_text_quiet_is_headlines_only(result):
    out = render(result, "text", quiet=True).splitlines()
    assert len(out) == 5 and all(not ln.startswith(" ") for ln in out)
    assert out[0].startswith(("vmm.log:9: error[", "src/sweep.cpp:42: error["))


def test_cut_marks_the_cut_at_a_token_boundary():
    from rocrtrace.report.text import cut

    text = "ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x7e0000003000, size=0x1000})"
    got = cut(text, 40)
    assert got.endswith("…") and len(got) <= 40
    assert text.startswith(got[:-1].rstrip(" ,"))
    kept = got[:-1]
    # the cut falls after a separator: the kept part ends a token
    assert kept[-1] in ",={}()[]<> " or text[len(kept)] in ",={}()[]<> "
    assert cut("short", 40) == "short"


def test_text_colour_only_when_asked(result):
    assert "\x1b[" not in render(result, "text")
    assert "\x1b[1;31merror[fd-double-close]" in render(result, "text", color=True)


# --- json ----------------------------------------------------------------------


def test_json_matches_the_spec_schema(result):
    doc = json.loads(render(result, "json"))
    jsonschema.Draft202012Validator(_load("report.schema.json")).validate(doc)
    assert doc["schema"] == "rocrtrace/v1"
    assert doc == json.loads(json.dumps({"schema": "rocrtrace/v1", **result.to_dict()}))
    assert [f["severity"] for f in doc["findings"]][:2] == ["error", "error"]
    assert doc["summary"]["failed"] is True


def test_json_schema_rejects_what_the_spec_forbids(result):
    # The schema must have teeth: decimal addresses and unknown kinds fail.
    doc = json.loads(render(result, "json"))
    bad = json.loads(json.dumps(doc))
    bad["findings"][0]["subject"]["start"] = 139887000000000
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_load("report.schema.json")).validate(bad)
    bad = json.loads(json.dumps(doc))
    bad["findings"][1]["subject"]["fd_kind"] = "socket?"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_load("report.schema.json")).validate(bad)


def test_json_survives_odd_details(result):
    result.findings[0].details["weird"] = {1, 2}
    result.findings[0].details["nan"] = float("nan")
    doc = json.loads(render(result, "json"))
    d = [f for f in doc["findings"] if f["rule"] == "svm-over-revoke"][0]["details"]
    assert d["weird"] == [1, 2] and d["nan"] is None


# --- jsonl ---------------------------------------------------------------------


def test_jsonl_one_finding_per_line_with_stable_keys(result):
    from rocrtrace.schema import FINDING_NAMES, row_schema

    lines = render(result, "jsonl").splitlines()
    assert len(lines) == len(result.findings)
    check = jsonschema.Draft202012Validator(row_schema())
    for ln in lines:
        rec = json.loads(ln)
        assert list(rec) == list(FINDING_NAMES)
        check.validate(rec)
    # a message with a newline stays on its line
    assert any("\\nnext line" in ln for ln in lines)


# --- csv -----------------------------------------------------------------------


def test_csv_round_trips(result):
    rows = list(csv.DictReader(io.StringIO(render(result, "csv"))))
    assert len(rows) == len(result.findings)
    dc = [r for r in rows if r["rule"] == "fd-double-close"][0]
    # quotes and commas intact; the newline shown escaped (issue 14)
    assert dc["message"] == result.findings[1].message.replace("\n", "\\n")
    assert dc["fd"] == "7" and dc["fd_kind"] == "dmabuf"
    ov = [r for r in rows if r["rule"] == "svm-over-revoke"][0]
    # addresses as unsigned integers, lists as JSON arrays (rocrtrace/schema.py)
    assert (ov["start"], ov["end"], ov["gpu_ids"]) == (str(0x7F3A1C200000), str(0x7F3A1C210000), "[6699]")
    assert ov["cause"] == "enclosing-range"


def test_csv_defuses_spreadsheet_formulas(result):
    result.findings[0].message = '=HYPERLINK("http://x")'
    rows = list(csv.DictReader(io.StringIO(render(result, "csv"))))
    assert rows[0]["message"].startswith("'=")


# --- junit ---------------------------------------------------------------------


def test_junit_suite_per_input_case_per_rule_failure_per_finding(result):
    root = ET.fromstring(render(result, "junit"))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [S.TRACE, S.OTHER]
    for s in suites:
        cases = s.findall("testcase")
        assert [c.get("name") for c in cases] == list(RULES)
        assert int(s.get("tests")) == len(RULES)
        failed = [c for c in cases if c.find("failure") is not None]
        assert int(s.get("failures")) == len(failed)
    other = suites[1]
    # --fail-on error: the double close fails; the leaks (warnings) show as
    # output of a passing case, consistent with the exit code.
    case = {c.get("name"): c for c in other.findall("testcase")}
    assert len(case["fd-double-close"].findall("failure")) == 1
    assert case["fd-leak"].find("failure") is None
    assert "still open at exit" in case["fd-leak"].find("system-out").text
    assert int(root.get("failures")) == 2
    assert int(root.get("tests")) == 2 * len(RULES)


def test_junit_fail_on_warning_fails_each_leak(result):
    result.fail_on = "warning"
    root = ET.fromstring(render(result, "junit"))
    case = {c.get("name"): c for c in root.findall("testsuite")[1].findall("testcase")}
    # one <failure> per testcase: the second leak is its own case (issue 35)
    assert len(case["fd-leak"].findall("failure")) == 1
    assert len(case["fd-leak #2"].findall("failure")) == 1
    for suite in [root, *root.findall("testsuite")]:
        assert int(suite.get("failures")) == len(list(suite.iter("failure")))
        assert int(suite.get("tests")) == len(list(suite.iter("testcase")))


def test_junit_escapes_markup_and_control_characters(result):
    out = render(result, "junit")
    root = ET.fromstring(out)  # would raise on a raw ESC or a bare '<'
    fail = [f for f in root.iter("failure") if "closed twice" in f.get("message")][0]
    assert '"second" close, a:b, 100% <sure>' in fail.get("message")
    assert "\\x1b[31m" in fail.text


def test_junit_enabled_rules_only(result):
    root = ET.fromstring(render(result, "junit", rules=["fd-double-close", "fd-leak"]))
    names = [c.get("name") for c in root.findall("testsuite")[0].findall("testcase")]
    # rules of findings that were produced still get a case, so none is lost
    assert names[:2] == ["fd-double-close", "fd-leak"]
    assert "svm-over-revoke" in names and "svm-coherency-downgrade" not in names


# --- sarif ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    return jsonschema.Draft4Validator(_load("sarif-schema-2.1.0.json"))


def test_sarif_is_valid_2_1_0(result, sarif_validator, tmp_path):
    doc = json.loads(render(result, "sarif", cwd=str(tmp_path)))
    sarif_validator.validate(doc)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    for r in rules:
        assert r["defaultConfiguration"]["level"] == RULES[r["id"]].severity
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        # the rule's documentation as GitHub shows it: explanation, example and fix
        cat = RULES[r["id"]]
        assert r["help"]["text"].split("\n\n") == [cat.help, f"Example: {cat.example}", f"Fix: {cat.fix}"]
    assert len(run["results"]) == len(result.findings)
    for res in run["results"]:
        assert res["locations"], "code scanning rejects results without a location"
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert len(res["partialFingerprints"]["rocrtrace/v1"]) == 32


def test_sarif_points_at_source_frame_in_repo_else_trace(result, sarif_validator, tmp_path):
    doc = json.loads(render(result, "sarif", cwd=str(tmp_path)))
    res = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    ov = res["svm-over-revoke"]
    phys = ov["locations"][0]["physicalLocation"]
    # the symbolized app frame (relative path) wins over the /opt/rocm frames
    assert phys["artifactLocation"]["uri"] == "src/sweep.cpp"
    assert phys["region"]["startLine"] == 42
    assert ov["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == S.TRACE
    # stacks from frames, codeFlows from the evidence (one threadFlow per thread)
    assert len(ov["stacks"][0]["frames"]) == 3
    flows = ov["codeFlows"][0]["threadFlows"]
    assert {tf["id"] for tf in flows} == {"4243", "4244"}
    orders = sorted(loc["executionOrder"] for tf in flows for loc in tf["locations"])
    assert orders == [1, 2, 3]
    dc = res["fd-double-close"]
    phys = dc["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == S.OTHER and phys["region"]["startLine"] == 9


def test_sarif_absolute_source_under_cwd_is_repo_relative(result, sarif_validator, tmp_path):
    fr = result.findings[0].event.stack[2]
    fr.source = str(tmp_path / "src" / "sweep.cpp")
    doc = json.loads(render(result, "sarif", cwd=str(tmp_path)))
    ov = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "svm-over-revoke"][0]
    assert ov["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/sweep.cpp"
    # outside the source root: the first frame outside the runtime libraries
    # still is the program's, by its absolute path
    fr.source = "/usr/src/elsewhere/sweep.cpp"
    doc = json.loads(render(result, "sarif", cwd=str(tmp_path)))
    sarif_validator.validate(doc)
    ov = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "svm-over-revoke"][0]
    loc = ov["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "file:///usr/src/elsewhere/sweep.cpp"
    assert loc["region"]["startLine"] == 42
    # a program frame with no line information: back to the trace file and line
    fr.source, fr.source_line = None, None
    doc = json.loads(render(result, "sarif", cwd=str(tmp_path)))
    ov = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "svm-over-revoke"][0]
    loc = ov["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == S.TRACE and loc["region"]["startLine"] == 20


def test_location_skips_libc_and_runtime_frames_with_sources(tmp_path):
    """glibc's own debug info (sysdeps/...) or a ROCm runtime source under the
    root never wins over the program's frame."""
    from vocab import Frame
    from rocrtrace.report.common import location_frame, runtime_module

    (tmp_path / "sysdeps" / "nptl").mkdir(parents=True)
    (tmp_path / "sysdeps" / "nptl" / "libc_start_call_main.h").write_text("")
    stack = (
        Frame(
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            symbol="close",
            addr=0x10,
            function="close",
            source="sysdeps/nptl/libc_start_call_main.h",
            source_line=58,
        ),
        Frame("/opt/rocm/lib/libhsa-runtime64.so.1", function="x", source=str(tmp_path / "runtime.cpp"), source_line=3),
        Frame("/elsewhere/bin/app", function="main", source="/src/app/main.c", source_line=8),
    )
    fr, path = location_frame(stack, str(tmp_path))
    assert (fr.function, path, fr.source_line) == ("main", "/src/app/main.c", 8)
    assert runtime_module("/lib64/ld-linux-x86-64.so.2") and runtime_module("libstdc++.so.6")
    assert not runtime_module("/usr/bin/python3") and not runtime_module("libfoo.so.1")


def test_sarif_finding_without_file_still_has_a_location(sarif_validator):
    r = AnalysisResult()
    f = S.unparsed()
    f.file, f.line = None, None
    r.findings = [f]
    doc = json.loads(render(r, "sarif"))
    sarif_validator.validate(doc)
    assert doc["runs"][0]["results"][0]["locations"]


def test_sarif_marks_baselined_findings_suppressed(result, sarif_validator):
    from rocrtrace.baseline import Baseline, Entry, apply_baseline

    fp = result.findings[1].fingerprint
    apply_baseline(result, Baseline([Entry(fp, justification="known, tracked in #12")]))
    doc = json.loads(render(result, "sarif"))
    sarif_validator.validate(doc)
    sup = [r for r in doc["runs"][0]["results"] if "suppressions" in r]
    assert len(sup) == 1
    assert sup[0]["suppressions"][0]["justification"] == "known, tracked in #12"


# --- github --------------------------------------------------------------------


def _parse_command(line: str):
    """Split a workflow command the way the runner does."""
    assert line.startswith("::")
    head, _, data = line[2:].partition("::")
    kind, _, props = head.partition(" ")
    pairs = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return kind, pairs, data


def _unescape(s: str) -> str:
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_escapes_data_and_properties(result, tmp_path):
    out = render(result, "github", cwd=str(tmp_path), step_summary=str(tmp_path / "s.md"))
    cmds = [ln for ln in out.splitlines() if ln.startswith("::")]
    assert len(cmds) == len(result.findings)
    for ln in cmds:
        kind, props, data = _parse_command(ln)
        assert kind in ("error", "warning", "notice")
        assert "\n" not in data and "\r" not in data
        for v in props.values():
            assert ":" not in v and "," not in v
    kind, props, data = _parse_command(cmds[1])
    assert (kind, _unescape(props["file"]), props["line"]) == ("error", S.OTHER, "9")
    assert _unescape(props["title"]) == "fd-double-close (error)"
    msg = _unescape(data)
    assert msg.startswith('fd 7 (dmabuf) closed twice: "second" close, a:b, 100% <sure>')
    assert "a:b%0A" in msg  # a literal %0A in trace text is not a newline
    # the over-revoke points at the program's source line
    kind, props, _ = _parse_command(cmds[0])
    assert (props["file"], props["line"]) == ("src/sweep.cpp", "42")


def test_github_property_escaping_of_colon_and_comma():
    from rocrtrace.report.github import command

    line = command("error", "50% done\r\nnext", file="a,b:c.log", line=3, title="x: y, z")
    assert line == "::error file=a%2Cb%3Ac.log,line=3,title=x%3A y%2C z::50%25 done%0D%0Anext"


def test_github_limits_most_severe_first_then_summary(tmp_path):
    r = S.many_result(n_err=14, n_warn=3, n_note=12)
    out = render(r, "github", step_summary=str(tmp_path / "s.md"))
    cmds = [_parse_command(ln) for ln in out.splitlines() if ln.startswith("::")]
    kinds = [k for k, _, _ in cmds]
    assert kinds.count("error") == 10 and kinds.count("warning") == 3
    # 9 notes plus the summary notice: GitHub would drop an 11th notice
    assert kinds.count("notice") == 10
    assert kinds == sorted(kinds, key=["error", "warning", "notice"].index)
    kind, props, data = cmds[-1]
    assert kind == "notice" and data.startswith("7 more findings in the report")  # 4 errors, 2+1 notes
    assert len(cmds) <= 50


def test_github_step_summary_appended(result, tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    render(result, "github")
    text = path.read_text()
    assert text.startswith("earlier step\n")
    assert "| severity | rule |" in text and "`svm-over-revoke`" in text


def test_github_no_step_summary_without_env(result, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    render(result, "github")
    assert list(tmp_path.iterdir()) == []


# --- markdown ------------------------------------------------------------------


def test_markdown_table_rows_and_details(result):
    out = render(result, "markdown")
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and "`" in ln]
    assert len(rows) == len(result.findings)
    for ln in rows:
        # escaped pipes only: every row keeps exactly five cells
        cells = ln.replace("\\|", "").split("|")
        assert len(cells) == 7
    assert out.count("<details>") == len(result.findings)
    assert out.count("</details>") == len(result.findings)
    assert "&lt;sure&gt;" in out and "<sure>" not in out.split("```")[0]


def test_markdown_code_fence_outlasts_backticks_in_trace(result):
    result.findings[1].event.text = "close(7) ```` fenced"
    out = render(result, "markdown")
    assert "`````text" in out


# --- control characters from trace text (issue 14) -----------------------------


def _hostile_result():
    """A finding whose decoded path holds a newline and a GitHub workflow
    command, an escape sequence and a C1 control."""
    from vocab import Close
    from rocrtrace.findings import Evidence, Finding
    from rocrtrace.result import AnalysisResult
    from vocab import InputInfo

    evil = "/tmp/x\n::warning::pwned\x1b[2J\x9b"
    c = Close(
        file="t.log", line=2, pid=1, tid=1, fd=3, path=evil, ret=-1, err="EBADF", text=f"close(3<{evil}>) = -1 EBADF"
    )
    f = Finding(
        rule="fd-double-close",
        message=f"fd 3 ({evil}) closed twice",
        event=c,
        subject={"kind": "fd", "fd": 3, "fd_kind": "other"},
        evidence=[Evidence("this close", c, note=evil)],
    )
    return AnalysisResult(inputs=[InputInfo(file="t.log", format="strace", lines=2, events=2)], findings=[f])


@pytest.mark.parametrize("fmt", ["csv", "junit", "github", "markdown", "text", "sarif", "json", "jsonl", "perfetto"])
def test_no_control_character_of_trace_text_reaches_any_format(fmt):
    out = render(_hostile_result(), fmt)
    if isinstance(out, bytes):
        out = out.decode("utf-8", "replace")
    assert "\x1b" not in out and "\x9b" not in out
    assert not any(ln.lstrip().startswith("::warning::pwned") for ln in out.splitlines()), fmt


def test_csv_cells_are_one_line_each():
    import csv as csvmod

    out = render(_hostile_result(), "csv")
    rows = list(csvmod.DictReader(io.StringIO(out)))
    assert len(out.splitlines()) == 2 and len(rows) == 1
    assert "\\n::warning::pwned\\x1b[2J\\x9b" in rows[0]["message"]


def test_svm_caveats_only_for_inputs_with_svm_calls(tmp_path):
    """A program that never touched a GPU gets no SVM caveats; an SVM trace
    gets them all in --verbose."""
    from rocrtrace.engine import analyze

    root = pathlib.Path(__file__).resolve().parent.parent
    svm = analyze([str(root / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log")])
    assert sum(x.startswith("SVM:") for x in svm.coverage["cannot_show"]) >= 3
    assert "SVM:" in render(svm, "text", verbose=True)
    assert "SVM:" not in render(svm, "text")  # caveats are --verbose only
    log = tmp_path / "plain.log"
    log.write_text(
        '100 1700000000.000100 openat(AT_FDCWD, "/etc/hostname", O_RDONLY) = 3'
        "</etc/hostname> <0.000010>\n100 1700000000.000200 close(3</etc/hostname>)"
        " = 0 <0.000005>\n100 1700000000.000300 exit_group(0) = ?\n"
        "100 +++ exited with 0 +++\n"
    )
    plain = analyze([str(log)])
    text = render(plain, "text", verbose=True)
    assert "SVM" not in text and "intent calls" not in text
