"""What the generators of checked-in hardware tables share (gen_amd_hw.py, gen_qcom_hw.py,
gen_nv_qmd.py): write the files, or in --check mode compare them with what is checked in."""
import os
import sys


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
