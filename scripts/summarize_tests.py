#!/usr/bin/env python3
"""Sums doctest's per-binary counts from meson's test logs into one line: N passed, N failed, N skipped.
  summarize_tests.py [--extra-failures N] TESTLOG.json...
A test binary that failed without printing doctest's summary (a crash, a sanitizer report) counts as
one failed test; meson's SKIP (exit 77) counts as one skipped; any other test (a fuzz run, a tool
check) counts as one. Extra failures (e.g. a compiler that could not build the tree) are added."""
import json
import re
import sys

passed = failed = skipped = 0
summary = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")
args = sys.argv[1:]
extra = 0
if args[:1] == ["--extra-failures"]:
    extra, args = int(args[1]), args[2:]
lines = []
for path in args:
    try:
        lines += open(path).read().splitlines()
    except OSError as e:
        print(f"no test log ({e})")
        failed += 1
for line in lines:
    t = json.loads(line)
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
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
