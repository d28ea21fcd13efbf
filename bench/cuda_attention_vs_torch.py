#!/usr/bin/env python3
"""Tessera's CUDA attention against PyTorch's scaled_dot_product_attention
with the flash backend (FlashAttention-2) and, where PyTorch exposes it,
cuDNN attention, side by side in one process on one stream.

    python3 bench/cuda_attention_vs_torch.py OUT.json [--quick]

Env: TESSERA_LIBRARY (libtessera.so of the build) and PYTHONPATH=python.
Prefill: head dims 64 and 128, (batch, seq) from (32, 512) to (1, 16384)
at hidden 2048 (heads = 2048 / head_dim), causal and not, BHSD f16.
Decode: seq_q 1 against long KV caches (GQA 32/8, head dim 128), reported as
% of the device-to-device copy bandwidth measured in the same run (the K/V
bytes read per call over time). Outputs are cross-checked against PyTorch
before timing. Times are CUDA events around a batch of calls (a CUDA graph
when capture works, so that Python overhead does not count for short
calls). Prints a ratio table and writes JSON."""

import json
import math
import sys

import torch
import torch.nn.functional as F

import tessera.torch as tt


def backends():
    """(name, context-manager factory) for every SDPA backend to compare."""
    out = []
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        out.append(("torch_flash", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)))
        if hasattr(SDPBackend, "CUDNN_ATTENTION"):
            out.append(("torch_cudnn", lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)))
    except ImportError:
        out.append(("torch_flash", lambda: torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                                           enable_mem_efficient=False)))
    return out


def time_fn(fn, min_ms=20.0):
    """Seconds per call: a CUDA graph of n calls when capturable, else n
    back-to-back calls; n grows until a batch takes min_ms."""
    fn()
    torch.cuda.synchronize()
    graph = None
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="relaxed"):
            fn()
    except Exception:
        graph = None
        torch.cuda.synchronize()
    run = graph.replay if graph is not None else fn
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 1
    while True:
        e0.record()
        for _ in range(n):
            run()
        e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1)
        if ms >= min_ms or n >= 4096:
            return ms * 1e-3 / n, graph is not None
        n = min(4096, max(2 * n, int(n * min_ms / max(ms, 1e-3)) + 1))


def copy_bandwidth():
    x = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    t, _ = time_fn(lambda: y.copy_(x))
    return 2 * x.numel() / t / 1e9


def check(name, got, want, rows):
    err = (got.float() - want.float()).abs().max().item()
    if not err <= 2e-2:
        rows.append({"name": name, "error": f"MISMATCH: max |diff| {err:g}"})
        return False
    return True


def main():
    out = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "attention_vs_torch.json"
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("SKIP attention_vs_torch: no CUDA device for PyTorch")
        json.dump({"skipped": "no CUDA device"}, open(out, "w"))
        return 0
    dev = torch.cuda.get_device_name()
    print(f"attention on {dev}: torch {torch.__version__}, BHSD f16")
    torch.manual_seed(0)
    rows, bad = [], 0
    bes = backends()
    prefill = [(32, 512), (16, 1024), (8, 2048), (4, 4096), (2, 8192), (1, 16384)]
    if quick:
        prefill = [(8, 512), (2, 2048), (1, 4096)]
    for d in (64, 128):
        h = 2048 // d
        for causal in (False, True):
            for b, s in prefill:
                q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
                flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
                label = f"attention/f16/BHSD/b{b}_h{h}_s{s}_d{d}{'_causal' if causal else ''}"
                with torch.no_grad():
                    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    ours = tt.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    if not check(label + "/tessera_cuda", ours, ref, rows):
                        bad += 1
                        continue
                    t, g = time_fn(lambda: tt.scaled_dot_product_attention(q, k, v, is_causal=causal))
                    row = {"name": label, "tessera_cuda": flops / t / 1e12, "graph": g}
                    for name, ctxf in bes:
                        try:
                            with ctxf():
                                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                tv, _ = time_fn(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                            row[name] = flops / tv / 1e12
                        except Exception as e:  # backend not available for this shape/GPU
                            row[name] = None
                            row[name + "_error"] = str(e).splitlines()[0][:120]
                rows.append(row)
                del q, k, v
    bw = copy_bandwidth()
    decode = [(1, 4096), (8, 4096), (1, 16384), (8, 16384), (1, 65536)]
    if quick:
        decode = [(1, 4096), (4, 16384)]
    for b, skv in decode:
        hq, hkv, d = 32, 8, 128
        q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.float16)
        k, v = (torch.randn(b, hkv, skv, d, device="cuda", dtype=torch.float16) for _ in range(2))
        label = f"attention/f16/BHSD/decode_b{b}_h{hq}/{hkv}_skv{skv}_d{d}"
        nbytes = 2.0 * b * hkv * skv * d * 2
        with torch.no_grad():
            kr, vr = k.repeat_interleave(hq // hkv, dim=1), v.repeat_interleave(hq // hkv, dim=1)
            ref = F.scaled_dot_product_attention(q, kr, vr)
            ours = tt.scaled_dot_product_attention(q, k, v)
            if not check(label + "/tessera_cuda", ours, ref, rows):
                bad += 1
                continue
            t, g = time_fn(lambda: tt.scaled_dot_product_attention(q, k, v))
            row = {"name": label, "tessera_cuda_gbps": nbytes / t / 1e9, "pct_copy": 100 * nbytes / t / 1e9 / bw,
                   "graph": g}
            try:
                with bes[0][1]():
                    tv, _ = time_fn(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                row["torch_flash_gbps"] = nbytes / tv / 1e9
            except Exception as e:
                row["torch_flash_gbps"] = None
                row["torch_flash_error"] = str(e).splitlines()[0][:120]
        rows.append(row)
    json.dump({"device": dev, "torch": torch.__version__, "copy_gbps": bw, "results": rows}, open(out, "w"), indent=1)

    print(f"\nsummary (cuda attention vs torch): TFLOP/s; d2d copy {bw:.0f} GB/s")
    names = [n for n, _ in bes]
    print(f"{'shape':58s} {'tessera':>8s} " + " ".join(f"{n:>11s} {'ratio':>6s}" for n in names))
    for r in rows:
        if "error" in r:
            print(f"{r['name']:58s} {r['error']}")
        elif "pct_copy" in r:
            tf = r.get("torch_flash_gbps")
            print(f"{r['name']:58s} {r['tessera_cuda_gbps']:7.0f}GB/s = {r['pct_copy']:.0f}% of copy"
                  + (f"; torch_flash {tf:.0f} GB/s" if tf else ""))
        else:
            cells = []
            for n in names:
                v = r.get(n)
                cells.append(f"{v:11.1f} {r['tessera_cuda'] / v:5.2f}x" if v else f"{'-':>11s} {'-':>6s}")
            print(f"{r['name']:58s} {r['tessera_cuda']:8.1f} " + " ".join(cells))
    ratios = [r["tessera_cuda"] / r["torch_flash"] for r in rows if r.get("torch_flash") and "tessera_cuda" in r]
    if ratios:
        print(f"geomean vs torch_flash: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x ({len(ratios)} shapes)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
