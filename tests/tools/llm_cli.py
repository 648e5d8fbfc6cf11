#!/usr/bin/env python3
"""`ugpu llm` end to end: a generated model streams text on cpu and emu:amd with the figures at the
end (greedy output identical on both), and each kind of bad file is one line on stderr and exit
code 2. Usage: llm_cli.py UGPU"""
import os
import struct
import subprocess
import sys
import tempfile

ugpu = sys.argv[1]
failures = []


def run(*args, want_status=0):
    p = subprocess.run([ugpu, "llm", *args], capture_output=True, timeout=240)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if p.returncode != want_status:
        failures.append(f"ugpu llm {' '.join(args)}: exit {p.returncode}, wanted {want_status}\n{err}")
    return out, err


def expect_bad(path, text, *extra):
    out, err = run(path, "--prompt", "hi", "-n", "2", "--device", "cpu", *extra, want_status=2)
    lines = [l for l in err.strip().splitlines() if l.startswith("ugpu llm:") and "on cpu" not in l]
    if not any(text in l for l in lines):
        failures.append(f"{path}: stderr does not say '{text}':\n{err}")


with tempfile.TemporaryDirectory() as d:
    model = os.path.join(d, "m.gguf")
    run("--make-test-model", model, "--arch", "llama", "--weights", "q8_0", "--dim", "256", "--layers", "2", "--vocab", "512")
    texts = {}
    for dev in ["cpu", "emu:amd"]:
        out, err = run(model, "--prompt", "Once upon a time", "-n", "12", "--device", dev)
        if not out.startswith("Once upon a time") or len(out) <= len("Once upon a time"):
            failures.append(f"{dev}: no continuation streamed: {out!r}")
        if "tokens/s" not in err or "first token after" not in err or "peak device memory" not in err:
            failures.append(f"{dev}: the figures are missing:\n{err}")
        texts[dev] = out
    if texts["cpu"] != texts["emu:amd"]:
        failures.append(f"greedy text differs between devices: {texts}")
#Sampling : the same seed gives the same text; top - k / top - p run too.
    a, _ = run(model, "--prompt", "The", "-n", "8", "--device", "cpu", "--temperature", "0.8", "--seed", "7")
    b, _ = run(model, "--prompt", "The", "-n", "8", "--device", "cpu", "--temperature", "0.8", "--seed", "7")
    if a != b:
        failures.append(f"the same seed gave different text: {a!r} {b!r}")
    run(model, "--prompt", "The", "-n", "4", "--device", "cpu", "--temperature", "1", "--top-k", "5", "--top-p", "0.9")
    out, _ = run("--info", model)
    if "architecture: llama" not in out or "Q8_0" not in out:
        failures.append(f"--info does not show the architecture and types:\n{out}")

    # --chat: two turns from stdin in a ChatML model; the second prefills only its own tokens (the
    # first turn stays in the KV cache), then end of input ends the loop.
    chat_model = os.path.join(d, "chat.gguf")
    run("--make-test-model", chat_model, "--arch", "qwen2", "--weights", "q8_0", "--vocab", "512")
    p = subprocess.run([ugpu, "llm", chat_model, "--chat", "--device", "cpu", "-n", "6", "--system", "Be brief."],
                       input=b"Hello there\nAnd then?\n", capture_output=True, timeout=240)
    err = p.stderr.decode(errors="replace")
    turns = [int(l.split()[1]) for l in err.splitlines() if l.startswith("prompt:")]
    if p.returncode != 0 or len(turns) != 2:
        failures.append(f"--chat: exit {p.returncode}, {len(turns)} turns:\n{err}")
    elif not turns[1] < turns[0]:
        failures.append(f"--chat: the second turn prefilled {turns[1]} tokens, the first {turns[0]}: the cache was not reused")

    data = open(model, "rb").read()

    def variant(name, old, new):
        assert len(old) == len(new) and old in data, (name, old)
        p = os.path.join(d, name)
        open(p, "wb").write(data.replace(old, new, 1))
        return p

    notgguf = os.path.join(d, "notgguf.gguf")
    open(notgguf, "wb").write(b"PK\x03\x04 this is a zip file, not a model" * 4)
    expect_bad(notgguf, "GGUF")
    truncated = os.path.join(d, "truncated.gguf")
    open(truncated, "wb").write(data[: len(data) // 2])
    expect_bad(truncated, "past the end")
    expect_bad(variant("arch.gguf", b"\x05\x00\x00\x00\x00\x00\x00\x00llama", b"\x05\x00\x00\x00\x00\x00\x00\x00lxama"), "architecture 'lxama' is not supported")
    expect_bad(variant("missing.gguf", b"blk.1.ffn_down.weight", b"blk.1.ffn_down.wexght"), "tensor 'blk.1.ffn_down.weight' is missing")
#A tensor type ugpu does not decode(Q2_K = 10) in place of output_norm's F32 (0): found by its info record.
    name = b"output_norm.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    ndims = struct.unpack_from("<I", data, at)[0]
    type_at = at + 4 + 8 * ndims
    bad = bytearray(data)
    struct.pack_into("<I", bad, type_at, 10)
    qtype = os.path.join(d, "qtype.gguf")
    open(qtype, "wb").write(bytes(bad))
    expect_bad(qtype, "Q2_K")
    # A KV cache larger than any machine it runs on: 2 layers x 2^24 positions x 2 heads x 512 x 2 x 4 bytes = 256 GiB.
    huge = os.path.join(d, "huge.gguf")
    run("--make-test-model", huge, "--dim", "1024", "--heads", "2", "--kv-heads", "2", "--ffn", "256", "--vocab", "512", "--weights", "q4_0")
    expect_bad(huge, "of device memory", "--context", str(1 << 24))

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("ugpu llm: generation on cpu and emu:amd, sampling, --info, --chat, and 6 kinds of bad file: all as expected")
