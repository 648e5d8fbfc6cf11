#!/usr/bin/python3
"""PyTorch's answers for the training suite (tests/train): gradients and optimizer steps.

    torch_ref.py DIR

reads DIR/manifest.json, written by tests/train/torch_ref.h, and writes each answer as raw float64
files beside it, then DIR/done.json with an error text per job that failed ("" where it ran).
Arrays are raw little-endian float64 files, named in the manifest.

Jobs:
  {"kind": "grad", "name", "expr", "dtype", "inputs": [{"file", "shape", "index", "const"}], "weight"}
      y = eval(expr) over x[0], x[1], ... (index inputs are int64, const ones plain, the others
      require grad); loss = (y * weight).sum(); writes name.g<i>.bin for every input that requires grad.
  {"kind": "optim", "name", "optimizer", "options", "schedule", "params": [{"file", "shape"}],
   "grads": [[file per param] per step]}
      the optimizer (a torch.optim name, or LAMB) over the params, one step per grads entry, with
      PyTorch's scheduler for the schedule (StepLR, CosineAnnealingLR, LinearLR); writes
      name.p<i>.bin (the params after the steps).
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load(d, spec):
    return torch.from_numpy(np.fromfile(os.path.join(d, spec["file"]), dtype=np.float64).reshape(spec["shape"]).copy())


def save(d, name, t):
    t.detach().to(torch.float64).contiguous().numpy().tofile(os.path.join(d, name))


def sdpa(q, k, v, causal=False):
    """ugpu's scaled_dot_product_attention: query i sees keys up to i + (Tk - Tq) when causal."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        keep = torch.ones(tq, tk, dtype=torch.bool).tril(tk - tq)
        s = s.masked_fill(~keep, float("-inf"))
    return s.softmax(-1) @ v


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, start, base):
    """ugpu's rotary_embedding: half-split pairs (i, i + d/2) turned by position * base^(-2i/d)."""
    t, d = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2 / d)
    ang = (torch.arange(start, start + t, dtype=torch.float64)[:, None] * inv[None, :]).to(x.dtype)
    c, s = ang.cos(), ang.sin()
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * c - b * s, b * c + a * s], -1)


ENV = {"torch": torch, "F": F, "math": math, "sdpa": sdpa, "rms_norm": rms_norm, "rope": rope}


def grad_job(d, j):
    dt = getattr(torch, j["dtype"])
    xs = []
    for spec in j["inputs"]:
        a = load(d, spec)
        if spec["index"]:
            xs.append(a.long())
        else:
            xs.append(a.to(dt) if spec.get("const") else a.to(dt).requires_grad_())
    y = eval(j["expr"], ENV, {"x": xs})
    w = load(d, j["weight"]).to(y.dtype)
    (y * w).sum().backward()
    for i, (spec, a) in enumerate(zip(j["inputs"], xs)):
        if not spec["index"] and not spec.get("const"):
            save(d, "%s.g%d.bin" % (j["name"], i), a.grad if a.grad is not None else torch.zeros_like(a))


def scheduler(opt, sched):
    """PyTorch's own scheduler for ugpu's LR (tensor/optim.h), stepped after every optimizer step."""
    kind = sched["kind"]
    if kind == "constant":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    if kind == "step":
        return torch.optim.lr_scheduler.StepLR(opt, sched["step_size"], sched["gamma"])
    if kind == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, sched["total"], sched["min_lr"])
    if kind == "warmup":
        w = sched["warmup"]
        return torch.optim.lr_scheduler.LinearLR(opt, 1.0 / w, 1.0, max(1, w - 1))
    raise ValueError("unknown schedule " + kind)


def lamb_step(ps, gs, state, lr, b1, b2, eps, wd, t):
    """LAMB as in tinygrad and You et al. 2019: Adam's update scaled by ||p|| / ||update||."""
    for p, g in zip(ps, gs):
        m, v = state.setdefault(id(p), (torch.zeros_like(p), torch.zeros_like(p)))
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        up = (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + eps) + wd * p
        pn, un = p.norm(), up.norm()
        r = torch.where((pn > 0) & (un > 0), pn / un, torch.ones_like(pn))
        p.sub_(lr * r * up)


def optim_job(d, j):
    ps = [load(d, spec).requires_grad_() for spec in j["params"]]
    name, opts = j["optimizer"], dict(j["options"])
    if name == "LAMB":
        opt = torch.optim.SGD(ps, lr=j["schedule"]["lr"])  # drives the scheduler; LAMB's update is lamb_step
    else:
        opt = getattr(torch.optim, name)(ps, lr=j["schedule"]["lr"], **opts)
    sched = scheduler(opt, j["schedule"])
    state = {}
    for step, files in enumerate(j["grads"]):
        gs = [load(d, {"file": f, "shape": list(p.shape)}) for f, p in zip(files, ps)]
        if name == "LAMB":
            with torch.no_grad():
                lamb_step(ps, gs, state, opt.param_groups[0]["lr"], opts["b1"], opts["b2"], opts["eps"], opts["weight_decay"], step + 1)
        else:
            for g, p in zip(gs, ps):
                p.grad = g
            opt.step()
        sched.step()
    for i, p in enumerate(ps):
        save(d, "%s.p%d.bin" % (j["name"], i), p)


def main():
    d = sys.argv[1]
    torch.set_num_threads(1)
    with open(os.path.join(d, "manifest.json")) as f:
        jobs = json.load(f)
    done = {}
    for j in jobs:
        try:
            {"grad": grad_job, "optim": optim_job}[j["kind"]](d, j)
            done[j["name"]] = ""
        except Exception as e:  # reported per job by the C++ side
            done[j["name"]] = "%s: %s" % (type(e).__name__, e)
    with open(os.path.join(d, "done.json"), "w") as f:
        json.dump(done, f)


if __name__ == "__main__":
    main()
