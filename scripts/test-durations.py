"""Prints how long each stage of scripts/test.sh took and the slowest tests.

    test-durations.py STAGES.tsv REPORT.xml...

STAGES.tsv has one line per stage, "name<TAB>seconds<TAB>result", written by
scripts/test.sh as each stage ends. The reports are the runners' JUnit XML
files (lit, pytest, ctest); each test case's `time` attribute gives its
duration. The suite has a budget (design.md section 5: 20 minutes on a fresh
2-core machine, build included); this table at the end of every run is where
growth is seen when it happens. A missing or unreadable report is named and
skipped. Exits 0: the runners' own exit codes decide the result.
"""
import os
import sys
import xml.etree.ElementTree as ET

SLOWEST = 10


def read_stages(path):
    """[(stage, seconds, result)] in the order the stages ran."""
    stages = []
    if not os.path.exists(path):
        return stages
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                stages.append((parts[0], float(parts[1]), parts[2]))
    return stages


def test_times(path):
    """Yields (test name, seconds) for each test case of a JUnit report."""
    for case in ET.parse(path).getroot().iter("testcase"):
        name = ".".join(n for n in (case.get("classname"), case.get("name")) if n)
        yield name, float(case.get("time") or 0)


def minutes(seconds):
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def print_stages(stages):
    print("=== durations: stages ===")
    width = max([len(s) for s, _, _ in stages] + [5])
    print(f"| {'stage':<{width}} | {'time':>14} | result |")
    print(f"|{'-' * (width + 2)}|{'-' * 16}|--------|")
    for stage, seconds, result in stages:
        print(f"| {stage:<{width}} | {minutes(seconds):>14} | {result:<6} |")
    total = sum(s for _, s, _ in stages)
    print(f"| {'total':<{width}} | {minutes(total):>14} |        |")


def print_slowest(reports):
    times = []
    for path in reports:
        if not os.path.exists(path):
            print(f"test-durations: no report {path} (its runner did not run or finish)")
            continue
        try:
            label = os.path.splitext(os.path.basename(path))[0]
            times += [(seconds, name, label) for name, seconds in test_times(path)]
        except ET.ParseError as e:
            print(f"test-durations: {path}: unreadable report ({e})")
    times.sort(reverse=True)
    print(f"=== durations: the {SLOWEST} slowest of {len(times)} tests ===")
    for seconds, name, label in times[:SLOWEST]:
        print(f"{seconds:8.1f} s  {name}  ({label})")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test-durations.py STAGES.tsv REPORT.xml...")
    stages = read_stages(sys.argv[1])
    if stages:
        print_stages(stages)
    print_slowest(sys.argv[2:])


if __name__ == "__main__":
    main()
