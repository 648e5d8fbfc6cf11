"""What the generators of checked-in hardware tables share (gen_amd_hw.py, gen_qcom_hw.py,
gen_nv_qmd.py): write the files, or in --check mode compare them with what is checked in; the command
line of the generators that read Debian's linux-source-6.12 tarball."""
import argparse
import os
import sys

LINUX_TARBALL = '/usr/src/linux-source-6.12.tar.xz'


def write_or_check(tool, files, out, check):
    """files: {name: text}. With `check` (a directory), exits 1 if a file there differs, else 0; without
    it, writes each file into `out` (default: the current directory)."""
    if check:
        bad = [n for n, text in files.items() if not os.path.exists(os.path.join(check, n)) or open(os.path.join(check, n)).read() != text]
        for n in bad:
            print('%s: %s differs from what the generator writes; rerun scripts/%s -o %s' % (tool, os.path.join(check, n), tool, check))
        if not bad:
            print('%s: %s match the generator' % (tool, ', '.join(files)))
        sys.exit(1 if bad else 0)
    for n, text in files.items():
        with open(os.path.join(out or '.', n), 'w') as f:
            f.write(text)


def tarball_main(tool, doc, read_sources, make_files):
    """The command line of a generator reading the kernel tarball: -o DIR (write) or --check DIR, and
    --tarball. A missing tarball exits 77 under --check (the test reports skipped), else 1.
    make_files(read_sources(tarball)) -> {name: text}."""
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('-o', '--out', help='directory to write to')
    ap.add_argument('--check', help='directory whose files must match')
    ap.add_argument('--tarball', default=LINUX_TARBALL)
    a = ap.parse_args()
    if not a.check and not a.out:
        ap.error('-o DIR or --check DIR')
    if not os.path.exists(a.tarball):
        print('%s: %s is missing (apt-get install linux-source-6.12); not checked' % (tool, a.tarball))
        sys.exit(77 if a.check else 1)
    write_or_check(tool, make_files(read_sources(a.tarball)), a.out, a.check)
