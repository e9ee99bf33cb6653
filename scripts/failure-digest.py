"""Prints the end of each failed test's output, from JUnit XML reports.

    failure-digest.py REPORT.xml...

scripts/test.sh runs lit, pytest and ctest with JUnit reports and calls this
last, so that the reason of a failure is at the very end of the log: a CI log
that keeps only its beginning and end (the middle cut) still shows it. A
report that is missing (its runner did not get that far) is named and skipped.
Exits 0; the runners' own exit codes decide the result.
"""
import os
import sys
import xml.etree.ElementTree as ET

TAIL_LINES = 40


def failures(path):
    """Yields (test name, failure text) for each failed or erroring test case."""
    for case in ET.parse(path).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            node = case.find(kind)
            if node is None:
                continue
            text = "\n".join(t for t in (node.get("message"), node.text) if t)
            output = case.find("system-out")
            if output is not None and output.text:
                text += "\n" + output.text
            name = ".".join(n for n in (case.get("classname"), case.get("name")) if n)
            yield name, text


def main():
    printed = False
    for path in sys.argv[1:]:
        if not os.path.exists(path):
            print(f"failure-digest: no report {path} (its runner did not finish)")
            continue
        try:
            found = list(failures(path))
        except ET.ParseError as e:
            print(f"failure-digest: {path}: unreadable report ({e})")
            continue
        for name, text in found:
            if not printed:
                print("=== failure digest: the last lines of each failed test ===")
                printed = True
            lines = text.rstrip().splitlines()
            print(f"--- {name} ({os.path.basename(path)}) ---")
            if len(lines) > TAIL_LINES:
                print(f"[... {len(lines) - TAIL_LINES} earlier lines]")
            print("\n".join(lines[-TAIL_LINES:]))


if __name__ == "__main__":
    main()
