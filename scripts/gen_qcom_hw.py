#!/usr/bin/env python3
"""Writes the Adreno hardware tables ugpu uses, read from Debian's linux-source-6.12 tarball
(drivers/gpu/drm/msm/registers/adreno/, the register database freedreno and Linux's msm driver share):

  hw/qcom/pm4_opcodes.h   the CP's type-7 packet opcodes and the event types CP_EVENT_WRITE takes, as
                          the A6XX generation numbers them (adreno_pm4.xml), with a name table for decoders
  hw/qcom/pm4_packets.h   the payload fields of the packets the compute path builds and the emulated CP reads
                          (each packet's first dword, adreno_pm4.xml domains) and the enums their fields take
  hw/qcom/a6xx_regs.h     the A6XX registers the compute path programs or reads (a6xx.xml), with their
                          bit fields (inline, or from the bitset a register names as its type), and a
                          table of them by offset for decoders

Only what ugpu uses is kept (the lists below); add a name there and rerun.

    scripts/gen_qcom_hw.py -o hw/qcom            (writes both files)
    scripts/gen_qcom_hw.py --check hw/qcom       (exit 1 if a file differs; exit 77 when the tarball is
                                                 missing: apt-get install linux-source-6.12)
"""
import re
import sys
import tarfile
import xml.etree.ElementTree as ET

from hw_tables import tarball_main

ADRENO = 'linux-source-6.12/drivers/gpu/drm/msm/registers/adreno/'
GENERATION = 6  # the variant the tables are for: A6XX

# The CP packets the compute path emits or a decoder must name.
OPCODES = ['CP_NOP', 'CP_WAIT_FOR_IDLE', 'CP_WAIT_MEM_WRITES', 'CP_WAIT_REG_MEM', 'CP_REG_TO_MEM', 'CP_MEM_WRITE', 'CP_EVENT_WRITE',
           'CP_SET_MARKER', 'CP_LOAD_STATE6_FRAG', 'CP_LOAD_STATE6_GEOM', 'CP_EXEC_CS', 'CP_EXEC_CS_INDIRECT', 'CP_RUN_OPENCL',
           'CP_INDIRECT_BUFFER', 'CP_MEM_TO_MEM', 'CP_MEMCPY', 'CP_WAIT_FOR_ME', 'CP_SET_MODE']
# Packets whose first payload dword has fields (domain name in adreno_pm4.xml), and the enums those fields take.
PACKETS = ['CP_LOAD_STATE6', 'CP_REG_TO_MEM', 'CP_WAIT_REG_MEM', 'CP_EVENT_WRITE', 'CP_SET_MARKER']
ENUMS = {'a6xx_state_block': ['SB6_CS_TEX', 'SB6_CS_SHADER'], 'a6xx_state_type': ['ST6_SHADER', 'ST6_CONSTANTS', 'ST6_UBO', 'ST6_IBO'],
         'a6xx_state_src': ['SS6_DIRECT', 'SS6_INDIRECT'], 'cp_cond_function': ['WRITE_ALWAYS', 'WRITE_LT', 'WRITE_LE', 'WRITE_EQ', 'WRITE_NE',
         'WRITE_GE', 'WRITE_GT'], 'poll_memory_type': ['POLL_REGISTER', 'POLL_MEMORY'], 'a6xx_marker': ['RM6_COMPUTE']}
EVENTS = ['CACHE_FLUSH_TS', 'CACHE_INVALIDATE', 'WT_DONE_TS', 'RB_DONE_TS']
# The A6XX registers of the compute dispatch (tinygrad's ops_qcom.py sequence, by offset in a6xx.xml).
REGISTERS = ['CP_ALWAYS_ON_COUNTER', 'HLSQ_INVALIDATE_CMD', 'SP_CS_TEX_COUNT', 'SP_CS_IBO_COUNT', 'SP_MODE_CONTROL', 'SP_PERFCTR_ENABLE',
             'SP_TP_MODE_CNTL', 'TPL1_DBG_ECO_CNTL', 'HLSQ_CS_NDRANGE_0', 'HLSQ_CS_NDRANGE_1', 'HLSQ_CS_NDRANGE_2', 'HLSQ_CS_NDRANGE_3',
             'HLSQ_CS_NDRANGE_4', 'HLSQ_CS_NDRANGE_5', 'HLSQ_CS_NDRANGE_6', 'HLSQ_CS_CNTL_0', 'HLSQ_CS_CNTL_1', 'HLSQ_CS_KERNEL_GROUP_X',
             'HLSQ_CS_KERNEL_GROUP_Y', 'HLSQ_CS_KERNEL_GROUP_Z', 'HLSQ_CS_CNTL', 'SP_CS_CTRL_REG0', 'SP_CS_UNKNOWN_A9B1', 'SP_CS_BRANCH_COND', 'SP_CS_OBJ_FIRST_EXEC_OFFSET',
             'SP_CS_OBJ_START', 'SP_CS_PVT_MEM_PARAM', 'SP_CS_PVT_MEM_ADDR', 'SP_CS_PVT_MEM_SIZE', 'SP_CS_TEX_SAMP', 'SP_CS_TEX_CONST',
             'SP_CS_IBO', 'SP_CS_CONFIG', 'SP_CS_INSTRLEN', 'SP_CS_PVT_MEM_HW_STACK_OFFSET', 'HLSQ_CS_UNKNOWN_B9D0', 'HLSQ_SHARED_CONSTS', 'SP_CS_CNTL_0', 'SP_CS_CNTL_1']

# Enums of a6xx.xml the register fields take.
REG_ENUMS = {'a6xx_isam_mode': ['ISAMMODE_CL', 'ISAMMODE_GL'], 'a6xx_threadsize': ['THREAD64', 'THREAD128']}


def strip_ns(root):
    for e in root.iter():
        if '}' in e.tag:
            e.tag = e.tag.split('}', 1)[1]
    return root


def covers(variants):
    """Whether a `variants` attribute ("A6XX", "A5XX-", "A2XX-A6XX", "A6XX,A7XX") includes A6XX."""
    if not variants:
        return True
    for part in variants.split(','):
        m = re.fullmatch(r'\s*A(\d)XX(-)?(?:A(\d)XX)?\s*', part)
        if not m:
            sys.exit('gen_qcom_hw.py: cannot read variants="%s"' % variants)
        lo = int(m.group(1))
        hi = int(m.group(3)) if m.group(3) else (99 if m.group(2) else lo)
        if lo <= GENERATION <= hi:
            return True
    return False


def read_sources(tarball):
    out = {}
    with tarfile.open(tarball, 'r:xz') as t:
        for name in ('adreno_pm4.xml', 'a6xx.xml'):
            try:
                out[name] = strip_ns(ET.fromstring(t.extractfile(ADRENO + name).read()))
            except KeyError:
                sys.exit('gen_qcom_hw.py: %s lacks %s' % (tarball, ADRENO + name))
    return out


def enum_values(root, enum_name, wanted):
    values = {}
    for e in root.iter('enum'):
        if e.get('name') != enum_name:
            continue
        for v in e.iter('value'):
            if v.get('name') in wanted and covers(v.get('variants')):
                values[v.get('name')] = int(v.get('value'), 0)
    missing = [n for n in wanted if n not in values]
    if missing:
        sys.exit('gen_qcom_hw.py: %s lacks %s for A6XX' % (enum_name, ', '.join(missing)))
    return values


def fields_of(node, bitsets):
    """(name, low, high) of a register's bit fields: its bitset type's and its own, or its low/high range."""
    out = fields_of(bitsets[node.get('type')], bitsets) if node.get('type') in bitsets else []
    for f in node.findall('bitfield'):
        if not covers(f.get('variants')):
            continue
        if f.get('pos') is not None:
            lo = hi = int(f.get('pos'))
        else:
            lo, hi = int(f.get('low')), int(f.get('high'))
        out = [g for g in out if g[0] != f.get('name')] + [(f.get('name'), lo, hi)]
    if not out and node.get('low') is not None:
        out = [('VALUE', int(node.get('low')), int(node.get('high')))]
    return sorted(out, key=lambda f: f[1])


def registers(a6xx):
    bitsets = {b.get('name'): b for b in a6xx.iter('bitset')}
    domain = next(d for d in a6xx.iter('domain') if d.get('name') == 'A6XX')
    found = {}
    for r in domain:
        if r.tag not in ('reg32', 'reg64') or r.get('name') not in REGISTERS or not covers(r.get('variants')):
            continue
        found[r.get('name')] = (int(r.get('offset'), 0), 2 if r.tag == 'reg64' else 1, fields_of(r, bitsets))
    missing = [n for n in REGISTERS if n not in found]
    if missing:
        sys.exit('gen_qcom_hw.py: a6xx.xml lacks %s for A6XX' % ', '.join(missing))
    return sorted(found.items(), key=lambda kv: kv[1][0])


HEADER = '// Generated by scripts/gen_qcom_hw.py from Debian linux-source-6.12 (drivers/gpu/drm/msm/registers/adreno/%s).\n// Do not edit.%s\n'


def pm4_file(src):
    ops = enum_values(src['adreno_pm4.xml'], 'adreno_pm4_type3_packets', OPCODES)
    events = enum_values(src['adreno_pm4.xml'], 'vgt_event_type', EVENTS)
    out = [HEADER % ('adreno_pm4.xml', ' The CP packet opcodes (type 7) and CP_EVENT_WRITE event types of A6XX.'), '#pragma once', '#include <cstdint>', '',
           'namespace ugpu::hw::qcom::pm4 {', '']
    out.append('enum Opcode : uint8_t {')
    out += ['  %s = 0x%02x,' % (n, v) for n, v in sorted(ops.items(), key=lambda kv: kv[1])]
    out += ['};', '', 'enum Event : uint8_t {']
    out += ['  %s = %d,' % (n, v) for n, v in sorted(events.items(), key=lambda kv: kv[1])]
    out += ['};', '', 'struct OpcodeName {', '  uint8_t opcode;', '  const char* name;', '};', 'inline constexpr OpcodeName kOpcodes[] = {']
    out += ['    {%s, "%s"},' % (n, n) for n, _ in sorted(ops.items(), key=lambda kv: kv[1])]
    out += ['};', '', '}  // namespace ugpu::hw::qcom::pm4', '']
    return '\n'.join(out)


def enum_lines(root, enums):
    """C++ enums (uint32_t, named in CamelCase) of the wanted values of each XML enum."""
    out = []
    for enum, wanted in enums.items():
        values = enum_values(root, enum, wanted)
        out += ['', 'enum %s : uint32_t {' % ''.join(w.capitalize() for w in enum.split('_'))]
        out += ['  %s = %d,' % (n, v) for n, v in sorted(values.items(), key=lambda kv: kv[1])]
        out.append('};')
    return out


def packet_fields(pm4):
    bitsets = {b.get('name'): b for b in pm4.iter('bitset')}
    out = {}
    for d in pm4.iter('domain'):
        if d.get('name') not in PACKETS or not covers(d.get('variants')):
            continue
        first = [r for r in d if r.tag == 'reg32' and int(r.get('offset'), 0) == 0 and covers(r.get('variants'))]
        if first:
            out[d.get('name')] = fields_of(first[0], bitsets)
    missing = [n for n in PACKETS if not out.get(n)]
    if missing:
        sys.exit('gen_qcom_hw.py: adreno_pm4.xml lacks fields of %s for A6XX' % ', '.join(missing))
    return out


def packets_file(src):
    pm4 = src['adreno_pm4.xml']
    out = [HEADER % ('adreno_pm4.xml', ' The fields of the first payload dword of the packets the compute path\n// builds, and the values those fields take, as A6XX has them.'),
           '#pragma once', '#include <cstdint>', '', '#include "hw/qcom/registers.h"', '', 'namespace ugpu::hw::qcom::pm4 {', '']
    for name, fields in sorted(packet_fields(pm4).items()):
        out.append('namespace %s_0 {' % name)
        out += ['inline constexpr Field %s{"%s", %d, %d};' % ('B' + f if f[0].isdigit() else f, f, lo, hi) for f, lo, hi in fields]
        out.append('}  // namespace %s_0' % name)
    out += enum_lines(pm4, ENUMS)
    out += ['', '}  // namespace ugpu::hw::qcom::pm4', '']
    return '\n'.join(out)


def regs_file(src):
    regs = registers(src['a6xx.xml'])
    out = [HEADER % ('a6xx.xml', ' The A6XX registers of the compute path, with their bit fields; offsets in dwords.'), '#pragma once',
           '#include <cstdint>', '', '#include "hw/qcom/registers.h"', '', 'namespace ugpu::hw::qcom::a6xx {', '']
    for name, (offset, dwords, fields) in regs:
        out.append('inline constexpr Register %s{"%s", 0x%04x, %d};' % (name, name, offset, dwords))
        if fields:
            out.append('namespace %s_fields {' % name)
            out += ['inline constexpr Field %s{"%s", %d, %d};' % (f, f, lo, hi) for f, lo, hi in fields]
            out.append('}  // namespace %s_fields' % name)
    out += enum_lines(src['a6xx.xml'], REG_ENUMS)
    out += ['', '// Every register above, by offset: what a decoder names.', 'inline constexpr Register kRegisters[] = {']
    out += ['    %s,' % name for name, _ in regs]
    out += ['};', '', '}  // namespace ugpu::hw::qcom::a6xx', '']
    return '\n'.join(out)


def main():
    tarball_main('gen_qcom_hw.py', __doc__, read_sources,
                 lambda src: {'pm4_opcodes.h': pm4_file(src), 'pm4_packets.h': packets_file(src), 'a6xx_regs.h': regs_file(src)})

if __name__ == '__main__':
    main()
