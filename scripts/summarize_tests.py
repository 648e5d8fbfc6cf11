#!/usr/bin/env python3
"""Sums doctest's per-binary counts from meson's test log into one line: N passed, N failed, N skipped.
A test binary that failed without printing doctest's summary (a crash, a sanitizer report) counts as
one failed test; meson's SKIP (exit 77) counts as one skipped. Extra failures (e.g. a compiler that
could not build the tree) are added from argv[2]."""
import json
import re
import sys

passed = failed = skipped = 0
summary = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError as e:
    print(f"no test log ({e})")
    lines = []
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
if len(sys.argv) > 2:
    failed += int(sys.argv[2])
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
