#!/usr/bin/env python3
"""Writes the AMD hardware tables ugpu uses, read from Debian's linux-source-6.12 tarball:

  hw/amd/gfx11_regs.h     GC 11.0.0 and NBIO 4.3.0 register offsets (with their base-address segment)
                          and bit fields, for the registers the KFD path programs through PM4
                          (asic_reg/gc/gc_11_0_0_{offset,sh_mask}.h, asic_reg/nbio/nbio_4_3_0_offset.h)
  hw/amd/sdma6_packets.h  SDMA 6.0 packet layouts: every field of the packets we emit, as a table
                          (amdgpu/sdma_v6_0_0_pkt_open.h)
  hw/amd/am11_regs.h      the registers the AM driver (no kernel driver) programs on a gfx11 chip and the
                          emulated card models: GC 11.0.0, MP0/MP1 13.0.0, OSSSYS 6.0.0, MMHUB 3.0.0,
                          HDP 6.0.0, NBIO 4.3.0, with the bit fields it sets; and the dword index of every
                          field of the v11 compute MQD (include/v11_structs.h)

Only what ugpu uses is kept (the REGISTERS and SDMA_PACKETS lists below); add a name there and rerun.

    scripts/gen_amd_hw.py -o hw/amd                 (writes both files)
    scripts/gen_amd_hw.py --check hw/amd            (exit 1 if a file differs; exit 77 when the
                                                    tarball is missing: apt-get install linux-source-6.12)
"""
import re
import sys
import tarfile

from hw_tables import tarball_main

AMD = 'linux-source-6.12/drivers/gpu/drm/amd/'
FILES = {
    'gc_offset': AMD + 'include/asic_reg/gc/gc_11_0_0_offset.h',
    'gc_mask': AMD + 'include/asic_reg/gc/gc_11_0_0_sh_mask.h',
    'nbio_offset': AMD + 'include/asic_reg/nbio/nbio_4_3_0_offset.h',
    'sdma': AMD + 'amdgpu/sdma_v6_0_0_pkt_open.h',
    'mp_offset': AMD + 'include/asic_reg/mp/mp_13_0_0_offset.h',
    'mp_mask': AMD + 'include/asic_reg/mp/mp_13_0_0_sh_mask.h',
    'oss_offset': AMD + 'include/asic_reg/oss/osssys_6_0_0_offset.h',
    'oss_mask': AMD + 'include/asic_reg/oss/osssys_6_0_0_sh_mask.h',
    'mmhub_offset': AMD + 'include/asic_reg/mmhub/mmhub_3_0_0_offset.h',
    'mmhub_mask': AMD + 'include/asic_reg/mmhub/mmhub_3_0_0_sh_mask.h',
    'hdp_offset': AMD + 'include/asic_reg/hdp/hdp_6_0_0_offset.h',
    'nbio_mask': AMD + 'include/asic_reg/nbio/nbio_4_3_0_sh_mask.h',
    'v11_structs': AMD + 'include/v11_structs.h',
}

# AM registers (hw/amd/am11_regs.h): per IP, (source offset file, mask file, regex of register names).
AM_IPS = [
    ('GC', 'gc_offset', 'gc_mask',
     r'GCVM_CONTEXT0_(CNTL|PAGE_TABLE_\w+)|GCVM_INVALIDATE_ENG17_(SEM|REQ|ACK)|GCVM_L2_(CNTL\d?|PROTECTION_FAULT_\w+)'
     r'|GCMC_VM_(FB_LOCATION_BASE|FB_LOCATION_TOP|FB_OFFSET|AGP_BOT|AGP_TOP|AGP_BASE|SYSTEM_APERTURE_\w+|MX_L1_TLB_CNTL)'
     r'|CP_STAT|RLC_RLCS_BOOTLOAD_STATUS|GRBM_GFX_CNTL|GRBM_SOFT_RESET|CP_MEC_RS64_(CNTL|PRGRM_CNTR_START|PRGRM_CNTR_START_HI)'
     r'|CP_MEC_DOORBELL_RANGE_(LOWER|UPPER)|SH_MEM_CONFIG|SH_MEM_BASES|SCRATCH_REG[67]|SPI_COMPUTE_QUEUE_RESET'
     r'|CP_MQD_(BASE_ADDR|BASE_ADDR_HI|CONTROL)|CP_HQD_\w+|SDMA0_QUEUE0_(RB_\w+|IB_CNTL|DOORBELL|DOORBELL_OFFSET|MINOR_PTR_UPDATE)'
     r'|SDMA0_F32_CNTL|SDMA0_UTCL1_CNTL|SDMA0_UTCL1_PAGE|SDMA0_CNTL|SDMA0_WATCHDOG_CNTL|GRBM_CNTL|CP_ME1_PIPE0_INT_CNTL|RLC_CNTL|CP_PQ_STATUS'
     r'|GCVM_L2_CONTEXT1_IDENTITY_APERTURE_\w+|GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_\w+'),
    ('MP0', 'mp_offset', 'mp_mask', r'MP0_SMN_C2PMSG_(35|36|58|64|67|69|70|71|81)'),
    ('MP1', 'mp_offset', 'mp_mask', r'MP1_SMN_C2PMSG_(53|54|66|75|82|90)'),
    ('OSSSYS', 'oss_offset', 'oss_mask', r'IH_RB_(CNTL|BASE|BASE_HI|RPTR|WPTR|WPTR_ADDR_LO|WPTR_ADDR_HI)|IH_DOORBELL_RPTR'),
    ('MMHUB', 'mmhub_offset', 'mmhub_mask',
     r'MMVM_CONTEXT0_(CNTL|PAGE_TABLE_\w+)|MMVM_INVALIDATE_ENG17_(SEM|REQ|ACK)|MMVM_L2_(CNTL\d?|PROTECTION_FAULT_\w+)'
     r'|MMMC_VM_(FB_LOCATION_BASE|FB_LOCATION_TOP|FB_OFFSET|AGP_BOT|AGP_TOP|AGP_BASE|SYSTEM_APERTURE_\w+|MX_L1_TLB_CNTL)'
     r'|MMVM_L2_BANK_SELECT_RESERVED_CID2|MMVM_L2_CONTEXT1_IDENTITY_APERTURE_\w+|MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_\w+'),
    ('HDP', 'hdp_offset', None, r'HDP_MISC_CNTL|HDP_MMHUB_CNTL'),
    ('NBIO', 'nbio_offset', 'nbio_mask',
     r'BIF_BX_PF0_GPU_HDP_FLUSH_(REQ|DONE)|BIF_BX_PF0_RSMU_(INDEX|DATA)|RCC_DEV0_EPF0_RCC_(CONFIG_MEMSIZE|DOORBELL_APER_EN)'
     r'|S2A_DOORBELL_ENTRY_[0-3]_CTRL|BIF_BX_PF0_MM_(INDEX|DATA|INDEX_HI)|BIF_BX_PF0_HDP_MEM_COHERENCY_FLUSH_CNTL|BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL'),
]
# Registers whose bit fields the driver composes (the rest are whole values).
AM_FIELDS = ['GCVM_CONTEXT0_CNTL', 'GCVM_INVALIDATE_ENG17_REQ', 'GCVM_L2_PROTECTION_FAULT_STATUS', 'GRBM_GFX_CNTL',
             'CP_HQD_PQ_CONTROL', 'CP_HQD_PQ_DOORBELL_CONTROL', 'CP_HQD_EOP_CONTROL', 'CP_MEC_RS64_CNTL', 'RLC_RLCS_BOOTLOAD_STATUS',
             'SDMA0_QUEUE0_RB_CNTL', 'SDMA0_QUEUE0_DOORBELL', 'SDMA0_QUEUE0_IB_CNTL', 'SDMA0_F32_CNTL', 'IH_RB_CNTL',
             'GCMC_VM_MX_L1_TLB_CNTL', 'SH_MEM_CONFIG', 'CP_HQD_PERSISTENT_STATE', 'CP_HQD_IB_CONTROL', 'GRBM_SOFT_RESET',
             'CP_HQD_DEQUEUE_REQUEST', 'MMVM_INVALIDATE_ENG17_REQ', 'SDMA0_CNTL', 'S2A_DOORBELL_ENTRY_0_CTRL']

# (ip, register): the registers the driver writes or the emulator models. Fields come along.
REGISTERS = [('GC', r) for r in [
    'COMPUTE_DISPATCH_INITIATOR', 'COMPUTE_DIM_X', 'COMPUTE_DIM_Y', 'COMPUTE_DIM_Z', 'COMPUTE_START_X', 'COMPUTE_START_Y',
    'COMPUTE_START_Z', 'COMPUTE_NUM_THREAD_X', 'COMPUTE_NUM_THREAD_Y', 'COMPUTE_NUM_THREAD_Z', 'COMPUTE_PIPELINESTAT_ENABLE',
    'COMPUTE_PERFCOUNT_ENABLE', 'COMPUTE_PGM_LO', 'COMPUTE_PGM_HI', 'COMPUTE_DISPATCH_SCRATCH_BASE_LO',
    'COMPUTE_DISPATCH_SCRATCH_BASE_HI', 'COMPUTE_PGM_RSRC1', 'COMPUTE_PGM_RSRC2', 'COMPUTE_RESOURCE_LIMITS',
    'COMPUTE_TMPRING_SIZE', 'COMPUTE_RESTART_X', 'COMPUTE_RESTART_Y', 'COMPUTE_RESTART_Z', 'COMPUTE_PGM_RSRC3',
    'GRBM_GFX_INDEX'] + ['COMPUTE_USER_DATA_%d' % i for i in range(16)]] + [
    ('NBIO', 'BIF_BX_PF0_GPU_HDP_FLUSH_REQ'), ('NBIO', 'BIF_BX_PF0_GPU_HDP_FLUSH_DONE')]
FIELDS_OF = ['COMPUTE_DISPATCH_INITIATOR', 'COMPUTE_TMPRING_SIZE', 'COMPUTE_RESOURCE_LIMITS', 'GRBM_GFX_INDEX']

# (C++ name, header prefix): the SDMA packets ugpu emits and the emulator executes.
SDMA_PACKETS = [('CopyLinear', 'COPY_LINEAR'), ('Fence', 'FENCE'), ('Trap', 'TRAP'), ('PollRegmem', 'POLL_REGMEM'),
                ('TimestampGetGlobal', 'TIMESTAMP_GET_GLOBAL'), ('WriteUntiled', 'WRITE_UNTILED'), ('Indirect', 'INDIRECT'),
                ('Nop', 'NOP')]
# op / sub_op of each (sdma_v6_0_0_pkt_open.h SDMA_OP_* / SDMA_SUBOP_*).
SDMA_OPS = {'COPY_LINEAR': ('COPY', 'COPY_LINEAR'), 'FENCE': ('FENCE', None), 'TRAP': ('TRAP', None),
            'POLL_REGMEM': ('POLL_REGMEM', None), 'TIMESTAMP_GET_GLOBAL': ('TIMESTAMP', 'TIMESTAMP_GET_GLOBAL'),
            'WRITE_UNTILED': ('WRITE', 'WRITE_LINEAR'), 'INDIRECT': ('INDIRECT', None), 'NOP': ('NOP', None)}
# Variable-length packets: data dwords follow the fixed part (WRITE: count+1 of them; NOP: count).
SDMA_VARIABLE = {'WRITE_UNTILED', 'NOP'}


def read_sources(tarball):
    want = {v: k for k, v in FILES.items()}
    out = {}
    with tarfile.open(tarball, 'r:xz') as t:
        for m in t:
            if m.name in want:
                out[want[m.name]] = t.extractfile(m).read().decode()
                if len(out) == len(want):
                    break
    missing = [FILES[k] for k in FILES if k not in out]
    if missing:
        sys.exit('gen_amd_hw.py: %s lacks %s' % (tarball, ', '.join(missing)))
    return out


def defines(text):
    return {m.group(1): int(m.group(2).rstrip('L'), 0) for m in re.finditer(r'#define\s+(\w+)\s+(0x[0-9a-fA-F]+L?|\d+)\b', text)}


def field_lines(mask, registers):
    """`namespace REG_fields { inline constexpr Field NAME{shift, width}, ...; }` for each register."""
    lines = []
    for r in registers:
        fields = []
        for name, shift in mask.items():
            m = re.fullmatch(r + '__(\\w+)__SHIFT', name)
            if m:
                width = bin(mask[r + '__' + m.group(1) + '_MASK']).count('1')
                fields.append('%s{%d, %d}' % (m.group(1), shift, width))
        if not fields:
            sys.exit('gen_amd_hw.py: register %s has no fields' % r)
        lines += ['namespace %s_fields {' % r, 'inline constexpr Field ' + ', '.join(fields) + ';', '}']
    return lines


def gen_regs(src):
    gc, nbio, mask = defines(src['gc_offset']), defines(src['nbio_offset']), defines(src['gc_mask'])
    lines = ['// Generated by scripts/gen_amd_hw.py from Debian linux-source-6.12',
             '// (asic_reg/gc/gc_11_0_0_offset.h, gc_11_0_0_sh_mask.h, nbio/nbio_4_3_0_offset.h). Do not edit.',
             '// A register\'s dword address is the IP\'s base for `segment` (from IP discovery) plus `offset`.',
             '#pragma once', '#include <cstdint>', '', '#include "hw/amd/kernel_descriptor.h"', '#include "hw/amd/registers.h"', '',
             'namespace ugpu::hw::amd::gfx11 {', '']
    for ip, r in REGISTERS:
        table = gc if ip == 'GC' else nbio
        if 'reg' + r not in table:
            sys.exit('gen_amd_hw.py: register %s not found' % r)
        lines.append('inline constexpr Register %s{"%s", Ip::%s, %d, 0x%04x};' % (r, r, ip, table['reg' + r + '_BASE_IDX'], table['reg' + r]))
    lines += ['', 'inline constexpr Register kRegisters[] = {']
    lines += ['    %s,' % r for _, r in REGISTERS]
    lines += ['};', '']
    lines += field_lines(mask, FIELDS_OF)
    lines += ['', '}  // namespace ugpu::hw::amd::gfx11', '']
    return '\n'.join(lines)


def gen_am(src):
    lines = ['// Generated by scripts/gen_amd_hw.py from Debian linux-source-6.12 (asic_reg/gc/gc_11_0_0, mp/mp_13_0_0,',
             '// oss/osssys_6_0_0, mmhub/mmhub_3_0_0, hdp/hdp_6_0_0, nbio/nbio_4_3_0 offset and sh_mask headers; v11_structs.h).',
             '// Do not edit. The registers the AM driver programs on gfx11 chips and the emulated card models; a register\'s',
             '// dword address is its IP\'s base for `segment` (from IP discovery) plus `offset`.',
             '#pragma once', '#include <cstdint>', '', '#include "hw/amd/kernel_descriptor.h"', '#include "hw/amd/registers.h"', '',
             'namespace ugpu::hw::amd::am11 {', '']
    names = []
    masks = {}
    for ip, off_key, mask_key, pattern in AM_IPS:
        table = defines(src[off_key])
        if mask_key:
            masks.update(defines(src[mask_key]))
        found = sorted((v, n[3:]) for n, v in table.items()
                       if n.startswith('reg') and not n.endswith('_BASE_IDX') and re.fullmatch(pattern, n[3:]))
        if not found:
            sys.exit('gen_amd_hw.py: no %s register matches %s' % (ip, pattern))
        for v, r in found:
            lines.append('inline constexpr Register %s{"%s", Ip::%s, %d, 0x%04x};' % (r, r, ip, table['reg' + r + '_BASE_IDX'], v))
            names.append(r)
    lines += ['', 'inline constexpr Register kRegisters[] = {']
    lines += ['    %s,' % r for r in names]
    lines += ['};', '']
    lines += field_lines(masks, AM_FIELDS)
    # The compute MQD: the dword index of each field.
    mqd = re.search(r'struct v11_compute_mqd \{(.*?)\n\};', src['v11_structs'], re.S).group(1)
    lines += ['', '// struct v11_compute_mqd: dword index of each field (512 dwords in all).', 'namespace mqd {']
    count = 0
    for m in re.finditer(r'uint32_t (\w+); // offset: (\d+)', mqd):
        lines.append('inline constexpr uint32_t %s = %s;' % (m.group(1), m.group(2)))
        count = int(m.group(2)) + 1
    lines += ['inline constexpr uint32_t kDwords = %d;' % count, '}  // namespace mqd']
    lines += ['', '}  // namespace ugpu::hw::amd::am11', '']
    return '\n'.join(lines)


def gen_sdma(src):
    d = defines(src['sdma'])
    lines = ['// Generated by scripts/gen_amd_hw.py from Debian linux-source-6.12 (amdgpu/sdma_v6_0_0_pkt_open.h).',
             '// Do not edit. Each packet: its fields in dword order; a `_31_0` / `_63_32` pair is one 64-bit field',
             '// (a `_31_N` low part keeps N low bits zero: the address is N-bit aligned).',
             '#pragma once', '', '#include "hw/amd/packets.h"', '', 'namespace ugpu::hw::amd::sdma6 {', '']
    for cname, pk in SDMA_PACKETS:
        fields = {}
        for name, v in d.items():
            m = re.fullmatch('SDMA_PKT_%s_([A-Z0-9_]+?)_([a-z]\\w*)_offset' % pk, name)
            if not m or m.group(1).startswith('BC_') or m.group(1).startswith('SUBWIN'):
                continue
            if pk == 'COPY_LINEAR' and m.group(1) not in ('HEADER', 'COUNT', 'PARAMETER', 'SRC_ADDR_LO', 'SRC_ADDR_HI', 'DST_ADDR_LO', 'DST_ADDR_HI'):
                continue
            base = 'SDMA_PKT_%s_%s_%s' % (pk, m.group(1), m.group(2))
            fields[m.group(2)] = (v, d[base + '_shift'], bin(d[base + '_mask']).count('1'))
        out, done = [], set()
        for fname, (dw, shift, width) in sorted(fields.items(), key=lambda kv: (kv[1][0], kv[1][1])):
            if fname in done:
                continue
            lo = re.fullmatch(r'(\w+)_31_(\d+)', fname)
            if lo:
                hi = lo.group(1) + '_63_32'
                if hi not in fields or fields[hi][0] != dw + 1:
                    sys.exit('gen_amd_hw.py: %s.%s has no high half' % (pk, fname))
                out.append((lo.group(1), dw, 0, 64, int(lo.group(2))))
                done.add(hi)
            else:
                out.append((fname, dw, shift, width, 0))
            done.add(fname)
        op, sub = SDMA_OPS[pk]
        opcode, subop = d['SDMA_OP_' + op], d['SDMA_SUBOP_' + sub] if sub else 0
        ndw = max(f[1] + (2 if f[3] == 64 else 1) for f in out)
        if pk in SDMA_VARIABLE:
            out = [f for f in out if not f[0].startswith('data')]
            ndw = max(f[1] + (2 if f[3] == 64 else 1) for f in out)
        lines.append('struct %s {' % cname)
        lines.append('  enum F : uint8_t { %s };' % ', '.join(f[0] for f in out))
        lines.append('  static constexpr PacketField fields[] = {')
        for f in out:
            lines.append('      {"%s", %d, %d, %d, %d},' % f)
        lines.append('  };')
        lines.append('  static constexpr PacketFormat format{"%s", Engine::Sdma, %d, %d, %d, %s, fields};' % (
            pk, opcode, subop, ndw, 'true' if pk in SDMA_VARIABLE else 'false'))
        lines.append('};')
        lines.append('')
    lines.append('inline constexpr const PacketFormat* kFormats[] = {%s};' % ', '.join('&%s::format' % c for c, _ in SDMA_PACKETS))
    lines += ['', '}  // namespace ugpu::hw::amd::sdma6', '']
    return '\n'.join(lines)


def main():
    tarball_main('gen_amd_hw.py', __doc__, read_sources,
                 lambda src: {'gfx11_regs.h': gen_regs(src), 'sdma6_packets.h': gen_sdma(src), 'am11_regs.h': gen_am(src)})

if __name__ == '__main__':
    main()
