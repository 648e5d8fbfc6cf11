#!/usr/bin/env python3
# The PyTorch side of bench-tensor: the transformer block of tensor/examples.cpp (llama-style:
# rms_norm, q/k/v with rotary embedding, causal grouped-query attention, SwiGLU), written with
# PyTorch's own ops, on the weights and input bench-tensor wrote as raw float32 files.
#   torch_block.py DIR DIM HEADS KV_HEADS HIDDEN BATCH TOKENS THREADS REPS
# Prints "torch_ms: <best of REPS>" and writes DIR/torch_out.bin.
import os
import sys
import time

import torch

d, dim, heads, kv_heads, hidden, batch, tokens, threads, reps = sys.argv[1], *map(int, sys.argv[2:])
torch.set_num_threads(threads)
hd = dim // heads


def load(name, *shape):
    with open(f"{d}/{name}.bin", "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.float32).reshape(*shape)


x = load("x", batch, tokens, dim)
attn_norm, ffn_norm = load("attn_norm", dim), load("ffn_norm", dim)
wq, wk, wv, wo = load("wq", dim, dim), load("wk", kv_heads * hd, dim), load("wv", kv_heads * hd, dim), load("wo", dim, dim)
w1, w2, w3 = load("w1", hidden, dim), load("w2", dim, hidden), load("w3", hidden, dim)
eps, base = 1e-5, 10000.0


def rms_norm(v, w):
    return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(v):  # [B, H, T, hd], half-split
    half = hd // 2
    freqs = base ** (-2.0 * torch.arange(half, dtype=torch.float32) / hd)
    ang = torch.arange(tokens, dtype=torch.float32)[:, None] * freqs[None, :]
    c, s = ang.cos(), ang.sin()
    v1, v2 = v[..., :half], v[..., half:]
    return torch.cat([v1 * c - v2 * s, v2 * c + v1 * s], -1)


mask = torch.full((tokens, tokens), float("-inf")).triu(1)


def block(x):
    xn = rms_norm(x, attn_norm)
    q = rope((xn @ wq.T).view(batch, tokens, heads, hd).transpose(1, 2))
    k = rope((xn @ wk.T).view(batch, tokens, kv_heads, hd).transpose(1, 2))
    v = (xn @ wv.T).view(batch, tokens, kv_heads, hd).transpose(1, 2)
    k = k.repeat_interleave(heads // kv_heads, dim=1)
    v = v.repeat_interleave(heads // kv_heads, dim=1)
    scores = (q @ k.transpose(-1, -2)) / hd**0.5 + mask
    a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, tokens, dim)
    h = x + a @ wo.T
    hn = rms_norm(h, ffn_norm)
    return h + (torch.nn.functional.silu(hn @ w1.T) * (hn @ w3.T)) @ w2.T


with torch.no_grad():
    out = block(x)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        out = block(x)
        best = min(best, time.perf_counter() - t0)
with open(f"{d}/torch_out.bin", "wb") as f:
    f.write(out.contiguous().numpy().tobytes())
print(f"torch_ms: {best * 1000:.3f}")
# Debian's torch calls the system BLAS (libblas.so.3), which the alternatives system points at one implementation.
blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
print(f"torch_blas: {blas}")
