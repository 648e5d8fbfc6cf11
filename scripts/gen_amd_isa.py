#!/usr/bin/env python3
"""Writes hw/amd/isa_gfx11.h: opcode -> mnemonic tables for every RDNA3 (gfx11) instruction encoding.

The tables are not typed in: for each encoding we build one instruction word per opcode value from a fixed
register-only template, disassemble them all with LLVM's AMDGPU disassembler (llvm-mc) and keep the mnemonic.
Opcodes that LLVM decodes under none of the templates become nullptr.

    scripts/gen_amd_isa.py -o hw/amd/isa_gfx11.h
    scripts/gen_amd_isa.py --check hw/amd/isa_gfx11.h   (exit 1 if the file differs)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

V = 256       # a 9-bit source field names VGPR n as 256 + n (0..105 are SGPRs)
NULL = 0x7C   # SGPR-field code of the null register ("off" for FLAT saddr, no soffset for SMEM)
LIT = [0]     # a trailing 32-bit literal, for ops that always carry one (s_setreg_imm32_b32, v_fmamk_f32, ...)


# One function per encoding: opcode (+ operand fields) -> the instruction's dwords, dword0 = low 32 bits.
# Bit layouts were checked against `llvm-mc -show-encoding` on known instructions.
def sop2(op, d=4, s0=2, s1=6):       # [31:30]=10 op[29:23] sdst[22:16] ssrc1[15:8] ssrc0[7:0]
    return [2 << 30 | op << 23 | d << 16 | s1 << 8 | s0]


def sopk(op, d=4):                   # [31:28]=1011 op[27:23] sdst[22:16] simm16[15:0]
    return [0xB << 28 | op << 23 | d << 16]


def sop1(op, d=4, s0=2):             # [31:23]=0x17D sdst[22:16] op[15:8] ssrc0[7:0]
    return [0x17D << 23 | d << 16 | op << 8 | s0]


def sopc(op, s0=2, s1=6):            # [31:23]=0x17E op[22:16] ssrc1[15:8] ssrc0[7:0]
    return [0x17E << 23 | op << 16 | s1 << 8 | s0]


def sopp(op):                        # [31:23]=0x17F op[22:16] simm16[15:0]
    return [0x17F << 23 | op << 16]


def smem(op, sdata=16, sbase=2, soff=NULL):
    # [31:26]=111101 op[25:18] glc[14] dlc[13] sdata[12:6] sbase[5:0]; dword1: soffset[31:25] offset[20:0].
    # sbase counts SGPR pairs (2 = s[4:7], 4-aligned for the s_buffer_* descriptor); sdata=s16 is aligned
    # for s_load_b512's s[16:31].
    return [0x3D << 26 | op << 18 | sdata << 6 | sbase, soff << 25]


def vop2(op, d=0, s0=V + 1, s1=2):   # [31]=0 op[30:25] vdst[24:17] vsrc1[16:9] src0[8:0]
    return [op << 25 | d << 17 | s1 << 9 | s0]


def vop1(op, d=0, s0=V + 1):         # [31:25]=0111111 vdst[24:17] op[16:9] src0[8:0]
    return [0x3F << 25 | d << 17 | op << 9 | s0]


def vopc(op, s0=V + 1, s1=2):        # [31:25]=0111110 op[24:17] vsrc1[16:9] src0[8:0]
    return [0x3E << 25 | op << 17 | s1 << 9 | s0]


def vop3(op, d=0, s0=V + 1, s1=V + 2, s2=V + 3):
    # [31:26]=110101 op[25:16] clamp[15] opsel[14:11] abs[10:8] vdst[7:0]; dword1: neg[31:29] omod[28:27]
    # src2[26:18] src1[17:9] src0[8:0]. VOP3SD ops (v_add_co_u32, v_div_scale_f32, ...) read [14:8] as an
    # SGPR destination, here 0 = s0. op 0..0xFF are the VOPC ops, 0x100.. VOP2, 0x180.. VOP1 (as _e64).
    return [0x35 << 26 | op << 16 | d, s2 << 18 | s1 << 9 | s0]


def vop3p(op, d=0, s0=V + 1, s1=V + 2, s2=V + 3):
    # [31:24]=11001100 op[22:16] clamp[15] opsel_hi2[14] opsel[13:11] neg_hi[10:8] vdst[7:0];
    # dword1: neg[31:29] opsel_hi[28:27] src2[26:18] src1[17:9] src0[8:0]. op_sel_hi set: the default.
    return [0xCC << 24 | op << 16 | 1 << 14 | d, 3 << 27 | s2 << 18 | s1 << 9 | s0]


def vopd(opx, opy, s1x=2, s1y=7):
    # [31:26]=110010 opX[25:22] opY[21:17] vsrc1X[16:9] src0X[8:0]; dword1: vdstX[31:24] vdstY[23:17]
    # vsrc1Y[16:9] src0Y[8:0]. vdstY is stored halved: the real one is field << 1 | (vdstX & 1) ^ 1, so
    # vdstX=v0 (0) with field 1 gives vdstY=v3. Sources sit in different banks (reg & 3): X v1,v2; Y v4,v7.
    return [0x32 << 26 | opx << 22 | opy << 17 | s1x << 9 | V + 1, 1 << 17 | s1y << 9 | V + 4]


VOPD_MOV = 8  # opX and opY of v_dual_mov_b32 (checked below): the fixed partner while the other half varies


def ds(op, d=0, a=8, d0=12, d1=16, gds=0):
    # [31:26]=110110 op[25:18] gds[17] offset1[15:8] offset0[7:0]; dword1: vdst[31:24] data1[23:16]
    # data0[15:8] addr[7:0] (VGPR numbers, 8 bits). v0 / v[0:3], addr v8, data v12.., v16..: no overlap.
    # ds_gws_*, ds_ordered_count and ds_{add,sub}_gs_reg_rtn decode only with gds set.
    return [0x36 << 26 | op << 18 | gds << 17, d << 24 | d1 << 16 | d0 << 8 | a]


def flat(seg, op):
    # [31:26]=110111 op[24:18] seg[17:16] (0 flat, 1 scratch, 2 global) slc[15] glc[14] dlc[13]
    # offset[12:0]; dword1: vdst[31:24] sve[23] (scratch: vaddr used) saddr[22:16] data[15:8] addr[7:0].
    # vdst v0, addr v[8:9], data v12.., saddr off.
    return [0x37 << 26 | op << 18 | seg << 16, 0 << 24 | NULL << 16 | 12 << 8 | 8]


# (table, size, opcodes, templates). Template 0 is tried on every opcode, each later one only on those the
# earlier ones left undecoded; every round is one llvm-mc run over all encodings.
# SOP2's op field overlaps SOPK (0x60..0x7F) and SOPK's overlaps SOP1/SOPC/SOPP (0x1D..0x1F); VOP2's op
# 0x3E/0x3F are the VOPC/VOP1 prefixes. Those values are left out (nullptr), not decoded as another format.
# Templates past the first, each needed by the ops named: a trailing literal (s_setreg_imm32_b32,
# v_fma{mk,ak}_f{16,32}, v_dual_fma{mk,ak}_f32), zero in unused fields (v_illegal is the all-zero VOP2 word;
# v_dual_mov_b32; DS ops with fewer than 2 data / no address / no vdst), v_cmpx_*_e64's vdst = exec_lo
# (0x7E) with no src2, and gds set (ds_gws_*, ds_ordered_count, ds_{add,sub}_gs_reg_rtn).
ENCODINGS = [
    ("kSop2", 128, range(0x60), [sop2]),
    ("kSopk", 32, range(0x1D), [sopk, lambda o: sopk(o) + LIT]),
    ("kSop1", 256, range(256), [sop1]),
    ("kSopc", 128, range(128), [sopc]),
    ("kSopp", 128, range(128), [sopp]),
    ("kSmem", 256, range(256), [smem]),
    ("kVop1", 256, range(256), [vop1]),
    ("kVop2", 64, range(0x3E), [vop2, lambda o: vop2(o) + LIT, lambda o: vop2(o, 0, 0, 0)]),
    ("kVopc", 256, range(256), [vopc]),
    ("kVop3", 1024, range(1024), [vop3, lambda o: vop3(o, 0x7E, s2=0)]),
    ("kVop3p", 128, range(128), [vop3p]),
    ("kVopdX", 16, range(16), [lambda o: vopd(o, VOPD_MOV, s1y=0), lambda o: vopd(o, VOPD_MOV, s1y=0) + LIT,
                               lambda o: vopd(o, VOPD_MOV, 0, 0)]),
    ("kVopdY", 32, range(32), [lambda o: vopd(VOPD_MOV, o, 0), lambda o: vopd(VOPD_MOV, o, 0) + LIT,
                               lambda o: vopd(VOPD_MOV, o, 0, 0)]),
    ("kDs", 256, range(256), [ds, lambda o: ds(o, d1=0), lambda o: ds(o, d0=0, d1=0), lambda o: ds(o, 0, 0, 0, 0),
                              lambda o: ds(o, a=0, d1=0, gds=1), lambda o: ds(o, 0, 0, 0, 0, 1)]),
    ("kFlat", 128, range(128), [lambda o: flat(0, o)]),
    ("kScratch", 128, range(128), [lambda o: flat(1, o)]),
    ("kGlobal", 128, range(128), [lambda o: flat(2, o)]),
]


def find_llvm_mc(given):
    for cand in ([given] if given else ["/usr/lib/llvm-22/bin/llvm-mc", "llvm-mc-22", "llvm-mc"]):
        path = cand if os.path.isfile(cand) else shutil.which(cand)
        if path:
            return path
    sys.exit("gen_amd_isa.py: no llvm-mc found; pass --llvm-mc PATH")


def disassemble(mc, mcpu, insns):
    """Disassembles each instruction (a list of dwords) alone. Returns per instruction (text, clean) or None:
    clean is False where LLVM warned "potentially undefined instruction encoding" (some ignored field set)."""
    # "[...]" makes each line its own group: a rejected group is skipped whole (one warning naming its line)
    # instead of llvm-mc resyncing 4 bytes later inside a 64-bit instruction.
    groups = [[b for w in insn for b in w.to_bytes(4, "little")] for insn in insns]
    text = "".join("[" + ",".join("0x%02x" % b for b in g) + "]\n" for g in groups)
    run = subprocess.run([mc, "--disassemble", "-show-encoding", "-triple=amdgcn-amd-amdhsa", "-mcpu=" + mcpu],
                         input=text, capture_output=True, text=True)
    rejected, soft = set(), set()
    for line in run.stderr.splitlines():
        m = re.match(r"<stdin>:(\d+):\d+: (\w+): (.*)", line)
        if m and m.group(3) == "invalid instruction encoding":
            rejected.add(int(m.group(1)) - 1)
        elif m and m.group(3) == "potentially undefined instruction encoding":
            soft.add(int(m.group(1)) - 1)
        elif m:
            sys.exit("gen_amd_isa.py: unexpected llvm-mc diagnostic: " + line)
    if run.returncode not in (0, 1) or (run.returncode == 1) != bool(rejected | soft):
        sys.exit("gen_amd_isa.py: llvm-mc failed (%d):\n%s" % (run.returncode, run.stderr[-2000:]))
    # -show-encoding prints each instruction re-encoded from what was decoded: the same length as its
    # input, though fields LLVM ignores may come back changed.
    decoded = []
    for line in run.stdout.splitlines():
        if "; encoding: [" in line:
            asm, enc = line.rsplit("; encoding: [", 1)
            decoded.append((asm.strip(), enc.count(",") + 1))
    out, it = [], iter(decoded)
    for i, g in enumerate(groups):
        if i in rejected:
            out.append(None)
            continue
        asm, size = next(it, (None, 0))
        if size != len(g):  # each accepted group must print exactly one instruction spanning all its bytes
            sys.exit("gen_amd_isa.py: llvm-mc output out of step at input line %d: %s" % (i + 1, asm))
        out.append((asm, i not in soft))
    if next(it, None) is not None:
        sys.exit("gen_amd_isa.py: llvm-mc printed more instructions than it was given")
    return out


def mnemonic(asm, half=0):
    name = asm.split("::")[half].split()[0]   # VOPD prints "X ... :: Y ..."
    for suffix in ("_e32", "_e64", "_dpp", "_sdwa"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    return name


def build_tables(mc, mcpu):
    tables = {name: [None] * size for name, size, _, _ in ENCODINGS}
    pending = {name: list(ops) for name, _, ops, _ in ENCODINGS}
    fallback = {}  # (name, op) -> mnemonic decoded only with a "potentially undefined" warning
    for t in range(max(len(e[3]) for e in ENCODINGS)):
        work = [(name, op, temps[t](op)) for name, _, _, temps in ENCODINGS if t < len(temps) for op in pending[name]]
        for (name, op, _), res in zip(work, disassemble(mc, mcpu, [w[2] for w in work])):
            if res is None:
                continue
            name_op = mnemonic(res[0], 1 if name == "kVopdY" else 0)
            if res[1]:
                tables[name][op] = name_op
                pending[name].remove(op)
            else:
                fallback.setdefault((name, op), name_op)
    for (name, op), name_op in fallback.items():
        if tables[name][op] is None:
            tables[name][op] = name_op
            print("gen_amd_isa.py: %s[0x%x] = %s only as a potentially undefined encoding" % (name, op, name_op),
                  file=sys.stderr)
    assert tables["kVopdX"][VOPD_MOV] == tables["kVopdY"][VOPD_MOV] == "v_dual_mov_b32", "VOPD mov opcode"
    return tables


def row(index, width, entries):
    return "    /*0x%0*x*/ " % (width, index) + " ".join("nullptr," if e is None else '"%s",' % e for e in entries)


def format_table(name, entries):
    lines, i, width = [], 0, len("%x" % (len(entries) - 1))
    while i < len(entries):  # rows of 4 from a multiple of 4; runs of nullptr go 8 to a row
        n = 4
        while n < 8 and i + n + 4 <= len(entries) and not any(entries[i:i + n + 4]):
            n += 4
        chunk = entries[i:i + n]
        if len(row(i, width, chunk)) > 110:
            lines += [row(i, width, chunk[:2]), row(i + 2, width, chunk[2:])]
        else:
            lines.append(row(i, width, chunk))
        i += n
    return "inline constexpr const char* %s[%d] = {\n%s\n};\n" % (name, len(entries), "\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", metavar="FILE", help="write here instead of stdout")
    ap.add_argument("--check", metavar="FILE", help="exit 1 if FILE differs from what would be written")
    ap.add_argument("--llvm-mc", metavar="PATH", help="llvm-mc to use (default: LLVM 22's)")
    ap.add_argument("--mcpu", default="gfx1100")
    args = ap.parse_args()
    mc = find_llvm_mc(args.llvm_mc)
    banner = subprocess.run([mc, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^\s*(.*?)\s*LLVM version (\d+)\.(\S+)", banner, re.M)
    if not m:
        sys.exit("gen_amd_isa.py: cannot read the LLVM version from `%s --version`" % mc)
    vendor, major, rest = m.groups()
    source = "llvm-mc, %s llvm-%s" % (vendor, major) if vendor else "llvm-mc"
    tables = build_tables(mc, args.mcpu)
    out = ["// Generated by scripts/gen_amd_isa.py from LLVM %s.%s's AMDGPU disassembler (%s), %s. Do not edit.\n"
           % (major, rest, source, args.mcpu),
           "// Opcode -> mnemonic for each RDNA3 instruction encoding; nullptr where LLVM decodes no instruction.\n",
           "#pragma once\n\nnamespace ugpu::hw::amd::gfx11 {\n"]
    for name, _, _, _ in ENCODINGS:
        out.append("\n" + format_table(name, tables[name]))
    out.append("\n}  // namespace ugpu::hw::amd::gfx11\n")
    text = "".join(out)
    if args.check:
        with open(args.check) as f:
            if f.read() != text:
                sys.exit(args.check + " differs from what scripts/gen_amd_isa.py writes; regenerate it")
    elif args.o:
        with open(args.o, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
