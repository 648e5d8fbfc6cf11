#!/usr/bin/env python3
"""Checks that a build without the Linux drivers (-Dlinux_drivers=disabled) compiles nothing of ours
that only Linux has: a <linux/...> header, <sys/eventfd.h> and kin, memfd or eventfd calls, Linux's
own mmap flags. On Linux those compile anyway, so the compiler cannot tell; this reads every file the
build compiled — the sources in compile_commands.json and our headers in ninja's dependency log — and
reports each use with its line. A use inside `#if UGPU_LINUX_DRIVERS`, or of a name the
file itself defines when the system lacks it (`#ifndef MAP_HUGETLB` / `#define MAP_HUGETLB`), is
deliberate and allowed. Meson runs it as the suite `portable` of such a build (tests/meson.build).

    scripts/check_portable.py BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys

LINUX_ONLY = re.compile(
    r"#\s*include\s*<((linux|asm)/[\w/.]+|sys/(eventfd|epoll|inotify|signalfd|timerfd|prctl|sysinfo|vfs|sysmacros)\.h)>"
    r"|\b(memfd_create|epoll_\w+|inotify_\w+|signalfd|timerfd_\w+|sched_setaffinity|pipe2|accept4|dup3|mremap)\s*\("
    r"|(?<![\w:])::eventfd\s*\("
    r"|\b(MFD_\w+|EFD_\w+|MAP_(POPULATE|LOCKED|HUGETLB|FIXED_NOREPLACE|GROWSDOWN|SHARED_VALIDATE|SYNC)|O_(PATH|TMPFILE|DIRECT|NOATIME))\b")
# Uses known to remain, each with where it is to be fixed. Empty is the goal.
KNOWN = {}


def compiled_files(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    files = {os.path.realpath(os.path.join(c["directory"], c["file"])) for c in commands}
    deps = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True, check=True).stdout
    for line in deps.splitlines():
        if line.startswith("    "):
            files.add(os.path.realpath(os.path.join(build, line.strip())))
    source_root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    build_root = os.path.realpath(build)
    return source_root, sorted(p for p in files if p.startswith(source_root + "/") and not p.startswith(build_root + "/"))


def uses(text):
    """(line number, name) of each Linux-only use outside a deliberate guard."""
    lines = text.splitlines()
    provided = set()  # names the file defines itself where the system has none
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"\s*#\s*ifndef\s+(\w+)", line)
        if m and re.match(r"\s*#\s*define\s+" + m.group(1) + r"\b", lines[i + 1]):
            provided.add(m.group(1))
    stack, out = [], []  # stack: [condition, in its #else] of each open #if
    for n, line in enumerate(lines, 1):
        d = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if d:
            kind, cond = d.groups()
            if kind in ("if", "ifdef", "ifndef"): stack.append([cond.strip(), False])
            elif kind == "endif" and stack: stack.pop()
            elif kind in ("elif", "else") and stack: stack[-1][1] = True
            continue
        # Inside `#if UGPU_LINUX_DRIVERS` (or the #else of `#if !UGPU_LINUX_DRIVERS`): only Linux builds it.
        if any("UGPU_LINUX_DRIVERS" in c and c.startswith("!") == in_else for c, in_else in stack): continue
        for m in LINUX_ONLY.finditer(re.sub(r"//.*", "", line)):
            name = m.group(0).strip().rstrip("(").strip()
            if name.lstrip(":") in provided or any(re.search(r"\b" + re.escape(name) + r"\b", c) for c, _ in stack): continue
            out.append((n, name))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source_root, files = compiled_files(sys.argv[1])
    bad = 0
    for path in files:
        rel = os.path.relpath(path, source_root)
        with open(path, errors="replace") as f:
            for n, name in uses(f.read()):
                why = KNOWN.get((rel, name.lstrip(":")))
                print(f"{rel}:{n}: {name}" + (f" (known: {why})" if why else ""))
                bad += not why
    print(f"portable: {len(files)} files of ours compiled; {bad} Linux-only use{'s' if bad != 1 else ''} outside a guard")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
