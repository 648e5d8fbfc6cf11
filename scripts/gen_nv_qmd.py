#!/usr/bin/env python3
"""Writes hw/nv/qmd_fields.h: the compute QMD (queue meta data) layouts ugpu reads and writes, as tables
of bit ranges, from NVIDIA's open-gpu-doc class headers (MIT):

  V03_00  classes/compute/clcbc0qmd.h  (Hopper's description of V03_00, which Ampere and Ada use too;
                                       clc6c0qmd.h, Ampere-A's, calls some of its bits reserved)
  V04_00  classes/compute/clcbc0qmd.h  (HOPPER_COMPUTE_A)
  V05_00  classes/compute/clcec0qmd.h  (BLACKWELL_COMPUTE_B; clcdc0qmd.h defines the same V05_00)

Every `MW(hi:lo)` field of each version is kept, reserved ones included. A field the header writes as
`NAME(i)` is expanded to NAME_0 .. NAME_{n-1}, with n from ARRAY_COUNTS below (the headers do not state
it). Where the header also spells out an element by hand (V05_00's DEPENDENT_QMD0_ENABLE next to
DEPENDENT_QMD_ENABLE(i)), the expanded element is kept as an alias of the spelled-out field.

    scripts/gen_nv_qmd.py --ogd PATH/open-gpu-doc -o hw/nv
    scripts/gen_nv_qmd.py --ogd PATH/open-gpu-doc --check hw/nv   (exit 1 if the file differs, 77 when
                                                                  the open-gpu-doc checkout is missing)
"""
import argparse
import os
import re
import sys

from hw_tables import write_or_check

# (C++ name, header, define prefix, major, minor, bytes)
LAYOUTS = [
    ('QmdV03_00', 'classes/compute/clcbc0qmd.h', 'NVCBC0_QMDV03_00', 3, 0, 256),
    ('QmdV04_00', 'classes/compute/clcbc0qmd.h', 'NVCBC0_QMDV04_00', 4, 0, 384),
    ('QmdV05_00', 'classes/compute/clcec0qmd.h', 'NVCEC0_QMDV05_00', 5, 0, 384),
]

# Elements of each indexed field family. Constant buffers: 8 banks in every version. V04/V05 releases:
# 3 (RELEASE_SEMAPHORE0..2 carry their addresses); dependent QMDs: 2 (DEPENDENT_QMD0/1_POINTER).
# TPC_DISABLE_MASK: 8 words in V05 (the next field starts right after); V04 leaves room for 18 before
# OUTER_PUT, but 8 (256 TPCs) is assumed there too.
ARRAY_COUNTS = [
    ('CONSTANT_BUFFER_', 8),
    ('RELEASE_', 3),
    ('DEPENDENT_QMD_', 2),
    ('TPC_DISABLE_MASK', 8),
]


def array_count(name):
    for prefix, n in ARRAY_COUNTS:
        if name.startswith(prefix):
            return n
    sys.exit('gen_nv_qmd.py: no element count for indexed field %s; add it to ARRAY_COUNTS' % name)


def parse(text, prefix):
    """[(NAME, hi, lo, alias_of)] in header order, and {(NAME, VALUE_NAME): value}."""
    fields, values, explicit = [], [], {}
    field_re = re.compile(r'#define\s+%s_(\w+?)(\(i\))?\s+MW\((.*)\)\s*$' % prefix)
    value_re = re.compile(r'#define\s+%s_(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$' % prefix)
    for line in text.splitlines():
        line = line.strip()
        m = field_re.match(line)
        if m:
            name, indexed, body = m.groups()
            if indexed:
                hi_e, lo_e = re.fullmatch(r'\((.*)\):\((.*)\)', body).groups()
                for i in range(array_count(name)):
                    ev = lambda e: int(eval(e.replace('(i)', str(i)), {'__builtins__': {}}))
                    fields.append(['%s_%d' % (name, i), ev(hi_e), ev(lo_e), None])
            else:
                hi, lo = (int(x) for x in body.split(':'))
                fields.append([name, hi, lo, None])
                explicit[name] = (hi, lo)
            continue
        m = value_re.match(line)
        if m:
            values.append((m.group(1), int(m.group(2), 0)))
    # An expanded element that duplicates a spelled-out field (same bits, name differing only by where
    # the index sits) becomes an alias of it.
    by_bits = {}
    for f in fields:
        if f[0] in explicit:
            by_bits.setdefault((f[1], f[2]), []).append(f[0])
    for f in fields:
        if f[0] not in explicit:
            same = by_bits.get((f[1], f[2]), [])
            if same:
                f[3] = same[0]
    names = [f[0] for f in fields]
    if len(set(names)) != len(names):
        sys.exit('gen_nv_qmd.py: %s has a field name twice' % prefix)
    # Value names: NAME_VALUE where NAME is a field (the longest that matches). Indexed fields' values
    # are written once per family in the header; they are attached to every element here. Plain
    # FALSE = 0 / TRUE = 1 are left out.
    families = {}
    for n in names:
        families.setdefault(re.sub(r'_\d+$', '', n), []).append(n)
    alias = {f[0]: f[3] for f in fields if f[3]}
    named = []
    for vname, v in values:
        best = None
        for fam in families:
            if vname.startswith(fam + '_') and (best is None or len(fam) > len(best)):
                best = fam
        for n in names:
            if vname.startswith(n + '_') and (best is None or len(n) > len(best)):
                best = n
        if best is None or (vname[len(best) + 1:], v) in (('FALSE', 0), ('TRUE', 1)):
            continue  # FALSE/TRUE of a one-bit field say nothing a decoder's 0/1 does not
        for t in families.get(best, [best]):
            entry = (alias.get(t, t), vname[len(best) + 1:], v)  # an alias's values go to the field it names
            if entry not in named:
                named.append(entry)
    return fields, named


def check(cname, fields, nbytes):
    bits = {}
    for name, hi, lo, alias in fields:
        if hi < lo or hi >= nbytes * 8 or hi // 32 != lo // 32:
            sys.exit('gen_nv_qmd.py: %s.%s has bits %d:%d' % (cname, name, hi, lo))
        if alias:
            continue
        for b in range(lo, hi + 1):
            if b in bits:
                sys.exit('gen_nv_qmd.py: %s.%s overlaps %s at bit %d' % (cname, name, bits[b], b))
            bits[b] = name


def gen(ogd):
    out = ['// Generated by scripts/gen_nv_qmd.py from NVIDIA open-gpu-doc (classes/compute/clcbc0qmd.h,',
           '// clcec0qmd.h). Do not edit. Field names are the header\'s, lowercased, without the',
           '// NVxxxx_QMDVyy_zz_ prefix; an indexed field NAME(i) is NAME_0 .. NAME_{n-1}. Bit ranges are',
           '// absolute (bit b is bit b%32 of dword b/32). Included by hw/nv/qmd.cpp; use hw/nv/qmd.h.',
           '#pragma once', '', '#include "hw/nv/qmd.h"', '', 'namespace ugpu::hw::nv {', '']
    for cname, path, prefix, major, minor, nbytes in LAYOUTS:
        full = os.path.join(ogd, path)
        if not os.path.exists(full):
            sys.exit('gen_nv_qmd.py: %s is missing' % full)
        fields, values = parse(open(full).read(), prefix)
        check(cname, fields, nbytes)
        ids = [f[0].lower() for f in fields]
        out.append('// %s: %s %s, %d bytes.' % (cname, path.split('/')[-1], prefix, nbytes))
        out.append('struct %s {' % cname)
        out.append('  static constexpr uint8_t kMajor = %d, kMinor = %d;' % (major, minor))
        out.append('  static constexpr uint16_t kBytes = %d;' % nbytes)
        out.append('  enum F : uint16_t {')
        line = '   '
        for i in ids:
            if len(line) + len(i) + 2 > 108:
                out.append(line)
                line = '   '
            line += ' ' + i + ','
        out.append(line)
        out.append('  };')
        out.append('  static constexpr QmdField fields[] = {')
        for name, hi, lo, alias in fields:
            if alias:
                out.append('      {"%s", %d, %d, "%s"},' % (name.lower(), hi, lo, alias.lower()))
            else:
                out.append('      {"%s", %d, %d},' % (name.lower(), hi, lo))
        out.append('  };')
        out.append('  static constexpr QmdValue values[] = {')
        for field, vname, v in values:
            out.append('      {"%s", "%s", %d},' % (field.lower(), vname.lower(), v))
        out.append('  };')
        out.append('};')
        out.append('')
    out += ['}  // namespace ugpu::hw::nv', '']
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ogd', required=True, help='a checkout of github.com/NVIDIA/open-gpu-doc')
    ap.add_argument('-o', '--out', help='directory to write into (hw/nv)')
    ap.add_argument('--check', help='directory whose qmd_fields.h must match')
    a = ap.parse_args()
    if not os.path.isdir(a.ogd):
        print('gen_nv_qmd.py: %s is missing; not checked' % a.ogd)
        sys.exit(77 if a.check else 1)
    write_or_check('gen_nv_qmd.py', {'qmd_fields.h': gen(a.ogd)}, a.out, a.check)


if __name__ == '__main__':
    main()
