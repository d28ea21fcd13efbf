#!/usr/bin/python3
"""Tessera's fused CPU attention against PyTorch's CPU attention, same
shapes as `tessera-bench --op attention` (head dim 64 and 128, seq 512..4096,
causal and not, f32 and bf16; decode: Llama-3.1-8B GQA 32/8, d 128, seq_kv
4096..32768), same process, same thread count.

Debian's torch 1.13 has no public scaled_dot_product_attention, so PyTorch
is timed as frameworks composed attention before it:
  torch_unfused  q @ k^T * scale, causal -inf mask, softmax, @ v (GQA: K and
                 V repeated per query head, as Llama's reference code does)
  torch_sdpa     torch.nn.functional._scaled_dot_product_attention, 1.13's
                 private kernel behind nn.MultiheadAttention's fast path
                 (prefill without GQA only; it takes no kv-head groups)
multi_head_attention_forward is not timed: it adds the four projection
GEMMs, so it is a different op.

Tessera is called through python/tessera (ctypes) on NumPy views of the same
tensors (bf16 as uint16 bits), so its figures include the binding's checks.
Rates are GFLOP/s (4 b h s_q s_kv d, halved by causal masking) over wall
time, and over the calling thread's CPU time, which a 1-thread run on a
shared machine should be compared by (time the machine took from us is not
counted). Best of --reps.

Run with Debian's interpreter (the first python3 on PATH may be another):
  TESSERA_LIBRARY=build /usr/bin/python3 bench/torch_attention.py --threads 1 \
      --json bench/results/.../torch_attention_1t.json
"""

import argparse
import json
import math
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tessera  # noqa: E402


def grid(quick):
    """(name, b, hq, hkv, sq, skv, d, causal) of the attention grid."""
    out = []
    for d in (64, 128):
        for s in (512, 1024, 2048, 4096)[: 2 if quick else 4]:
            h = 2 if s >= 2048 else 4
            for causal in (False, True):
                out.append(("prefill_causal" if causal else "prefill", 1, h, h, s, s, d, causal))
    for skv in (4096, 8192, 16384, 32768)[: 2 if quick else 4]:
        out.append(("decode_gqa", 1, 32, 8, 1, skv, 128, False))
    return out


def flops(b, hq, sq, skv, d, causal):
    if not causal:
        return 4.0 * b * hq * sq * skv * d
    pairs = sum(min(max(i + 1, 0), skv) for i in range(sq))  # top-left, as tessera-bench
    return 4.0 * b * hq * pairs * d


def timed(fn, reps, min_time):
    """Best (wall, thread CPU) seconds of one call over reps rounds."""
    fn()  # warm-up: first-touch pages, primitive creation
    best_wall = best_cpu = math.inf
    for _ in range(reps):
        n, w0, c0 = 0, time.perf_counter(), time.thread_time()
        while True:
            fn()
            n += 1
            w, c = time.perf_counter() - w0, time.thread_time() - c0
            if w >= min_time:
                break
        best_wall, best_cpu = min(best_wall, w / n), min(best_cpu, c / n)
    return best_wall, best_cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per round")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    ctx = tessera.Context(threads=a.threads)
    info = {"machine": platform.processor() or platform.machine(), "torch": torch.__version__,
            "tessera": tessera.version(), "threads": a.threads, "date": time.strftime("%Y-%m-%d %H:%M"),
            "cpu_time_note": "1 thread: the calling thread's CPU time covers all the work"}
    print(f"torch_attention: torch {torch.__version__}, tessera {tessera.version()}, {a.threads} threads",
          flush=True)
    rows, results = [], []
    gen = torch.Generator().manual_seed(0)
    for dt in a.dtypes.split(","):
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[dt]
        for name, b, hq, hkv, sq, skv, d, causal in grid(a.quick):
            q = (torch.rand(b, hq, sq, d, generator=gen) - 0.5).to(tdt)
            k = (torch.rand(b, hkv, skv, d, generator=gen) - 0.5).to(tdt)
            v = (torch.rand(b, hkv, skv, d, generator=gen) - 0.5).to(tdt)
            scale = 1.0 / math.sqrt(d)
            mask = torch.ones(sq, skv, dtype=torch.bool).triu(1) if causal else None

            def as_np(t):
                return t.view(torch.int16).numpy().view(np.uint16) if dt == "bf16" else t.numpy()

            qn, kn, vn = as_np(q), as_np(k), as_np(v)
            impls = {"tessera": lambda: tessera.attention(qn, kn, vn, causal="top_left" if causal else None,
                                                          dtype="bf16" if dt == "bf16" else None, ctx=ctx)}

            def unfused():
                kk, vv = k, v
                if hkv != hq:
                    kk, vv = k.repeat_interleave(hq // hkv, dim=1), v.repeat_interleave(hq // hkv, dim=1)
                s = torch.matmul(q, kk.transpose(-2, -1)) * scale
                if mask is not None:
                    s = s.masked_fill(mask, float("-inf"))
                return torch.matmul(torch.softmax(s, dim=-1), vv)

            impls["torch_unfused"] = unfused
            if hkv == hq:
                impls["torch_sdpa"] = lambda: F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)
            fl = flops(b, hq, sq, skv, d, causal)
            shape = f"b{b}_h{hq}-{hkv}_sq{sq}_skv{skv}_d{d}"
            got = {}
            with torch.inference_mode():
                for impl, fn in impls.items():
                    try:
                        wall, cpu = timed(fn, a.reps, a.min_time)
                    except Exception as e:  # noqa: BLE001 - a missing torch kernel is reported, not fatal
                        print(f"  {dt}/{name}/{shape}/{impl}: {type(e).__name__}: {e}", flush=True)
                        continue
                    got[impl] = (fl / wall * 1e-9, fl / cpu * 1e-9)
                    results.append({"name": f"attention/{dt}/{name}/{shape}/{impl}", "wall_s": wall, "cpu_s": cpu,
                                    "gflops_wall": fl / wall * 1e-9, "gflops_cpu": fl / cpu * 1e-9})
                    print(f"  attention/{dt}/{name}/{shape}/{impl}: {wall * 1e3:.2f} ms, "
                          f"{fl / wall * 1e-9:.1f} GFLOP/s wall, {fl / cpu * 1e-9:.1f} over CPU time", flush=True)
            rows.append((f"{dt}/{name}/{shape}", got))

    col = 1 if a.threads == 1 else 0
    print(f"\nsummary (attention vs PyTorch {torch.__version__}, {a.threads} threads): GFLOP/s over "
          f"{'thread CPU time' if col else 'wall time'}; ratio = tessera / torch")
    print(f"{'case':48s} {'tessera':>8s} {'unfused':>8s} {'ratio':>7s} {'sdpa':>8s} {'ratio':>7s}")
    for case, got in rows:
        t = got.get("tessera", (0, 0))[col]
        line = f"{case:48s} {t:8.1f}"
        for impl in ("torch_unfused", "torch_sdpa"):
            o = got.get(impl, (0, 0))[col]
            line += f" {o:8.1f} {t / o:6.2f}x" if o > 0 and t > 0 else f" {'-':>8s} {'-':>7s}"
        print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"context": info, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
