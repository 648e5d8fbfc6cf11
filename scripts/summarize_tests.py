#!/usr/bin/env python3
"""Sums doctest's per-binary counts from meson's test logs into one line: N passed, N failed, N skipped.
  summarize_tests.py [--stages FILE] [--total SECONDS] [--extra-failures N] TESTLOG.json...
A test binary that failed without printing doctest's summary (a crash, a sanitizer report) counts as
one failed test; meson's SKIP (exit 77) counts as one skipped; any other test (a fuzz run, a tool
check) counts as one. Extra failures (e.g. a compiler that could not build the tree) are added.
Before that line it prints where the time went: each stage's wall time from FILE (lines NAME<TAB>SECONDS,
as scripts/test writes them), the 15 slowest tests with the build they ran in, and
`test command took N s` when --total is given."""
import json
import os
import re
import sys

passed = failed = skipped = 0
summary = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")
args = sys.argv[1:]
extra = 0
stages_file = None
total = None
while args[:1] and args[0].startswith("--"):
    opt, value, args = args[0], args[1], args[2:]
    if opt == "--extra-failures":
        extra = int(value)
    elif opt == "--stages":
        stages_file = value
    elif opt == "--total":
        total = int(value)
    else:
        sys.exit(f"summarize_tests.py: unknown option {opt}")
tests = []  # (build, test record)
for path in args:
    build = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(path))))
    try:
        tests += [(build, json.loads(line)) for line in open(path).read().splitlines()]
    except OSError as e:
        print(f"no test log ({e})")
        failed += 1
for _, t in tests:
    m = summary.search(t.get("stdout", "") or "")
    result = t.get("result", "")
    if m:
        _, p, f, s = map(int, m.groups())
        passed, failed, skipped = passed + p, failed + f, skipped + s
        if result not in ("OK", "EXPECTEDFAIL") and f == 0:
            failed += 1  # doctest was happy but the process was not (leak report, exit code)
    elif result == "SKIP":
        skipped += 1
    elif result in ("OK", "EXPECTEDFAIL"):
        passed += 1
    else:
        failed += 1
failed += extra

if stages_file:
    print("== where the time went (wall seconds)")
    try:
        for line in open(stages_file).read().splitlines():
            name, seconds = line.split("\t")
            print(f"  {name:<24} {int(seconds):>6} s")
    except OSError as e:
        print(f"  no stage times ({e})")
if tests:
    print("  slowest tests:")
    slowest = sorted(tests, key=lambda bt: -float(bt[1].get("duration", 0) or 0))[:15]
    for build, t in slowest:
        print(f"  {float(t.get('duration', 0) or 0):>8.1f} s  {t.get('name', '?'):<40} {build}  {t.get('result', '')}")
if total is not None:
    print(f"test command took {total} s")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
