#!/usr/bin/env python3
"""Writes bench/corpus/index_exprs.txt: index expressions of the kind matmul, conv and reshape
indexing produce, in ugpu's text form, separated by '---' lines. Deterministic (fixed seed), so the
corpus only changes when this script does. Usage: scripts/gen_index_corpus.py > bench/corpus/index_exprs.txt"""
import random

rng = random.Random(20261121)
out = []


def ranges(sizes, kinds=None):
    lines = []
    for i, s in enumerate(sizes):
        kind = (kinds or {}).get(i, "LOOP")
        lines.append(f"r{i} = RANGE({s}) {{{i}, {kind}}}")
    return lines


def matmul():
    m, n, k = (rng.choice([16, 32, 64, 128, 96, 100]) for _ in range(3))
    lt, up = rng.choice([4, 8, 16]), rng.choice([1, 2, 4])
    lines = [f'g0 = SPECIAL({max(1, n // (lt * up))}) {{"gidx0"}}', f'g1 = SPECIAL({max(1, m // (lt * up))}) {{"gidx1"}}',
             f'l0 = SPECIAL({lt}) {{"lidx0"}}', f'l1 = SPECIAL({lt}) {{"lidx1"}}']
    lines += ranges([k, up, up], {0: "REDUCE", 1: "UPCAST", 2: "UPCAST"})
    row = f"((g1 * {lt} + l1) * {up} + r1)"
    col = f"((g0 * {lt} + l0) * {up} + r2)"
    which = rng.randrange(3)
    if which == 0:
        lines.append(f"{row} * {k} + r0")
    elif which == 1:
        lines.append(f"r0 * {n} + {col}")
    else:
        lines.append(f"WHERE({col} < {n}, {row} * {n} + {col}, INVALID)")
    return lines


def conv():
    c, h, w = rng.choice([3, 8, 16]), rng.choice([8, 14, 28, 32]), rng.choice([8, 14, 28, 32])
    kh = rng.choice([1, 3, 5])
    stride, pad = rng.choice([1, 2]), kh // 2
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kh) // stride + 1
    lines = [f'n = DEFINE_VAR {{"n", 0, 3}}'] + ranges([c, oh, ow, kh, kh], {0: "REDUCE", 3: "REDUCE", 4: "REDUCE"})
    iy, ix = f"(r1 * {stride} + r3 - {pad})", f"(r2 * {stride} + r4 - {pad})"
    idx = f"((n * {c} + r0) * {h} + {iy}) * {w} + {ix}"
    if pad and rng.random() < 0.8:
        lines.append(f"WHERE((-1 < {iy}) & ({iy} < {h}) & (-1 < {ix}) & ({ix} < {w}), {idx}, INVALID)")
    else:
        lines.append(idx)
    return lines


def reshape():
    dims = [rng.choice([2, 3, 4, 6, 8, 12, 16]) for _ in range(rng.randint(2, 4))]
    lines = ranges(dims)
    flat, stride = [], 1
    for i in reversed(range(len(dims))):
        flat.append(f"r{i}" if stride == 1 else f"r{i} * {stride}")
        stride *= dims[i]
    flat_s = " + ".join(reversed(flat))
    total = stride
    divs = [d for d in range(2, total) if total % d == 0] or [1]
    d = rng.choice(divs)
    form = rng.randrange(4)
    if form == 0:
        lines.append(f"({flat_s}) // {d}")
    elif form == 1:
        lines.append(f"({flat_s}) % {d}")
    elif form == 2:
        inner = rng.choice([x for x in divs if total % x == 0] or [1])
        lines.append(f"(({flat_s}) // {inner}) % {max(1, total // inner)}")
    else:
        lines.append(f"(({flat_s}) % {d}) * {total // d} + ({flat_s}) // {d}")
    return lines


for i in range(300):
    out.append("\n".join([matmul, conv, reshape][i % 3]()))
print("\n---\n".join(out))
