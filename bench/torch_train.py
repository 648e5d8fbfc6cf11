#!/usr/bin/env python3
# The PyTorch side of bench-train: one training step (forward, cross-entropy, backward, Adam) of the
# same models as bench_train.cpp, on random data of the same shapes.
#   torch_train.py MODEL BATCH THREADS REPS      (MODEL: mlp | cnn)
# Prints "torch_ms: <best of REPS>" and "torch_loss_first: ..." / "torch_loss_last: ...".
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

model_name, batch, threads, reps = sys.argv[1], *map(int, sys.argv[2:])
torch.set_num_threads(threads)
torch.manual_seed(0)
if model_name == "mlp":
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x = torch.randn(batch, 784)
else:
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    x = torch.randn(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


first = step()
step()
best = 1e300
for _ in range(reps):
    t0 = time.perf_counter()
    last = step()
    best = min(best, (time.perf_counter() - t0) * 1000)
print("torch_ms: %.3f" % best)
print("torch_loss_first: %.4f" % first)
print("torch_loss_last: %.4f" % last)
