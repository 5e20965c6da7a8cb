"""The gate report as JUnit XML, the one test-result format every CI system renders.

One <testcase> per rule: a failed rule carries <failure>, a skipped optional rule <skipped>.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from nexagauge_local.gate.evaluate import GateReport

SUITE = "nexagauge-local gate"


def junit_xml(report: GateReport) -> ET.ElementTree:
    fails, skips = report.counts["FAIL"], report.counts["SKIP"]
    # the one suite's counts stand on both the wrapper and the suite, as CI readers expect
    counts = {"name": SUITE, "tests": str(len(report.results)), "failures": str(fails),
              "errors": "0", "skipped": str(skips)}
    root = ET.Element("testsuites", counts)
    suite = ET.SubElement(root, "testsuite", counts)
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run", report.run),
        ("policy", report.policy),
        ("baseline", report.baseline or ""),
    ):
        ET.SubElement(props, "property", name=name, value=value)
    classname = f"gate.{Path(report.policy).stem}"
    for res in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=classname,
            name=res.rule,
            file=report.policy,
            line=str(res.line or 0),
        )
        if res.status == "FAIL":
            failure = ET.SubElement(case, "failure", message=res.detail, type="threshold")
            failure.text = f"{res.rule}: {res.detail}"
        elif res.status == "SKIP":
            ET.SubElement(case, "skipped", message=res.detail)
        ET.SubElement(
            case, "system-out"
        ).text = f"value={res.value if res.value is not None else 'null'}"
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: GateReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(report).write(path, encoding="utf-8", xml_declaration=True)
