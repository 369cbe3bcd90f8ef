"""JUnit XML: a testsuite per input, a testcase per enabled rule per input
(so passing checks show as passed), a <failure> per finding.

A finding below ``--fail-on`` does not fail its testcase: a JUnit report that
shows red while the gate passed would contradict the exit code.  Such
findings are listed in the testcase's <system-out> instead.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .common import finding_lines, printable, rule_ids as enabled_ids, severity_rank

# XML 1.0 cannot carry most C0 controls even as character references.
_XML_BAD = {c: f"\\x{c:02x}" for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}
_XML_BAD.update({0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"})


def xml_text(s) -> str:
    return ("" if s is None else str(s)).translate(_XML_BAD)


def _body(f) -> str:
    # One logical line each: a newline inside one came from trace text and
    # is shown escaped, so it can never start a line of a CI log.
    return "\n".join(
        printable(ln) for ln in [f"{f.severity} {f.rule}: {f.message}", *finding_lines(f, clean=printable)]
    )


def _suites(result) -> list[tuple[str, object, list]]:
    """(name, InputInfo or None, findings) per input, in input order; findings
    that name no known input get a suite of their own so none is lost."""
    suites: dict[str, tuple[object, list]] = {i.file: (i, []) for i in result.inputs}
    for f in result.sorted_findings():
        key = f.file if f.file in suites else (f.file or "rocrtrace")
        suites.setdefault(key, (None, []))[1].append(f)
    if not suites:
        suites["rocrtrace"] = (None, [])
    return [(name, info, fs) for name, (info, fs) in suites.items()]


def render(result, rules=None, enabled=None, **_opts) -> str:
    rule_ids = enabled_ids(rules, enabled)
    # Findings of rules not listed still have to show up somewhere.
    for f in result.findings:
        if f.rule not in rule_ids:
            rule_ids.append(f.rule)
    limit = severity_rank(result.fail_on)
    root = ET.Element("testsuites", name="rocrtrace")
    total_tests = total_fail = 0
    for name, info, fs in _suites(result):
        suite = ET.SubElement(root, "testsuite", name=xml_text(printable(name)))
        if info is not None:
            props = ET.SubElement(suite, "properties")
            for k, v in info.to_dict().items():
                ET.SubElement(props, "property", name=k, value=xml_text(printable(v)))
        for rid in rule_ids:
            failing = [x for x in fs if x.rule == rid and severity_rank(x.severity) >= limit]
            below = [x for x in fs if x.rule == rid and severity_rank(x.severity) < limit]
            # One <failure> per testcase (the JUnit schema's, and what CI
            # tools count): the n-th failing finding of a rule in one input
            # is its own testcase "RULE #n", so failures= always equals the
            # number of <failure> elements.
            for n, f in enumerate(failing or [None], 1):
                case = ET.SubElement(
                    suite,
                    "testcase",
                    name=rid if n == 1 else f"{rid} #{n}",
                    classname=xml_text(printable(f"rocrtrace.{name}")),
                )
                if f is not None:
                    fail = ET.SubElement(
                        case, "failure", type=f.severity, message=xml_text(printable(f"{f.rule}: {f.message}"))
                    )
                    fail.text = xml_text(_body(f))
                if n == 1 and below:
                    out = ET.SubElement(case, "system-out")
                    out.text = xml_text("\n\n".join(f"(below --fail-on {result.fail_on})\n{_body(x)}" for x in below))
        cases = suite.findall("testcase")
        failed_cases = sum(1 for c in cases if c.find("failure") is not None)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failed_cases))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total_tests += len(cases)
        total_fail += failed_cases
    root.set("tests", str(total_tests))
    root.set("failures", str(total_fail))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
